import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecretsKey } from '../src/platform/secrets.ts';
import { createTestDatabase } from './harness.ts';
import { startServerProcess, type ServerProcess } from './processes.ts';

// Several API processes share one PostgreSQL server; PGlite is one process by design (contract §11).
describe.skipIf(!process.env.DATABASE_URL)('two API processes on one PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabase('callforge_procs');
    const env = { DATABASE_URL: database!.url, SECRETS_KEY: generateSecretsKey() };
    [a, b] = await Promise.all([startServerProcess(env, ['--role', 'api']), startServerProcess(env, ['--role', 'api'])]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
  });

  const call = async (server: ServerProcess, method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (response.status === 204 ? null : await response.json()) as Record<string, string> };
  };

  // Ten rounds across two processes; with the suite running on every core a round can take seconds.
  it('stops honouring a key in the other process as soon as it is revoked', { timeout: 120_000 }, async () => {
    const signup = await fetch(a.url + '/api/v1/auth/signup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenantName: 'Two procs', email: 'two@example.com', password: 'long enough password' }),
    });
    const { accessToken } = (await signup.json()) as { accessToken: string };
    // Several rounds: each key is warm in B's cache when A revokes it.
    for (let round = 0; round < 10; round++) {
      const created = await call(a, 'POST', '/api/v1/api-keys', accessToken, { name: `key ${round}` });
      expect(created.status).toBe(201);
      const key = created.body!.key!;
      expect((await call(b, 'GET', '/api/v1/profile', key)).status).toBe(200);
      expect((await call(b, 'GET', '/api/v1/profile', key)).status).toBe(200);
      expect((await call(a, 'DELETE', `/api/v1/api-keys/${created.body!.id}`, accessToken)).status).toBe(204);
      const after = await call(b, 'GET', '/api/v1/profile', key);
      expect(after.status).toBe(401);
      expect(after.body!.message).toBe('Invalid API key');
    }
  });

  it('runs the worker role alone beside the API processes, without serving HTTP', async () => {
    const worker = await startServerProcess(
      { DATABASE_URL: database!.url, SECRETS_KEY: generateSecretsKey() },
      ['--role', 'worker'],
      60_000,
      /"msg":"workers and dialer started"/,
    );
    try {
      expect(worker.output()).not.toContain('Server listening');
      expect(worker.child.exitCode).toBeNull();
    } finally {
      await worker.stop();
    }
  });
});
