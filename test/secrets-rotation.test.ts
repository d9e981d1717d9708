import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createApiKey, createTenant } from '../src/modules/identity/service.ts';
import { credentialsOf, putIntegration } from '../src/modules/integrations/service.ts';
import { resealSecrets } from '../src/secrets-rotation.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { createLogger } from '../src/platform/logger.ts';
import { deriveServerKeys, generateSecretsKey } from '../src/platform/secrets.ts';
import { openRuntime } from '../src/runtime.ts';
import { createTestDatabase } from './harness.ts';

describe('sealed secrets', () => {
  it('open only under the key that sealed them, or as the previous key during a rotation', () => {
    const [oldKey, newKey] = [generateSecretsKey(), generateSecretsKey()];
    const sealed = deriveServerKeys(oldKey).seal('auth-token-123');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('auth-token-123');
    expect(() => deriveServerKeys(newKey).open(sealed)).toThrow();
    expect(deriveServerKeys(newKey, oldKey).open(sealed)).toBe('auth-token-123');
    const [version, iv, tag, body] = sealed.split('.');
    const tampered = [
      version,
      iv,
      tag,
      Buffer.from(Buffer.from(body!, 'base64url').map((byte, i) => (i === 0 ? byte ^ 1 : byte))).toString('base64url'),
    ].join('.');
    expect(() => deriveServerKeys(newKey, oldKey).open(tampered)).toThrow();
  });
});

describe('rotating SECRETS_KEY', () => {
  let location: Record<string, string>;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const database = await createTestDatabase('callforge_rotation');
    if (database) {
      location = { DATABASE_URL: database.url };
      cleanup = database.drop;
    } else {
      const dataDir = mkdtempSync(join(tmpdir(), 'callforge-rotation-'));
      location = { DATA_DIR: dataDir };
      cleanup = async () => rmSync(dataDir, { recursive: true, force: true });
    }
  });
  afterAll(() => cleanup());

  /** Runs `work` on a runtime of the test's database with these keys, then closes it. */
  async function withKeys<T>(
    keys: Record<string, string>,
    work: (runtime: Awaited<ReturnType<typeof openRuntime>>) => Promise<T>,
  ): Promise<T> {
    const config = loadConfig({ LOG_LEVEL: 'silent', DEMO_BOOTSTRAP: '0', ...location, ...keys });
    const runtime = await openRuntime(config, { log: createLogger('silent'), superviseJobs: false });
    try {
      return await work(runtime);
    } finally {
      await runtime.close();
    }
  }

  it('keeps provider and webhook secrets readable through SECRETS_KEY_PREVIOUS and reseals them under the new key', async () => {
    const [oldKey, newKey] = [generateSecretsKey(), generateSecretsKey()];
    const credentials = { accountSid: `AC${'0f'.repeat(16)}`, authToken: 'twilio-auth-token-0123456789' };
    const { tenantId, webhookSecret } = await withKeys({ SECRETS_KEY: oldKey }, async (runtime) => {
      const { tenantId } = await createTenant(runtime.db, runtime.config, {
        tenantName: 'Rotating',
        email: 'rotate@example.com',
        password: 'correct horse',
      });
      await putIntegration(tenantCtx(runtime, tenantId), 'twilio', credentials);
      const key = await createApiKey(runtime, tenantId, { name: 'CRM', webhookUrl: 'https://crm.example.com/hooks' });
      return { tenantId, webhookSecret: key.webhookSecret! };
    });
    const storedWebhookSecret = async (runtime: Awaited<ReturnType<typeof openRuntime>>) =>
      runtime.serverKeys.open(
        (
          await runtime.db.query<{ sealed: string }>('SELECT webhook_secret_sealed AS sealed FROM api_keys WHERE tenant_id = $1', [
            tenantId,
          ])
        ).rows[0]!.sealed,
      );
    // The new key alone cannot open what the old one sealed.
    await withKeys({ SECRETS_KEY: newKey }, async (runtime) => {
      await expect(credentialsOf(tenantCtx(runtime, tenantId), 'twilio')).rejects.toThrow();
    });
    // During the rotation both work, and the reseal moves everything to the new key.
    await withKeys({ SECRETS_KEY: newKey, SECRETS_KEY_PREVIOUS: oldKey }, async (runtime) => {
      expect(await credentialsOf(tenantCtx(runtime, tenantId), 'twilio')).toEqual(credentials);
      expect(await resealSecrets(runtime)).toEqual({ integrations: 1, webhookSecrets: 1, toolSecrets: 0 });
    });
    await withKeys({ SECRETS_KEY: newKey }, async (runtime) => {
      expect(await credentialsOf(tenantCtx(runtime, tenantId), 'twilio')).toEqual(credentials);
      expect(await storedWebhookSecret(runtime)).toBe(webhookSecret);
    });
    await withKeys({ SECRETS_KEY: oldKey }, async (runtime) => {
      await expect(credentialsOf(tenantCtx(runtime, tenantId), 'twilio')).rejects.toThrow();
    });
  }, 60_000);
});
