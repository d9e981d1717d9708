import { randomBytes } from 'node:crypto';
import type { Deps } from './platform/context.ts';
import { createApiKey, createTenant } from './modules/identity/service.ts';

export interface DemoTenant {
  tenantId: string;
  email: string;
  password: string;
  apiKey: string;
}

/** A tenant to try the service with: its owner's login and an API key, shown to the operator once. */
export async function createDemoTenant(deps: Deps): Promise<DemoTenant> {
  const email = `demo-${randomBytes(3).toString('hex')}@callforge.local`;
  const password = randomBytes(12).toString('base64url');
  const { tenantId, user } = await createTenant(deps.db, deps.config, { tenantName: 'Demo', email, password, name: 'Demo owner' });
  const key = await createApiKey(deps, tenantId, { name: 'Demo key' }, { createdBy: user.id });
  return { tenantId, email, password, apiKey: key.key };
}

export function describeDemo(demo: DemoTenant, baseUrl: string): string {
  return [
    '',
    '  callforge demo tenant (shown once, keep it somewhere safe)',
    `  API key:         ${demo.apiKey}`,
    `  Dashboard login: ${demo.email} / ${demo.password}`,
    `  Try it:          curl -H "Authorization: Bearer ${demo.apiKey}" ${baseUrl}/api/v1/profile`,
    `  API docs:        ${baseUrl}/docs`,
    '',
  ].join('\n');
}
