import type { Queryable } from '../../platform/db.ts';
import type { ServerKeys } from '../../platform/secrets.ts';
import type { TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { refusePrivateUrl } from '../../platform/safe-fetch.ts';
import type { Connection, Provider } from '../../providers/types.ts';
import * as repo from './repo.ts';
import { INTEGRATION_KINDS, type Integration, type IntegrationKind } from './schemas.ts';

const toIntegration = (row: repo.IntegrationRow): Integration => ({
  kind: row.kind,
  settings: row.settings,
  secretsSet: [...(INTEGRATION_KINDS[row.kind]?.secrets ?? [])],
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const integrationNotFound = (kind: string) => appError('NOT_FOUND', { what: `The ${kind} integration` });

/** Stores a kind's credentials, replacing any before: settings in clear, secrets sealed. */
export async function putIntegration(ctx: TenantCtx, kind: IntegrationKind, input: Record<string, string>): Promise<Integration> {
  // A tenant's own server (a model server's apiUrl) is fetched later under the address rule.
  for (const [field, value] of Object.entries(input))
    if (/url$/i.test(field)) await refusePrivateUrl(value, field, { allowPrivate: ctx.config.allowPrivateUrls });
  const secretNames = new Set<string>(INTEGRATION_KINDS[kind]!.secrets);
  const settings = Object.fromEntries(Object.entries(input).filter(([name]) => !secretNames.has(name)));
  const secrets = Object.fromEntries(Object.entries(input).filter(([name]) => secretNames.has(name)));
  return toIntegration(await repo.upsertIntegration(ctx.db, ctx.tenantId, kind, settings, ctx.serverKeys.seal(JSON.stringify(secrets))));
}

export async function getIntegration(ctx: TenantCtx, kind: IntegrationKind): Promise<Integration> {
  const row = await repo.findIntegration(ctx.db, ctx.tenantId, kind);
  if (!row) throw integrationNotFound(kind);
  return toIntegration(row);
}

export async function listIntegrations(ctx: TenantCtx): Promise<Integration[]> {
  return (await repo.listIntegrations(ctx.db, ctx.tenantId)).map(toIntegration);
}

export async function deleteIntegration(ctx: TenantCtx, kind: IntegrationKind): Promise<void> {
  if (!(await repo.deleteIntegration(ctx.db, ctx.tenantId, kind))) throw integrationNotFound(kind);
}

/** The tenant's credentials of a kind, secrets opened, for the provider clients; undefined when not connected. */
export async function credentialsOf(
  ctx: Pick<TenantCtx, 'db' | 'tenantId' | 'serverKeys'>,
  kind: IntegrationKind,
): Promise<Record<string, string> | undefined> {
  const row = await repo.findIntegration(ctx.db, ctx.tenantId, kind);
  if (!row) return undefined;
  return { ...row.settings, ...(JSON.parse(ctx.serverKeys.open(row.secrets_sealed)) as Record<string, string>) };
}

/** Tenants that connected this WhatsApp business account, with their credentials opened. */
export async function whatsappTenantsOfAccount(
  deps: Pick<TenantCtx, 'db' | 'serverKeys'>,
  businessAccountId: string,
): Promise<{ tenantId: string; credentials: Record<string, string> }[]> {
  const rows = await repo.whatsappIntegrationsOfAccount(deps.db, businessAccountId);
  return rows.map((row) => ({
    tenantId: row.tenant_id,
    credentials: { ...row.settings, ...(JSON.parse(deps.serverKeys.open(row.secrets_sealed)) as Record<string, string>) },
  }));
}

/** Onboarding's "has an integration", as an SQL condition on the tenant `$1` (the profile reads it in its one statement). */
export const hasIntegrationCondition = repo.tenantHasIntegration;

/** Key rotation: every integration's secrets opened (SECRETS_KEY or SECRETS_KEY_PREVIOUS) and sealed again with SECRETS_KEY, in the caller's transaction. */
export async function resealAll(db: Queryable, serverKeys: ServerKeys): Promise<number> {
  const rows = await repo.lockAllSealed(db);
  for (const row of rows) await repo.updateSealed(db, row.tenant_id, row.kind, serverKeys.seal(serverKeys.open(row.secrets_sealed)));
  return rows.length;
}

/**
 * How this tenant reaches `provider`: its credentials with the service's settings; undefined when
 * the provider needs credentials the tenant has not connected.
 */
export async function connectionTo(
  ctx: Pick<TenantCtx, 'db' | 'tenantId' | 'serverKeys' | 'config'>,
  provider: Provider,
): Promise<Connection | undefined> {
  const credentials = provider.integration ? await credentialsOf(ctx, provider.integration.kind) : {};
  if (!credentials) return undefined;
  const { config } = ctx;
  return { credentials, settings: config.providerSettings, publicUrl: config.publicUrl, timeoutMs: config.messaging.providerTimeoutMs };
}
