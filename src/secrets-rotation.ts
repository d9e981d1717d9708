import { withTransaction, type Deps } from './platform/context.ts';
import { resealToolSecrets } from './modules/agents/service.ts';
import { resealWebhookSecrets } from './modules/identity/service.ts';
import { resealAll as resealIntegrations } from './modules/integrations/service.ts';

/**
 * After SECRETS_KEY changed (the old one kept as SECRETS_KEY_PREVIOUS): everything sealed at rest,
 * the integrations' provider secrets, the API keys' webhook signing secrets and the agents' tool signing secrets, is sealed again
 * with the new key in one transaction. Then SECRETS_KEY_PREVIOUS can go.
 */
export async function resealSecrets(
  deps: Pick<Deps, 'db' | 'serverKeys'>,
): Promise<{ integrations: number; webhookSecrets: number; toolSecrets: number }> {
  return withTransaction(deps, async ({ db }) => ({
    integrations: await resealIntegrations(db, deps.serverKeys),
    webhookSecrets: await resealWebhookSecrets(db, deps.serverKeys),
    toolSecrets: await resealToolSecrets(db, deps.serverKeys),
  }));
}
