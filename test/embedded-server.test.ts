import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServerToExit, startServerProcess, type ServerProcess } from './processes.ts';

// Contract §11: `npm start` on the embedded database, as a user runs it.
describe.skipIf(!!process.env.DATABASE_URL)('the embedded server process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'callforge-embedded-'));
  let server: ServerProcess;

  beforeAll(async () => {
    // HOST unset, as `npm start` runs it: the embedded server listens on the loopback address only.
    // A fresh data directory runs initdb first: slow on a busy machine.
    server = await startServerProcess({ DATA_DIR: dataDir, DATABASE_URL: undefined, DEMO_BOOTSTRAP: '1', HOST: undefined }, [], 150_000);
  }, 180_000);
  afterAll(() => server?.stop());

  it('creates a demo tenant on first start and prints a working API key once', async () => {
    const deadline = Date.now() + 20_000;
    while (!/aok_[A-Za-z0-9_-]{43}/.test(server.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const key = /aok_[A-Za-z0-9_-]{43}/.exec(server.output())![0];
    expect(server.output()).toMatch(/Dashboard login: demo-[0-9a-f]+@callforge\.local \/ \S+/);
    const response = await fetch(`${server.url}/api/v1/profile`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: { tenant: { name: string } } }).data.tenant.name).toMatch(/^Demo [0-9a-f]{6}$/);
  });

  it('prints where the dashboard, the API docs and the data are, and which database it uses', async () => {
    const port = new URL(server.url).port;
    const output = server.output();
    expect(output).toContain(`Dashboard:  http://localhost:${port}/`);
    expect(output).toContain(`API docs:   http://localhost:${port}/docs`);
    expect(output).toContain(`Database:   embedded PostgreSQL (PGlite) in ${resolve(dataDir, 'pg')}`);
    expect(output).toContain(`Data dir:   ${resolve(dataDir)}`);
    expect(output).toContain(`Listening:  127.0.0.1:${port}, this machine only`);
    expect(output).toContain('Sign-up:    open');
  });

  it('listens on 127.0.0.1 by default: another address of this machine is refused', async () => {
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal);
    if (!outside) return; // a machine with no other address has nothing more to show
    const port = Number(new URL(server.url).port);
    const refused = await new Promise<string>((done) => {
      const socket = connect({ host: outside.address, port }, () => {
        socket.destroy();
        done('connected');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('logs one JSON line per request, when it is answered, with method, URL, status and milliseconds', async () => {
    const requestId = `one-line-${Date.now()}`;
    expect((await fetch(`${server.url}/api/v1/profile`, { headers: { 'x-request-id': requestId } })).status).toBe(401);
    const lines = () =>
      server
        .output()
        .split('\n')
        .filter((line) => line.includes(`"reqId":"${requestId}"`));
    const deadline = Date.now() + 10_000;
    while (lines().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines()).toHaveLength(1);
    const entry = JSON.parse(lines()[0]!) as { request: Record<string, unknown>; msg: string };
    expect(entry.request).toMatchObject({ method: 'GET', url: '/api/v1/profile', status: 401, ms: expect.any(Number) });
    expect(entry.msg).toMatch(/^GET \/api\/v1\/profile 401 [0-9.]+ ms$/);
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
    expect(sent[0]).toMatchObject({ channel: 'SMS', body: expect.stringMatching(/^(Thanks for taking our call, |Hi )/) });
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
