import { createHash, randomBytes } from 'node:crypto';
import argon2 from 'argon2';
import { SignJWT, jwtVerify } from 'jose';
import type { Config } from '../../config.ts';
import type { CachedKey } from '../../platform/api-key-cache.ts';
import { KEY_REVOKED_CHANNEL } from '../../platform/api-key-cache.ts';
import type { Clock } from '../../platform/clock.ts';
import { withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import type { Queryable } from '../../platform/db.ts';
import { clearFailures, countFailure, failureWait, tooManyFailures, type FailureKey } from '../../platform/auth-failures.ts';
import { perTurnAcrossTenants } from '../../platform/batches.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { formatMoney, money, type Money } from '../../platform/money.ts';
import type { Page } from '../../platform/pagination.ts';
import { refusePrivateUrl } from '../../platform/safe-fetch.ts';
import { dayEnd } from '../../platform/schemas.ts';
import type { ServerKeys } from '../../platform/secrets.ts';
import * as repo from './repo.ts';
import type {
  ApiKey,
  CreateApiKeyBody,
  LoginBody,
  PasswordBody,
  Profile,
  SignupBody,
  UpdateApiKeyBody,
  UpdatedApiKey,
  User,
} from './schemas.ts';

// OWASP's argon2id baseline: strong, and quick enough that sign-up and login stay snappy.
const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
// Verified against when the e-mail is unknown, so a login takes as long either way.
const UNKNOWN_USER_HASH = argon2.hash(randomBytes(16).toString('hex'), ARGON2_OPTIONS);

export const API_KEY_PREFIX = 'aok_';
const API_KEY_PATTERN = /^aok_[A-Za-z0-9_-]{43}$/;

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

function toUser(row: repo.UserRow): User {
  return { id: row.id, tenantId: row.tenant_id, email: row.email, name: row.name, role: row.role, createdAt: row.created_at.toISOString() };
}

function keyStatus(row: repo.ApiKeyRow, now: Date): ApiKey['status'] {
  if (row.revoked_at) return 'REVOKED';
  if (row.expires_at && row.expires_at <= now) return 'EXPIRED';
  return 'ACTIVE';
}

function toApiKey(row: repo.ApiKeyRow, now: Date): ApiKey {
  return {
    id: row.id,
    name: row.name,
    keyPrefix: row.key_prefix,
    status: keyStatus(row, now),
    expiresAt: iso(row.expires_at),
    webhookUrl: row.webhook_url,
    agentId: row.agent_id,
    lastUsedAt: iso(row.last_used_at),
    revokedAt: iso(row.revoked_at),
    createdAt: row.created_at.toISOString(),
  };
}

function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return base || 'tenant';
}

export interface NewTenant {
  tenantName: string;
  email: string;
  password: string;
  name?: string | undefined;
  country?: string | undefined;
  currency?: string | undefined;
  /** Starting wallet credit; the configured STARTING_CREDIT when omitted. */
  credit?: string | undefined;
}

/** A tenant with its first user (the owner) and a wallet holding the starting credit, atomically. */
export async function createTenant(db: Queryable, config: Config, input: NewTenant): Promise<{ tenantId: string; user: User }> {
  const passwordHash = await argon2.hash(input.password, ARGON2_OPTIONS);
  return db.transaction(async (tx) => {
    let tenant: repo.TenantRow | undefined;
    for (let attempt = 0; !tenant; attempt++) {
      const slug = attempt === 0 ? slugify(input.tenantName) : `${slugify(input.tenantName)}-${randomBytes(3).toString('hex')}`;
      tenant = await repo.insertTenant(tx, {
        id: newId(),
        name: input.tenantName,
        slug,
        country: input.country ?? null,
        currency: input.currency ?? 'USD',
      });
    }
    const user = await repo.insertUser(tx, tenant.id, { id: newId(), email: input.email, name: input.name ?? null, passwordHash });
    if (!user) throw appError('EMAIL_TAKEN');
    const walletId = newId();
    await repo.insertWallet(tx, tenant.id, { id: walletId, currency: tenant.currency, lowBalanceThreshold: config.lowBalanceThreshold });
    const credit = money(input.credit ?? config.startingCredit);
    if (credit.gt(0))
      await repo.applyWalletChange(tx, tenant.id, { id: newId(), amount: credit.toFixed(4), reason: 'Starting credit', reference: null });
    return { tenantId: tenant.id, user: toUser(user) };
  });
}

/**
 * A signed session for `user`: its tenant (`tid`), the user's session version (`sv`; a password
 * change moves it on) and an id of its own (`jti`, so the session that changed the password is
 * the one kept).
 */
export async function issueSession(deps: Pick<Deps, 'config' | 'clock' | 'serverKeys'>, user: User, sessionVersion = 0) {
  const issuedAt = Math.floor(deps.clock.now().getTime() / 1000);
  const accessToken = await new SignJWT({ tid: user.tenantId, sv: sessionVersion })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.id)
    // The session's id, by which a log-out ends it before it expires.
    .setJti(newId())
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + deps.config.sessionTtlSeconds)
    .sign(deps.serverKeys.sessionSigningKey);
  return { accessToken, expiresIn: deps.config.sessionTtlSeconds, user };
}

export async function signup(deps: Deps, input: SignupBody) {
  if (!deps.config.signupEnabled) throw appError('SIGNUP_DISABLED');
  const { user } = await createTenant(deps.db, deps.config, input);
  return issueSession(deps, user);
}

/**
 * Failed sign-ins are counted per e-mail address (known or not, so the count says nothing about
 * who has an account) and per client address; at either limit the attempt is refused with 429
 * before the password is looked at. A successful sign-in clears its account's counter.
 */
export async function login(deps: Deps, input: LoginBody, address: string) {
  const { perAccount, perAddress, windowSeconds } = deps.config.authFailures;
  const account = `login-account:${createHash('sha256').update(input.email.trim().toLowerCase()).digest('hex')}`;
  const counted: FailureKey[] = [
    { key: account, max: perAccount, windowSeconds },
    { key: `login-address:${address}`, max: perAddress, windowSeconds },
  ];
  const wait = await failureWait(deps.db, deps.clock, counted);
  if (wait) throw tooManyFailures('login', wait);
  const row = await repo.findUserByEmail(deps.db, input.email);
  const valid = await argon2.verify(row?.password_hash ?? (await UNKNOWN_USER_HASH), input.password);
  if (!row || !valid) {
    await countFailure(deps.db, deps.clock, counted);
    throw appError('INVALID_CREDENTIALS');
  }
  await clearFailures(deps.db, account);
  return issueSession(deps, toUser(row), row.session_version);
}

/**
 * Changes the signed-in user's password and ends every other session of theirs (another browser,
 * a stolen token): the session that changed it (`sessionId`) stays signed in.
 */
export async function changePassword(ctx: TenantCtx, userId: string, input: PasswordBody, sessionId: string | null): Promise<void> {
  const row = await repo.findUser(ctx.db, ctx.tenantId, userId);
  if (!row || !(await argon2.verify(row.password_hash, input.currentPassword))) {
    throw appError('INVALID_CURRENT_PASSWORD');
  }
  const passwordHash = await argon2.hash(input.newPassword, ARGON2_OPTIONS);
  await repo.updateUserPassword(ctx.db, ctx.tenantId, userId, passwordHash, sessionId);
}

export interface SessionClaims {
  userId: string;
  tenantId: string;
  sessionId: string;
  expiresAt: Date;
}

/**
 * The session a token stands for, or null when it is forged, expired, logged out, or issued under
 * an earlier session version (a password change ended it) unless it is the one session that
 * change kept. One read per dashboard request; API keys never come here.
 */
export async function verifySession(deps: Pick<Deps, 'db' | 'clock' | 'serverKeys'>, token: string): Promise<SessionClaims | null> {
  let claims: SessionClaims & { version: number };
  try {
    const { payload } = await jwtVerify(token, deps.serverKeys.sessionSigningKey, { algorithms: ['HS256'], currentDate: deps.clock.now() });
    const { sub, tid, jti, exp, sv } = payload;
    if (typeof sub !== 'string' || typeof tid !== 'string' || typeof jti !== 'string' || typeof exp !== 'number') return null;
    claims = { userId: sub, tenantId: tid, sessionId: jti, expiresAt: new Date(exp * 1000), version: typeof sv === 'number' ? sv : 0 };
  } catch {
    return null;
  }
  const state = await repo.findSessionState(deps.db, claims.tenantId, claims.userId, claims.sessionId);
  if (!state || state.revoked) return null;
  if (state.session_version !== claims.version && claims.sessionId !== state.kept_session_id) return null;
  return { userId: claims.userId, tenantId: claims.tenantId, sessionId: claims.sessionId, expiresAt: claims.expiresAt };
}

/** Ends a session at once (log-out): its token is refused from now on, in every process. */
export async function endSession(deps: Pick<Deps, 'db' | 'clock'>, session: { sessionId: string; expiresAt: Date }): Promise<void> {
  // Listed until its token expires: after that the token is refused anyway.
  await repo.revokeSession(deps.db, session.sessionId, session.expiresAt, deps.clock.now());
}

/** Whether the agent is the tenant's; the agents module answers (it sits above identity). */
export type AgentExists = (scope: { db: Queryable; tenantId: string }, agentId: string) => Promise<boolean>;

export interface KeyOwner {
  db: Queryable;
  clock: Clock;
  serverKeys: ServerKeys;
  config: Pick<Config, 'allowPrivateUrls'>;
}

/** Makes a key; its full value and webhook secret exist only in the returned object. */
export async function createApiKey(
  owner: KeyOwner,
  tenantId: string | null,
  input: CreateApiKeyBody,
  options: { allowPastExpiry?: boolean; createdBy?: string | null; agentExists?: AgentExists } = {},
) {
  const expiresAt = input.expiresAt === undefined ? null : dayEnd(input.expiresAt);
  if (expiresAt && !options.allowPastExpiry && expiresAt <= owner.clock.now()) {
    throw appError('EXPIRY_IN_PAST', {}, [{ path: '/expiresAt', message: 'must lie in the future' }]);
  }
  if (input.agentId) {
    // A platform key has no tenant, so no agent can be its own.
    if (!tenantId) throw appError('NOT_FOUND', { what: 'Agent' });
    if (!options.agentExists) throw new Error('createApiKey pins a key to an agent only when given options.agentExists');
    if (!(await options.agentExists({ db: owner.db, tenantId }, input.agentId))) throw appError('NOT_FOUND', { what: 'Agent' });
  }
  if (input.webhookUrl) await refusePrivateUrl(input.webhookUrl, 'webhookUrl', { allowPrivate: owner.config.allowPrivateUrls });
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const webhookSecret = input.webhookUrl ? `whsec_${randomBytes(32).toString('base64')}` : undefined;
  const row = await repo.insertApiKey(owner.db, tenantId, {
    id: newId(),
    name: input.name,
    keyHash: hashApiKey(key),
    keyPrefix: key.slice(0, API_KEY_PREFIX.length + 8),
    expiresAt,
    webhookUrl: input.webhookUrl ?? null,
    webhookSecretSealed: webhookSecret ? owner.serverKeys.seal(webhookSecret) : null,
    agentId: input.agentId ?? null,
    createdBy: options.createdBy ?? null,
  });
  return { ...toApiKey(row, owner.clock.now()), key, ...(webhookSecret ? { webhookSecret } : {}) };
}

/**
 * Renames a key or changes where its webhooks go. The signing secret stays when the URL changes (a
 * receiver keeps verifying with it); a key given a URL without having a secret gets one, shown once.
 */
export async function updateApiKey(ctx: TenantCtx, keyId: string, input: UpdateApiKeyBody): Promise<UpdatedApiKey> {
  if (input.webhookUrl) await refusePrivateUrl(input.webhookUrl, 'webhookUrl', { allowPrivate: ctx.config.allowPrivateUrls });
  const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;
  const row = await repo.updateApiKey(ctx.db, ctx.tenantId, keyId, {
    name: input.name,
    webhookUrl: input.webhookUrl,
    newSecretSealed: ctx.serverKeys.seal(webhookSecret),
  });
  if (!row) throw appError('NOT_FOUND', { what: 'API key' });
  return { ...toApiKey(row, ctx.clock.now()), ...(row.secret_issued ? { webhookSecret } : {}) };
}

export async function listApiKeys(ctx: TenantCtx, page: Page) {
  const { rows, total } = await repo.listApiKeys(ctx.db, ctx.tenantId, page);
  const now = ctx.clock.now();
  return { data: rows.map((row) => toApiKey(row, now)), total };
}

/** Revokes a key of `tenantId` (null: a platform key); every API process stops honouring it at once. */
export async function revokeApiKey(deps: Pick<Deps, 'db' | 'apiKeyCache'>, tenantId: string | null, keyId: string): Promise<void> {
  const keyHash = await repo.findApiKeyHash(deps.db, tenantId, keyId);
  const revoked =
    keyHash &&
    (await deps.apiKeyCache.revokeEverywhere(keyHash, () =>
      withTransaction(deps, ({ db }) => repo.revokeApiKey(db, tenantId, keyId, KEY_REVOKED_CHANNEL)),
    ));
  if (!revoked) throw appError('NOT_FOUND', { what: 'API key' });
}

/** Revokes a key whatever its tenant (the operator's CLI); every API process stops honouring it at once. */
export async function revokeApiKeyById(deps: Pick<Deps, 'db' | 'apiKeyCache'>, keyId: string): Promise<void> {
  const owner = await repo.findApiKeyOwner(deps.db, keyId);
  if (!owner) throw appError('NOT_FOUND', { what: 'API key' });
  await revokeApiKey(deps, owner.tenant_id, keyId);
}

export type KeyCheck = { status: 'valid'; key: CachedKey } | { status: 'invalid' } | { status: 'expired' };

export async function authenticateApiKey(deps: Pick<Deps, 'db' | 'clock' | 'apiKeyCache'>, token: string): Promise<KeyCheck> {
  if (!API_KEY_PATTERN.test(token)) return { status: 'invalid' };
  const keyHash = hashApiKey(token);
  let key = deps.apiKeyCache.get(keyHash);
  if (!key) {
    const generation = deps.apiKeyCache.generation();
    const row = await repo.findApiKeyByHash(deps.db, keyHash);
    if (!row || row.revoked_at) return { status: 'invalid' };
    key = { keyId: row.id, tenantId: row.tenant_id, agentId: row.agent_id, expiresAt: row.expires_at };
    deps.apiKeyCache.set(keyHash, key, generation);
  }
  if (key.expiresAt && key.expiresAt <= deps.clock.now()) return { status: 'expired' };
  deps.apiKeyCache.touch(key.keyId);
  return { status: 'valid', key };
}

export const recordApiKeyUse = (db: Queryable) => (keyIds: string[], at: Date) => repo.touchApiKeys(db, keyIds, at);

/**
 * Onboarding questions answered by the modules that own the state, each as an SQL condition on a
 * tenant written by its owner: the profile asks them all, with its own reads, in one statement
 * (one round trip instead of five).
 */
export type OnboardingSources = repo.OnboardingConditions;

/**
 * Reads profiles: those asked in the same turn of the event loop, of any tenants, are read by one
 * statement (a busy process sends one round trip where it sent one per request). Each is read
 * after it was asked, so none is older than its request.
 */
export function profileReader(db: Queryable, onboarding: OnboardingSources): (tenantId: string, userId: string | null) => Promise<Profile> {
  const read = perTurnAcrossTenants(
    (keys: repo.ProfileKey[]) => repo.findProfiles(db, keys, onboarding),
    ({ tenantId, userId }) => `${tenantId}/${userId}`,
  );
  return async (tenantId, userId) => {
    const found = await read({ tenantId, userId });
    if (!found) throw appError('NOT_FOUND', { what: 'Tenant' });
    const { tenant, wallet, user, hasIntegration, hasFlow, hasTestedCall } = found;
    return {
      success: true,
      message: 'Profile retrieved successfully',
      data: {
        user: user ? toUser(user) : null,
        tenant: {
          id: tenant.id,
          name: tenant.name,
          slug: tenant.slug,
          status: tenant.status,
          country: tenant.country,
          currency: tenant.currency,
        },
        onboarding: { hasIntegration, hasFlow, hasTestedCall, completed: hasIntegration && hasFlow && hasTestedCall },
        wallet: {
          id: wallet.id,
          balance: formatMoney(wallet.balance),
          currency: wallet.currency,
          lowBalanceThreshold: formatMoney(wallet.low_balance_threshold),
        },
      },
    };
  };
}

export async function creditWallet(db: Queryable, tenantId: string, amount: string, reason: string) {
  if (!money(amount).isFinite()) throw appError('INVALID_AMOUNT');
  const wallet = await db.transaction(async (tx) => {
    const changed = await repo.applyWalletChange(tx, tenantId, { id: newId(), amount: money(amount).toFixed(4), reason, reference: null });
    // Only re-arms: a crossing downwards is announced by the next debit (calls), which emits the event.
    await repo.rearmLowBalance(tx, tenantId);
    return changed;
  });
  if (!wallet) throw appError('NOT_FOUND', { what: 'Tenant wallet' });
  return { id: wallet.id, balance: formatMoney(wallet.balance), currency: wallet.currency };
}

export const countTenants = (db: Queryable) => repo.countTenants(db);

/** Every tenant (oldest first) with its owner and wallet balance, for the operator. */
export async function listTenants(db: Queryable, page: Page) {
  const { rows, total } = await repo.listTenants(db, page);
  return {
    data: rows.map((row) => ({
      id: row.id,
      name: row.name,
      status: row.status,
      ownerEmail: row.owner_email,
      balance: row.balance,
      currency: row.currency,
      createdAt: row.created_at.toISOString(),
    })),
    total,
  };
}

export const tenantExists = async (db: Queryable, tenantId: string): Promise<boolean> =>
  (await repo.findTenant(db, tenantId)) !== undefined;

// ---------------------------------------------------------------------------------------------
// Wallet and tenant settings for other modules (campaigns, calls).

export async function walletBalance(ctx: TenantCtx): Promise<{ amount: Money; currency: string }> {
  const found = await repo.findTenantWithWallet(ctx.db, ctx.tenantId);
  if (!found) throw appError('NOT_FOUND', { what: 'Tenant wallet' });
  return { amount: money(found.wallet.balance), currency: found.wallet.currency };
}

export async function tenantTimezone(ctx: TenantCtx): Promise<string | null> {
  return (await repo.findTenant(ctx.db, ctx.tenantId))?.timezone ?? null;
}

/** Debits the wallet in the caller's transaction (journalled); returns the balance after. */
export async function debitWallet(db: Queryable, tenantId: string, amount: Money, reason: string, reference: string): Promise<Money> {
  const wallet = await repo.applyWalletChange(db, tenantId, { id: newId(), amount: amount.neg().toFixed(4), reason, reference });
  if (!wallet) throw appError('NOT_FOUND', { what: 'Tenant wallet' });
  return money(wallet.balance);
}

/** Key rotation: every API key's webhook signing secret sealed again with SECRETS_KEY, in the caller's transaction. */
export async function resealWebhookSecrets(db: Queryable, serverKeys: ServerKeys): Promise<number> {
  const rows = await repo.lockSealedWebhookSecrets(db);
  for (const row of rows) await repo.updateWebhookSecretSealed(db, row.id, serverKeys.seal(serverKeys.open(row.webhook_secret_sealed)));
  return rows.length;
}

export const webhookSubscribers = (db: Queryable, tenantId: string, agentId: string | null, now: Date) =>
  repo.webhookSubscribers(db, tenantId, agentId, now);

/** The webhook signing secrets (`whsec_…`) of several keys in one statement, opened, in order (undefined: the key has none). */
export async function webhookSecrets(
  db: Queryable,
  serverKeys: ServerKeys,
  tenantId: string,
  keyIds: string[],
): Promise<(string | undefined)[]> {
  const sealed = await repo.webhookSecretsSealed(db, tenantId, keyIds);
  const opened = new Map([...new Set(keyIds)].map((keyId) => [keyId, sealed.has(keyId) ? serverKeys.open(sealed.get(keyId)!) : undefined]));
  return keyIds.map((keyId) => opened.get(keyId));
}

/** In the caller's transaction after a debit: the wallet's figures when the balance just fell below its threshold (once per crossing). */
export const crossedIntoLowBalance = (db: Queryable, tenantId: string) => repo.crossedIntoLowBalance(db, tenantId);
