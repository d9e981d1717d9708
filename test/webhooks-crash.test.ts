import { randomInt } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecretsKey } from '../src/platform/secrets.ts';
import { listenOnLoopback } from '../src/providers/fake-server.ts';
import { createTestDatabase, until } from './harness.ts';
import { apiRequest, startServerProcess, startWorkerProcess, type ServerProcess } from './processes.ts';

// Contract §9, issue 7: "a crashed worker loses no event". A worker process is SIGKILLed while
// its webhook POST is in flight (the receiver holds the first request open); another worker
// process delivers the same event, with the same webhook-id, verified by the reference library.
// Two processes on one database: PostgreSQL only (PGlite is one process by design).

describe.skipIf(!process.env.DATABASE_URL)('webhook delivery when a worker is killed mid-request', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let api: ServerProcess;
  const workers: ServerProcess[] = [];
  let receiver: { url: string; close(): Promise<void> };
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const held: ServerResponse[] = [];
  const secretsKey = generateSecretsKey();

  beforeAll(async () => {
    receiver = await listenOnLoopback(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          // The first request is never answered: its worker dies waiting.
          if (received.length === 1) held.push(res);
          else res.writeHead(204).end();
        });
      }),
    );
    database = await createTestDatabase('callforge_hookcrash');
    // The webhook receiver is on loopback, refused at save otherwise.
    api = await startServerProcess(
      { DATABASE_URL: database!.url, SECRETS_KEY: secretsKey, ALLOW_PRIVATE_URLS: '1' },
      ['--role', 'api'],
      90_000,
    );
  }, 120_000);

  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    for (const res of held) res.destroy();
    await api?.stop();
    await receiver?.close();
    await database?.drop();
  }, 60_000);

  const startWorker = async () => {
    const worker = await startWorkerProcess({
      DATABASE_URL: database!.url,
      SECRETS_KEY: secretsKey,
      ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_RETRY_SECONDS: '1',
      JOBS_MAINTENANCE_SECONDS: '1',
      JOBS_POLL_SECONDS: '0.5',
    });
    workers.push(worker);
    return worker;
  };

  const http = async (method: string, path: string, token: string | undefined, body?: unknown) =>
    (await apiRequest(api.url, method, path, token, body)).body;

  it('delivers the event once another worker takes over, with the same webhook-id and a valid signature', async () => {
    const tag = randomInt(1_000_000_000).toString(36);
    const signup = await http('POST', '/auth/signup', undefined, {
      tenantName: `Hook crash ${tag}`,
      email: `hook-${tag}@example.com`,
      password: 'long enough password',
    });
    const created = await http('POST', '/api-keys', signup.accessToken as string, { name: 'crash', webhookUrl: `${receiver.url}/hook` });
    const key = created.key as string;
    const verifier = new Webhook(created.webhookSecret as string);

    const first = await startWorker();
    // A processed knowledge source is the event: the change and its outbox row commit together.
    const base = await http('POST', '/knowledge-bases', key, { name: 'Crash' });
    await http('POST', `/knowledge-bases/${base.id as string}/sources`, key, {
      sourceType: 'text',
      sourceName: 'Note',
      rawText: 'The gate opens at nine.',
    });

    await until('the first delivery attempt to reach the receiver', () => received.length === 1, 60_000);
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;

    await startWorker();
    await until('the delivery to be retried by the second worker', () => received.length >= 2, 90_000);
    const [attempt, retry] = received;
    expect(retry!.headers['webhook-id']).toBe(attempt!.headers['webhook-id']);
    const payload = verifier.verify(retry!.body, retry!.headers as Record<string, string>) as { type: string; data: { status: string } };
    expect(payload).toMatchObject({ type: 'knowledge_source.processed', data: { status: 'READY' } });

    const deliveries = await until(
      'the delivery to be recorded as delivered',
      async () => {
        const page = (await http('GET', '/webhook-deliveries', key)) as { data: { status: string; eventId: string }[] };
        return page.data[0]?.status === 'DELIVERED' && page.data;
      },
      30_000,
    );
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.eventId).toBe(attempt!.headers['webhook-id']);
  }, 240_000);
});
