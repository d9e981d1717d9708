/**
 * Webhook delivery throughput on PostgreSQL: N events (`campaign.status_changed`), each with one
 * delivery to a local receiver, sent by the real `webhook.deliver` jobs in this process: signed per
 * Standard Webhooks and posted through the safe HTTP client. The receiver verifies every
 * signature. Prints deliveries per second. See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { jobDefinitions } from '../src/jobs.ts';
import { emitEvent } from '../src/modules/events/service.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { listenOnLoopback } from '../src/providers/fake-server.ts';
import { fixed, inProcessRuntime, intFromEnv, onCleanup, runBench, table, workUntilSettled } from './harness.ts';

const EVENTS = intFromEnv('BENCH_WEBHOOK_EVENTS', 5000, 1);
const TIMEOUT_S = 600;
const POLL_MS = 100;
const EMIT_BATCH = 500;

async function main(): Promise<number> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    process.stderr.write(
      'bench:webhooks needs PostgreSQL: set DATABASE_URL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:webhooks\n',
    );
    return 1;
  }
  // The receiver checks every signature with the reference library; the secret is known after setup.
  const verifier: { current?: Webhook } = {};
  let verified = 0;
  let refused = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        verifier.current!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
        verified++;
        res.writeHead(204).end();
      } catch {
        refused++;
        res.writeHead(400).end();
      }
    });
  });
  const receiver = await listenOnLoopback(server);
  onCleanup('close the receiver', () => receiver.close());

  const { runtime, app, where } = await inProcessRuntime(adminUrl, { ALLOW_PRIVATE_URLS: '1' });
  process.stdout.write(
    `callforge webhooks bench on PostgreSQL (${where}): ${EVENTS.toLocaleString('en-US')} events to a local receiver; node ${process.version}\n`,
  );

  const request = async (path: string, token: string | undefined, payload: object) => {
    const response = await app.inject({
      method: 'POST',
      url: `/api/v1${path}`,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      payload,
    });
    if (response.statusCode >= 300) throw new Error(`POST ${path} answered ${response.statusCode}: ${response.body}`);
    return response.json() as Record<string, unknown>;
  };
  const suffix = randomBytes(6).toString('hex');
  const session = await request('/auth/signup', undefined, {
    tenantName: `Bench ${suffix}`,
    email: `bench-${suffix}@example.com`,
    password: randomBytes(18).toString('base64url'),
  });
  const tenantId = (session.user as { tenantId: string }).tenantId;
  const key = await request('/api-keys', session.accessToken as string, { name: 'bench', webhookUrl: `${receiver.url}/hooks` });
  verifier.current = new Webhook(key.webhookSecret as string);

  const setupStarted = performance.now();
  const ctx = tenantCtx(runtime, tenantId);
  for (let start = 0; start < EVENTS; start += EMIT_BATCH) {
    await runtime.db.transaction(async (tx) => {
      for (let i = start; i < Math.min(EVENTS, start + EMIT_BATCH); i++)
        await emitEvent({ ...ctx, db: tx }, 'campaign.status_changed', { campaignId: `bench-${i}`, status: 'RUNNING' }, null);
    });
  }
  process.stdout.write(
    `setup: ${EVENTS.toLocaleString('en-US')} events with their deliveries written in ${fixed((performance.now() - setupStarted) / 1_000, 1)} s; starting the workers\n`,
  );

  const settledCount = async () =>
    (await runtime.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'PENDING'")).rows[0]!.n;
  const seconds = await workUntilSettled(() => runtime.jobs.work(jobDefinitions(runtime)), settledCount, {
    expected: EVENTS,
    what: 'deliveries',
    timeoutS: TIMEOUT_S,
    pollMs: POLL_MS,
  });
  const delivered = (await runtime.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'DELIVERED'"))
    .rows[0]!.n;
  process.stdout.write(
    `\n${table(
      [
        ['events', 'delivered', 'seconds', 'deliveries/s', 'signatures verified', 'refused'],
        [
          EVENTS.toLocaleString('en-US'),
          delivered.toLocaleString('en-US'),
          fixed(seconds, 2),
          fixed(delivered / seconds, 1),
          verified.toLocaleString('en-US'),
          String(refused),
        ],
      ],
      () => true,
    )}\n`,
  );
  if (delivered !== EVENTS || verified !== EVENTS || refused !== 0) {
    process.stdout.write(
      `FAILED: expected ${EVENTS} deliveries, all DELIVERED and verified; got ${delivered} delivered, ${verified} verified, ${refused} refused\n`,
    );
    return 1;
  }
  return 0;
}

await runBench(main);
