import type { Queryable } from '../../platform/db.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['integrations'] as const;

export interface IntegrationRow {
  kind: string;
  settings: Record<string, string>;
  secrets_sealed: string;
  created_at: Date;
  updated_at: Date;
}

export async function upsertIntegration(
  db: Queryable,
  tenantId: string,
  kind: string,
  settings: Record<string, string>,
  secretsSealed: string,
): Promise<IntegrationRow> {
  const { rows } = await db.query<IntegrationRow>(
    `INSERT INTO integrations (tenant_id, kind, settings, secrets_sealed) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, kind) DO UPDATE SET settings = EXCLUDED.settings, secrets_sealed = EXCLUDED.secrets_sealed, updated_at = now()
     RETURNING kind, settings, secrets_sealed, created_at, updated_at`,
    [tenantId, kind, JSON.stringify(settings), secretsSealed],
  );
  return rows[0]!;
}

export async function findIntegration(db: Queryable, tenantId: string, kind: string): Promise<IntegrationRow | undefined> {
  const { rows } = await db.query<IntegrationRow>(
    'SELECT kind, settings, secrets_sealed, created_at, updated_at FROM integrations WHERE tenant_id = $1 AND kind = $2',
    [tenantId, kind],
  );
  return rows[0];
}

export async function listIntegrations(db: Queryable, tenantId: string): Promise<IntegrationRow[]> {
  const { rows } = await db.query<IntegrationRow>(
    'SELECT kind, settings, secrets_sealed, created_at, updated_at FROM integrations WHERE tenant_id = $1 ORDER BY kind',
    [tenantId],
  );
  return rows;
}

export async function deleteIntegration(db: Queryable, tenantId: string, kind: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM integrations WHERE tenant_id = $1 AND kind = $2', [tenantId, kind]);
  return rowCount === 1;
}

/** Whether the tenant whose id is the SQL expression `tenant` has connected a provider: a condition for a statement that asks several modules at once. */
export const tenantHasIntegration = (tenant: string) => `EXISTS (SELECT 1 FROM integrations WHERE tenant_id = ${tenant})`;

/** The WhatsApp integrations, across tenants, of a business account (its webhook deliveries name it). */
export async function whatsappIntegrationsOfAccount(
  db: Queryable,
  businessAccountId: string,
): Promise<(IntegrationRow & { tenant_id: string })[]> {
  const { rows } = await db.query<IntegrationRow & { tenant_id: string }>(
    "SELECT tenant_id, kind, settings, secrets_sealed, created_at, updated_at FROM integrations WHERE kind = 'whatsapp' AND settings ->> 'businessAccountId' = $1",
    [businessAccountId],
  );
  return rows;
}

/** Every sealed secret, locked, for re-sealing under a new key. */
export async function lockAllSealed(db: Queryable): Promise<{ tenant_id: string; kind: string; secrets_sealed: string }[]> {
  const { rows } = await db.query<{ tenant_id: string; kind: string; secrets_sealed: string }>(
    'SELECT tenant_id, kind, secrets_sealed FROM integrations ORDER BY tenant_id, kind FOR UPDATE',
  );
  return rows;
}

export async function updateSealed(db: Queryable, tenantId: string, kind: string, secretsSealed: string): Promise<void> {
  await db.query('UPDATE integrations SET secrets_sealed = $3 WHERE tenant_id = $1 AND kind = $2', [tenantId, kind, secretsSealed]);
}
