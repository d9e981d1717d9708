/**
 * Post-call dispatch throughput on PostgreSQL: N ended calls, each with a `call.ended` job, run
 * through the real job handlers (afterCallEnded, then `message.send`) in this process, sending one
 * WhatsApp message (to a local fake of the Graph API) and one SMS (SIMULATOR) per call.
 * Prints messages delivered per second. See bench/README.md.
 */
import { jobDefinitions } from '../src/jobs.ts';
import { fixed, inProcessRuntime, intFromEnv, runBench, table, workUntilSettled } from './harness.ts';
import { endedCalls, fakeWhatsAppOnThread, setUpPostCallTenant } from './post-call-tenant.ts';

const CALLS = intFromEnv('BENCH_MESSAGING_CALLS', 5000, 1);
const TIMEOUT_S = 600;
const POLL_MS = 100;

async function main(): Promise<number> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    process.stderr.write(
      'bench:messaging needs PostgreSQL: set DATABASE_URL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:messaging\n',
    );
    return 1;
  }

  const graph = await fakeWhatsAppOnThread();
  const { runtime, app, where } = await inProcessRuntime(adminUrl, { WHATSAPP_API_URL: graph.url });

  process.stdout.write(
    `callforge messaging bench on PostgreSQL (${where}): ${CALLS.toLocaleString('en-US')} ended calls, WhatsApp (fake Graph API) + SMS (SIMULATOR) each; node ${process.version}\n`,
  );

  // Setup over HTTP, as a dashboard user would: tenant, WhatsApp integration, agent, campaigns.
  const request = async (method: 'GET' | 'POST' | 'PUT', path: string, token: string | undefined, payload?: object) => {
    const response = await app.inject({
      method,
      url: `/api/v1${path}`,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      ...(payload ? { payload } : {}),
    });
    if (response.statusCode >= 300) throw new Error(`${method} ${path} answered ${response.statusCode}: ${response.body}`);
    return response.json() as Record<string, unknown>;
  };
  const tenant = await setUpPostCallTenant(request);

  // N ended calls, written directly, and one call.ended job each (what the end of a call enqueues).
  const setupStarted = performance.now();
  const written = await endedCalls(runtime, tenant, CALLS);
  process.stdout.write(
    `setup: ${written.toLocaleString('en-US')} calls and call.ended jobs written in ${fixed((performance.now() - setupStarted) / 1_000, 1)} s; starting the workers\n`,
  );

  // The measurement: from starting the workers until every message has left the queue.
  const expected = 2 * CALLS;
  const settledCount = async () =>
    (await runtime.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE status NOT IN ('QUEUED', 'SENDING')`)).rows[0]!.n;
  const seconds = await workUntilSettled(() => runtime.jobs.work(jobDefinitions(runtime)), settledCount, {
    expected,
    what: 'messages',
    timeoutS: TIMEOUT_S,
    pollMs: POLL_MS,
  });

  const atTheFake = await graph.received();
  const byStatus = (
    await runtime.db.query<{ channel: string; status: string; n: number }>(
      `SELECT channel, status, count(*)::int AS n FROM messages GROUP BY 1, 2 ORDER BY 1, 2`,
    )
  ).rows;
  const total = byStatus.reduce((sum, row) => sum + row.n, 0);
  const sent = byStatus.filter((row) => row.status === 'SENT').reduce((sum, row) => sum + row.n, 0);
  process.stdout.write(
    `\n${table(
      [
        ['calls', 'messages', 'seconds', 'messages/s', 'fake WhatsApp received'],
        [
          CALLS.toLocaleString('en-US'),
          total.toLocaleString('en-US'),
          fixed(seconds, 2),
          fixed(total / seconds, 1),
          atTheFake.toLocaleString('en-US'),
        ],
      ],
      () => true,
    )}\n` + `by channel and status: ${byStatus.map((row) => `${row.channel} ${row.status} ${row.n}`).join(', ')}\n`,
  );
  if (atTheFake !== CALLS || total !== expected || sent !== expected) {
    process.stdout.write(
      `FAILED: expected ${expected} messages, all SENT, and ${CALLS} WhatsApp messages at the fake; got ${total} messages, ${sent} SENT, ${atTheFake} at the fake\n`,
    );
    return 1;
  }
  return 0;
}

await runBench(main);
