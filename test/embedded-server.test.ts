import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServerToExit, startServerProcess, type ServerProcess } from './processes.ts';

// Contract §11: `npm start` on the embedded database, as a user runs it.
describe.skipIf(!!process.env.DATABASE_URL)('the embedded server process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'callforge-embedded-'));
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess({ DATA_DIR: dataDir, DATABASE_URL: undefined, DEMO_BOOTSTRAP: '1' });
  }, 90_000);
  afterAll(() => server?.stop());

  it('creates a demo tenant on first start and prints a working API key once', async () => {
    const deadline = Date.now() + 20_000;
    while (!/aok_[A-Za-z0-9_-]{43}/.test(server.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const key = /aok_[A-Za-z0-9_-]{43}/.exec(server.output())![0];
    expect(server.output()).toMatch(/Dashboard login: demo-[0-9a-f]+@callforge\.local \/ \S+/);
    const response = await fetch(`${server.url}/api/v1/profile`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: { tenant: { name: string } } }).data.tenant.name).toBe('Demo');
  });

  it('shows the demo campaign dialling the simulator within a minute', async () => {
    const key = /aok_[A-Za-z0-9_-]{43}/.exec(server.output())![0];
    const get = async (path: string) =>
      (await (await fetch(`${server.url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<
        string,
        unknown
      >;
    const campaigns = (await get('/campaigns')).data as { id: string; status: string }[];
    expect(campaigns).toHaveLength(1);
    expect(campaigns[0]!.status).toBe('RUNNING');
    const deadline = Date.now() + 60_000;
    let ended = 0;
    while (ended === 0 && Date.now() < deadline) {
      ended = ((await get('/call-logs?limit=200')).data as { status: string }[]).filter((call) => call.status === 'ENDED').length;
      if (ended === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(ended).toBeGreaterThan(0);
    expect(server.output()).toContain(`/api/v1/campaigns/${campaigns[0]!.id}`);
    // Each ended call is followed by the demo agent's SMS on the simulator.
    let sent: { channel: string; status: string; body: string }[] = [];
    while (sent.length === 0 && Date.now() < deadline + 10_000) {
      sent = ((await get('/messages?channel=sms')).data as typeof sent).filter((message) => message.status === 'SENT');
      if (sent.length === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(sent[0]).toMatchObject({ channel: 'SMS', body: expect.stringMatching(/^(Thanks for confirming|Hi) /) });
  }, 80_000);

  it('refuses a second process on the same data directory, naming the holder', async () => {
    const second = await runServerToExit({ DATA_DIR: dataDir, DATABASE_URL: undefined });
    expect(second.code).toBe(1);
    expect(second.output).toContain(`held by process ${server.child.pid}`);
  });

  it('refuses to run the api or worker role alone without DATABASE_URL', async () => {
    for (const role of ['api', 'worker']) {
      const result = await runServerToExit({ DATA_DIR: dataDir, DATABASE_URL: undefined }, ['--role', role]);
      expect(result.code).toBe(1);
      expect(result.output).toContain(`role "${role}"`);
      expect(result.output).toContain('DATABASE_URL');
    }
  });

  it('stops with a message naming a bad variable', async () => {
    const result = await runServerToExit({ DATA_DIR: dataDir, PORT: 'eighty' });
    expect(result.code).toBe(1);
    expect(result.output).toContain('PORT="eighty" is invalid');
  });
});
