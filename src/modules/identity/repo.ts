import type { Queryable } from '../../platform/db.ts';
import { selectPage } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['tenants', 'users', 'api_keys', 'wallets', 'wallet_transactions', 'session_revocations'] as const;

export interface TenantRow {
  id: string;
  name: string;
  slug: string;
  status: string;
  country: string | null;
  currency: string;
  timezone: string | null;
}

export interface UserRow {
  tenant_id: string;
  id: string;
  email: string;
  name: string | null;
  role: string;
  password_hash: string;
  created_at: Date;
  session_version: number;
}

export interface ApiKeyRow {
  id: string;
  tenant_id: string | null;
  name: string;
  key_prefix: string;
  expires_at: Date | null;
  revoked_at: Date | null;
  webhook_url: string | null;
  agent_id: string | null;
  last_used_at: Date | null;
  created_at: Date;
}

export interface WalletRow {
  id: string;
  balance: string;
  currency: string;
  low_balance_threshold: string;
}

const TENANT_COLUMNS = 'id, name, slug, status, country, currency, timezone';
const USER_COLUMNS = 'tenant_id, id, email, name, role, password_hash, created_at, session_version';
const KEY_COLUMNS = 'id, tenant_id, name, key_prefix, expires_at, revoked_at, webhook_url, agent_id, last_used_at, created_at';
const WALLET_COLUMNS = 'id, balance::text AS balance, currency, low_balance_threshold::text AS low_balance_threshold';

export async function insertTenant(
  db: Queryable,
  t: { id: string; name: string; slug: string; country: string | null; currency: string },
): Promise<TenantRow | undefined> {
  const { rows } = await db.query<TenantRow>(
    `INSERT INTO tenants (id, name, slug, country, currency) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (slug) DO NOTHING RETURNING ${TENANT_COLUMNS}`,
    [t.id, t.name, t.slug, t.country, t.currency],
  );
  return rows[0];
}

export interface TenantListRow {
  id: string;
  name: string;
  status: string;
  created_at: Date;
  owner_email: string | null;
  balance: string | null;
  currency: string | null;
}

/** Every tenant with its owner's e-mail and wallet, oldest first: for the operator's CLI. */
export async function listTenants(
  db: Queryable,
  page: { limit: number; offset: number },
): Promise<{ rows: TenantListRow[]; total: number }> {
  return selectPage<TenantListRow>(
    db,
    {
      rows: `SELECT t.id, t.name, t.status, t.created_at,
              (SELECT u.email FROM users u WHERE u.tenant_id = t.id ORDER BY u.created_at, u.id LIMIT 1) AS owner_email,
              w.balance::text AS balance, w.currency
         FROM tenants t LEFT JOIN wallets w ON w.tenant_id = t.id
        ORDER BY t.created_at, t.id`,
      total: 'SELECT count(*)::int AS n FROM tenants',
      params: [],
    },
    page,
  );
}

export async function findTenant(db: Queryable, tenantId: string): Promise<TenantRow | undefined> {
  const { rows } = await db.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1`, [tenantId]);
  return rows[0];
}

export async function countTenants(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tenants');
  return rows[0]!.n;
}

export async function insertUser(
  db: Queryable,
  tenantId: string,
  u: { id: string; email: string; name: string | null; passwordHash: string },
): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (tenant_id, id, email, name, password_hash) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (lower(email)) DO NOTHING RETURNING ${USER_COLUMNS}`,
    [tenantId, u.id, u.email, u.name, u.passwordHash],
  );
  return rows[0];
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE lower(email) = lower($1)`, [email]);
  return rows[0];
}

export async function findUser(db: Queryable, tenantId: string, userId: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2`, [tenantId, userId]);
  return rows[0];
}

/**
 * Sets a new password and ends the user's other sessions: the session version moves on, and only
 * `keptSessionId` (the session that changed it) is honoured under the old one.
 */
export async function updateUserPassword(
  db: Queryable,
  tenantId: string,
  userId: string,
  passwordHash: string,
  keptSessionId: string | null,
): Promise<void> {
  await db.query(
    `UPDATE users SET password_hash = $3, session_version = session_version + 1, kept_session_id = $4, updated_at = now()
     WHERE tenant_id = $1 AND id = $2`,
    [tenantId, userId, passwordHash, keptSessionId],
  );
}

/** What decides whether a user's session is still honoured. */
/** What decides whether a session still holds: the user's session version, the session a password change kept, and whether it was logged out. */
export async function findSessionState(
  db: Queryable,
  tenantId: string,
  userId: string,
  sessionId: string,
): Promise<{ session_version: number; kept_session_id: string | null; revoked: boolean } | undefined> {
  const { rows } = await db.query<{ session_version: number; kept_session_id: string | null; revoked: boolean }>(
    `SELECT session_version, kept_session_id, EXISTS (SELECT 1 FROM session_revocations WHERE session_id = $3) AS revoked
     FROM users WHERE tenant_id = $1 AND id = $2`,
    [tenantId, userId, sessionId],
  );
  return rows[0];
}

/** Lists a session as ended until `expiresAt`, and forgets the ones whose tokens have expired anyway. */
export async function revokeSession(db: Queryable, sessionId: string, expiresAt: Date, now: Date): Promise<void> {
  await db.query('DELETE FROM session_revocations WHERE expires_at <= $1', [now]);
  await db.query('INSERT INTO session_revocations (session_id, expires_at) VALUES ($1, $2) ON CONFLICT (session_id) DO NOTHING', [
    sessionId,
    expiresAt,
  ]);
}

export async function insertApiKey(
  db: Queryable,
  tenantId: string | null,
  k: {
    id: string;
    name: string;
    keyHash: string;
    keyPrefix: string;
    expiresAt: Date | null;
    webhookUrl: string | null;
    webhookSecretSealed: string | null;
    agentId: string | null;
    createdBy: string | null;
  },
): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, tenant_id, name, key_hash, key_prefix, expires_at, webhook_url, webhook_secret_sealed, agent_id, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${KEY_COLUMNS}`,
    [k.id, tenantId, k.name, k.keyHash, k.keyPrefix, k.expiresAt, k.webhookUrl, k.webhookSecretSealed, k.agentId, k.createdBy],
  );
  return rows[0]!;
}

export async function listApiKeys(
  db: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  return selectPage<ApiKeyRow>(
    db,
    {
      rows: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC`,
      total: 'SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1',
      params: [tenantId],
    },
    page,
  );
}

/**
 * Renames a key or changes its webhook URL (null removes it, and its signing secret with it). A
 * key that has no signing secret gets `newSecretSealed` when it gets a URL; `secretIssued` says
 * whether it did. Undefined when the key is not the tenant's.
 */
export async function updateApiKey(
  db: Queryable,
  tenantId: string,
  keyId: string,
  change: { name?: string; webhookUrl?: string | null; newSecretSealed: string },
): Promise<(ApiKeyRow & { secret_issued: boolean }) | undefined> {
  const { rows } = await db.query<ApiKeyRow & { secret_issued: boolean }>(
    `WITH changed AS (
       UPDATE api_keys SET
         name = coalesce($3, name),
         webhook_url = CASE WHEN $4 THEN $5 ELSE webhook_url END,
         webhook_secret_sealed = CASE
           WHEN $4 AND $5::text IS NULL THEN NULL
           WHEN $4 AND webhook_secret_sealed IS NULL THEN $6
           ELSE webhook_secret_sealed END
       WHERE tenant_id = $1 AND id = $2
       RETURNING ${KEY_COLUMNS}, webhook_secret_sealed IS NOT DISTINCT FROM $6 AS secret_issued
     ) SELECT * FROM changed`,
    [tenantId, keyId, change.name ?? null, change.webhookUrl !== undefined, change.webhookUrl ?? null, change.newSecretSealed],
  );
  return rows[0];
}

/** The hot path of every API-key request until the key is cached. */
export async function findApiKeyByHash(db: Queryable, keyHash: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [keyHash]);
  return rows[0];
}

export async function findApiKeyHash(db: Queryable, tenantId: string | null, keyId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ key_hash: string }>(
    'SELECT key_hash FROM api_keys WHERE id = $1 AND tenant_id IS NOT DISTINCT FROM $2',
    [keyId, tenantId],
  );
  return rows[0]?.key_hash;
}

/** Revokes and tells every API process, in the same transaction, to drop the key from its cache. */
export async function revokeApiKey(db: Queryable, tenantId: string | null, keyId: string, channel: string): Promise<boolean> {
  const { rows } = await db.query<{ key_hash: string }>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
     WHERE id = $1 AND tenant_id IS NOT DISTINCT FROM $2 RETURNING key_hash`,
    [keyId, tenantId],
  );
  const hash = rows[0]?.key_hash;
  if (!hash) return false;
  await db.query('SELECT pg_notify($1, $2)', [channel, hash]);
  return true;
}

export async function findApiKeyOwner(db: Queryable, keyId: string): Promise<{ tenant_id: string | null } | undefined> {
  const { rows } = await db.query<{ tenant_id: string | null }>('SELECT tenant_id FROM api_keys WHERE id = $1', [keyId]);
  return rows[0];
}

export async function touchApiKeys(db: Queryable, keyIds: string[], at: Date): Promise<void> {
  await db.query('UPDATE api_keys SET last_used_at = $2 WHERE id = ANY($1::uuid[]) AND (last_used_at IS NULL OR last_used_at < $2)', [
    keyIds,
    at,
  ]);
}

export async function insertWallet(
  db: Queryable,
  tenantId: string,
  w: { id: string; currency: string; lowBalanceThreshold: string },
): Promise<void> {
  await db.query('INSERT INTO wallets (tenant_id, id, currency, low_balance_threshold) VALUES ($1, $2, $3, $4)', [
    tenantId,
    w.id,
    w.currency,
    w.lowBalanceThreshold,
  ]);
}

/** The profile's tenant and wallet in one round trip. */
export async function findTenantWithWallet(db: Queryable, tenantId: string): Promise<{ tenant: TenantRow; wallet: WalletRow } | undefined> {
  const { rows } = await db.query<
    TenantRow & { wallet_id: string; balance: string; wallet_currency: string; low_balance_threshold: string }
  >(
    `SELECT t.id, t.name, t.slug, t.status, t.country, t.currency, t.timezone,
            w.id AS wallet_id, w.balance::text AS balance, w.currency AS wallet_currency, w.low_balance_threshold::text AS low_balance_threshold
     FROM tenants t JOIN wallets w ON w.tenant_id = t.id WHERE t.id = $1`,
    [tenantId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { wallet_id, balance, wallet_currency, low_balance_threshold, ...tenant } = row;
  return { tenant, wallet: { id: wallet_id, balance, currency: wallet_currency, low_balance_threshold } };
}

/** SQL conditions on a tenant, each written by the module that owns its table, on the tenant id expression given. */
export interface OnboardingConditions {
  hasIntegration: (tenant: string) => string;
  hasFlow: (tenant: string) => string;
  hasTestedCall: (tenant: string) => string;
}

export interface ProfileRow {
  tenant: TenantRow;
  wallet: WalletRow;
  user: UserRow | undefined;
  hasIntegration: boolean;
  hasFlow: boolean;
  hasTestedCall: boolean;
}

/** Whose profile: a tenant, and the signed-in user (null for an API key). */
export interface ProfileKey {
  tenantId: string;
  userId: string | null;
}

/**
 * Profiles in one round trip, of any number of tenants: each tenant's row, wallet and onboarding
 * answers, and its own signed-in user. Answers in the order of `keys` (none when the tenant is gone).
 */
export async function findProfiles(
  db: Queryable,
  keys: ProfileKey[],
  onboarding: OnboardingConditions,
): Promise<(ProfileRow | undefined)[]> {
  const { rows } = await db.query<
    TenantRow & {
      wallet_id: string;
      balance: string;
      wallet_currency: string;
      low_balance_threshold: string;
      user: (Omit<UserRow, 'created_at'> & { created_at: string }) | null;
      has_integration: boolean;
      has_flow: boolean;
      has_tested_call: boolean;
      asked: string;
    }
  >(
    `SELECT t.id, t.name, t.slug, t.status, t.country, t.currency, t.timezone,
            w.id AS wallet_id, w.balance::text AS balance, w.currency AS wallet_currency, w.low_balance_threshold::text AS low_balance_threshold,
            (SELECT to_jsonb(u) FROM (SELECT ${USER_COLUMNS} FROM users WHERE tenant_id = t.id AND id = q.user_id) u) AS user,
            ${onboarding.hasIntegration('t.id')} AS has_integration, ${onboarding.hasFlow('t.id')} AS has_flow,
            ${onboarding.hasTestedCall('t.id')} AS has_tested_call, q.asked::text AS asked
     FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS q (tenant_id, user_id, asked)
     JOIN tenants t ON t.id = q.tenant_id JOIN wallets w ON w.tenant_id = t.id`,
    [keys.map((key) => key.tenantId), keys.map((key) => key.userId)],
  );
  const profiles: (ProfileRow | undefined)[] = keys.map(() => undefined);
  for (const row of rows) {
    const {
      wallet_id,
      balance,
      wallet_currency,
      low_balance_threshold,
      user,
      has_integration,
      has_flow,
      has_tested_call,
      asked,
      ...tenant
    } = row;
    profiles[Number(asked) - 1] = {
      tenant,
      wallet: { id: wallet_id, balance, currency: wallet_currency, low_balance_threshold },
      user: user ? { ...user, created_at: new Date(user.created_at) } : undefined,
      hasIntegration: has_integration,
      hasFlow: has_flow,
      hasTestedCall: has_tested_call,
    };
  }
  return profiles;
}

/** Adds (or with a negative amount removes) money and journals it, atomically with the caller's transaction. */
export async function applyWalletChange(
  db: Queryable,
  tenantId: string,
  change: { id: string; amount: string; reason: string; reference: string | null },
): Promise<WalletRow | undefined> {
  const { rows } = await db.query<WalletRow>(
    `WITH w AS (
       UPDATE wallets SET balance = balance + $2::numeric, updated_at = now()
       WHERE tenant_id = $1 RETURNING tenant_id, id, balance, currency, low_balance_threshold
     ), j AS (
       INSERT INTO wallet_transactions (tenant_id, id, wallet_id, amount, balance_after, kind, reason, reference)
       SELECT w.tenant_id, $3, w.id, abs($2::numeric), w.balance, CASE WHEN $2::numeric < 0 THEN 'DEBIT' ELSE 'CREDIT' END, $4, $5 FROM w
     )
     SELECT ${WALLET_COLUMNS} FROM w`,
    [tenantId, change.amount, change.id, change.reason, change.reference],
  );
  return rows[0];
}

/** Every sealed webhook secret, locked, for re-sealing under a new key. */
export async function lockSealedWebhookSecrets(db: Queryable): Promise<{ id: string; webhook_secret_sealed: string }[]> {
  const { rows } = await db.query<{ id: string; webhook_secret_sealed: string }>(
    'SELECT id, webhook_secret_sealed FROM api_keys WHERE webhook_secret_sealed IS NOT NULL ORDER BY id FOR UPDATE',
  );
  return rows;
}

export async function updateWebhookSecretSealed(db: Queryable, id: string, sealed: string): Promise<void> {
  await db.query('UPDATE api_keys SET webhook_secret_sealed = $2 WHERE id = $1', [id, sealed]);
}

/** The tenant's live keys with a webhook: every one, or for an agent's event also those pinned to it. */
export async function webhookSubscribers(
  db: Queryable,
  tenantId: string,
  agentId: string | null,
  now: Date,
): Promise<{ id: string; webhook_url: string }[]> {
  const { rows } = await db.query<{ id: string; webhook_url: string }>(
    `SELECT id, webhook_url FROM api_keys
     WHERE tenant_id = $1 AND webhook_url IS NOT NULL AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)
       AND (agent_id IS NULL OR agent_id = $2::uuid)`,
    [tenantId, agentId, now],
  );
  return rows;
}

/** The sealed webhook secrets of the keys that have one, by key id. */
export async function webhookSecretsSealed(db: Queryable, tenantId: string, keyIds: string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; sealed: string }>(
    'SELECT id, webhook_secret_sealed AS sealed FROM api_keys WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND webhook_secret_sealed IS NOT NULL',
    [tenantId, keyIds],
  );
  return new Map(rows.map((row) => [row.id, row.sealed]));
}

/** Flips the wallet's low-balance flag to match its balance; returns the balance when it just went low. */
export async function crossedIntoLowBalance(
  db: Queryable,
  tenantId: string,
): Promise<{ balance: string; threshold: string; currency: string } | undefined> {
  const { rows } = await db.query<{ balance: string; threshold: string; currency: string; low: boolean }>(
    `UPDATE wallets SET low_balance_notified = balance < low_balance_threshold
     WHERE tenant_id = $1 AND low_balance_notified IS DISTINCT FROM (balance < low_balance_threshold)
     RETURNING balance::text, low_balance_threshold::text AS threshold, currency, low_balance_notified AS low`,
    [tenantId],
  );
  return rows[0]?.low ? rows[0] : undefined;
}

/** After a credit: the low-balance flag cleared once the balance is back at or above the threshold (never set here). */
export async function rearmLowBalance(db: Queryable, tenantId: string): Promise<void> {
  await db.query(
    'UPDATE wallets SET low_balance_notified = false WHERE tenant_id = $1 AND low_balance_notified AND balance >= low_balance_threshold',
    [tenantId],
  );
}
