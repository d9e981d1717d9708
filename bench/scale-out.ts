/**
 * Scale-out on one PostgreSQL: what N API processes and N worker processes serve together, for
 * N = 1 and N = 2, each on a fresh database, in the same run.
 *
 * - Requests: autocannon on GET /api/v1/profile (an API key; one statement per request) against
 *   every API process at once, BENCH_CONNECTIONS split between them; the sum of req/s.
 * - Post-call messages: BENCH_SCALE_CALLS ended calls with their call.ended jobs, committed at
 *   once while the workers wait; each call sends one WhatsApp message (to a local fake of the
 *   Graph API) and one SMS (SIMULATOR). Messages/s from the commit until every message is settled,
 *   and no duplicate: one message per call and channel, each claimed once (attempts = 1), and the
 *   fake received exactly one WhatsApp message per call.
 * - Dialled attempts: BENCH_SCALE_CAMPAIGNS campaigns (default 4) of one tenant share
 *   BENCH_SCALE_CONTACTS contacts (default 30,000), SIMULATOR calls that end at once, the highest
 *   concurrency a campaign accepts (50), one attempt each; all are started together and
 *   attempts/s is counted until every campaign is COMPLETED. No over-dial: one call per contact,
 *   and a sampler reading the calls in progress of each campaign every few milliseconds never saw
 *   more than the campaign's limit.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:scale-out
 *
 * The processes are `node --import tsx src/main.ts` with ROLE=api or ROLE=worker, each limited to
 * BENCH_SCALE_CORES cores (a control group's quota; `none`: no limit). The CPU each unit of work
 * cost, in the processes and in PostgreSQL, is printed after the table. See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import {
  CONNECTIONS,
  DURATION,
  fixed,
  intFromEnv,
  runBench,
  sleep,
  startServer,
  table,
  WARMUP,
  withClient,
  withPostgres,
  type Server,
} from './harness.ts';
import {
  campaignView,
  INSTANT_CALLS,
  MAX_CONCURRENT_CALLS,
  setUpCampaign,
  setUpDialTenant,
  startCampaign,
  type DialTenant,
} from './dial-campaign.ts';
import { endedCalls, fakeWhatsApp, setUpPostCallTenant, type Request } from './post-call-tenant.ts';
import { cpuMeter, cpuQuota } from './process-cpu.ts';

const CALLS = intFromEnv('BENCH_SCALE_CALLS', 6000, 1);
const CAMPAIGNS = intFromEnv('BENCH_SCALE_CAMPAIGNS', 4, 1);
const CONTACTS = intFromEnv('BENCH_SCALE_CONTACTS', 30_000, CAMPAIGNS);
/**
 * The cores each API and worker process may use (a control group's quota), so that a second
 * process brings CPU of its own, as on a machine of its own; `none`: no limit, every process
 * shares the machine's cores.
 */
const CORES = processCores(process.env.BENCH_SCALE_CORES ?? '0.4');
/** How often the over-dial sampler reads the calls in progress. */
const SAMPLE_MS = 5;
const TIMEOUT_S = 600;
const POLL_MS = 100;

interface Run {
  processes: number;
  reqPerSec: number;
  non2xx: number;
  errors: number;
  messages: number;
  seconds: number;
  duplicates: number;
  whatsappReceived: number;
  attempts: number;
  dialSeconds: number;
  /** Contacts called more than once. */
  redialled: number;
  /** The most calls in progress the sampler saw in one campaign, and how many samples it took. */
  peakLive: number;
  samples: number;
  /** CPU seconds of the API processes and of PostgreSQL under the request load, of the workers (and PostgreSQL) while messages and calls went out. */
  cpu: Record<'requests' | 'messages' | 'dial', { processes: number; postgres: number }>;
}

function processCores(raw: string): number | undefined {
  if (raw === 'none') return undefined;
  const cores = Number(raw);
  if (!Number.isFinite(cores) || cores < 0.05 || cores > 64)
    throw new Error(`BENCH_SCALE_CORES=${JSON.stringify(raw)} is invalid: expected cores per process (e.g. 0.4) or none.`);
  return cores;
}

/** Starts an API or worker process, inside its own CPU quota when the bench has one. */
function startProcess(role: 'api' | 'worker', index: number, processes: number, env: Record<string, string>): Promise<Server> {
  const label = `${role} ${index}`;
  const quota = CORES === undefined ? undefined : cpuQuota(`${processes}-${role}-${index}`, CORES);
  return startServer(label, { ...env, ROLE: role }, quota);
}

async function loadAll(apis: Server[], key: string, duration: number) {
  const connections = Math.max(1, Math.floor(CONNECTIONS / apis.length));
  const results = await Promise.all(
    apis.map((api) =>
      autocannon({ url: `${api.base}/api/v1/profile`, headers: { authorization: `Bearer ${key}` }, connections, duration, timeout: 10 }),
    ),
  );
  return {
    reqPerSec: results.reduce((sum, r) => sum + r.requests.average, 0),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    errors: results.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
  };
}

async function run(adminUrl: string, processes: number): Promise<Run> {
  return withPostgres(adminUrl, async (engine) => {
    const graph = await fakeWhatsApp();
    const env = { ...engine.serverEnv, ...INSTANT_CALLS, STARTING_CREDIT: '1000', WHATSAPP_API_URL: graph.url, JOBS_POLL_SECONDS: '0.5' };
    const say = (line: string) => process.stdout.write(`[${processes} + ${processes}] ${line}\n`);
    say('starting the API processes…');
    const apis: Server[] = [];
    const workers: Server[] = [];
    try {
      // One after the other: the first creates the schema, the others find it.
      for (let i = 0; i < processes; i++) apis.push(await startProcess('api', i + 1, processes, env));
      const request: Request = async (method, path, token, payload) => {
        const response = await fetch(`${apis[0]!.base}/api/v1${path}`, {
          method,
          headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(payload ? { 'content-type': 'application/json' } : {}) },
          ...(payload ? { body: JSON.stringify(payload) } : {}),
        });
        const text = await response.text();
        if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
        return JSON.parse(text) as Record<string, unknown>;
      };
      const tenant = await setUpPostCallTenant(request);

      say(`loading GET /api/v1/profile on ${processes} API process(es), ${CONNECTIONS} connections in all, ${DURATION} s…`);
      if (WARMUP > 0) await loadAll(apis, tenant.key, WARMUP);
      const requestsCpu = cpuMeter(apis.map((api) => api.child.pid!));
      const requests = await loadAll(apis, tenant.key, DURATION);
      const cpu = { requests: requestsCpu() } as Run['cpu'];

      say('starting the worker processes…');
      for (let i = 0; i < processes; i++) workers.push(await startProcess('worker', i + 1, processes, env));

      // The jobs are written through the job queue's own client, in one transaction: they appear at once.
      const [{ loadConfig }, { IN_MEMORY, openRuntime }, { createLogger }] = await Promise.all([
        import('../src/config.ts'),
        import('../src/runtime.ts'),
        import('../src/platform/logger.ts'),
      ]);
      const config = loadConfig({ DATA_DIR: IN_MEMORY, LOG_LEVEL: 'warn', DEMO_BOOTSTRAP: '0', ...engine.serverEnv, ROLE: 'api' });
      const runtime = await openRuntime(config, { log: createLogger('warn'), superviseJobs: false });
      let seconds: number;
      try {
        say(`committing ${CALLS.toLocaleString('en-US')} ended calls with their call.ended jobs…`);
        const messagesCpu = cpuMeter(workers.map((worker) => worker.child.pid!));
        const started = performance.now();
        await endedCalls(runtime, tenant, CALLS, CALLS);
        const expected = 2 * CALLS;
        for (;;) {
          const { rows } = await runtime.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM messages WHERE status NOT IN ('QUEUED', 'SENDING')`,
          );
          if (rows[0]!.n >= expected) break;
          if (performance.now() - started > TIMEOUT_S * 1_000)
            throw new Error(`only ${rows[0]!.n} of ${expected} messages settled in ${TIMEOUT_S} s`);
          await sleep(POLL_MS);
        }
        seconds = (performance.now() - started) / 1_000;
        cpu.messages = messagesCpu();
      } finally {
        await runtime.close();
      }

      const counts = await withClient(engine.databaseUrl!, async (client) => {
        const { rows } = await client.query<{ messages: number; sent: number; duplicates: number }>(
          `SELECT count(*)::int AS messages,
                  count(*) FILTER (WHERE status = 'SENT' AND attempts = 1)::int AS sent,
                  (SELECT count(*)::int FROM (SELECT 1 FROM messages GROUP BY call_id, channel HAVING count(*) > 1) d) AS duplicates
           FROM messages`,
        );
        return rows[0]!;
      });
      if (counts.sent !== counts.messages) say(`WARNING: ${counts.messages - counts.sent} messages not SENT at the first attempt`);

      say(`setting up ${CAMPAIGNS} campaigns of ${CONTACTS.toLocaleString('en-US')} contacts in all…`);
      const dialTenant = await setUpDialTenant(apis[0]!.base);
      const campaignIds: string[] = [];
      for (let i = 0; i < CAMPAIGNS; i++) {
        const share = Math.floor(CONTACTS / CAMPAIGNS) + (i < CONTACTS % CAMPAIGNS ? 1 : 0);
        campaignIds.push((await setUpCampaign(dialTenant, share)).campaignId);
      }
      say('dialling…');
      const dialCpu = cpuMeter(workers.map((worker) => worker.child.pid!));
      const dial = await dialAll(engine.databaseUrl!, dialTenant, campaignIds);
      cpu.dial = dialCpu();
      say(
        `   ${dial.attempts.toLocaleString('en-US')} attempts in ${fixed(dial.seconds, 2)} s; at most ${dial.peakLive} calls in progress in one campaign (${dial.samples} samples)`,
      );
      return {
        processes,
        ...requests,
        messages: counts.messages,
        seconds,
        duplicates: counts.duplicates + (counts.messages - counts.sent),
        whatsappReceived: graph.messages.length,
        attempts: dial.attempts,
        dialSeconds: dial.seconds,
        redialled: dial.redialled,
        peakLive: dial.peakLive,
        samples: dial.samples,
        cpu,
      };
    } finally {
      for (const server of [...workers, ...apis]) await server.stop();
    }
  });
}

/**
 * Starts every campaign and waits until all are COMPLETED, sampling the calls in progress of each
 * campaign meanwhile; then counts the attempts and the contacts called more than once.
 */
async function dialAll(databaseUrl: string, tenant: DialTenant, campaignIds: string[]) {
  let done = false;
  const sampler = withClient(databaseUrl, async (client) => {
    let peakLive = 0;
    let samples = 0;
    while (!done) {
      const { rows } = await client.query<{ live: number }>(
        `SELECT coalesce(max(n), 0)::int AS live
         FROM (SELECT count(*) AS n FROM campaign_contacts WHERE status = 'IN_PROGRESS' GROUP BY campaign_id) c`,
      );
      peakLive = Math.max(peakLive, rows[0]!.live);
      samples++;
      await sleep(SAMPLE_MS);
    }
    return { peakLive, samples };
  });
  try {
    const started = performance.now();
    for (const id of campaignIds) await startCampaign(tenant, id);
    const pending = new Set(campaignIds);
    while (pending.size > 0) {
      for (const id of [...pending]) if ((await campaignView(tenant, id)).status === 'COMPLETED') pending.delete(id);
      if (performance.now() - started > TIMEOUT_S * 1_000) throw new Error(`${pending.size} campaigns did not complete in ${TIMEOUT_S} s`);
      if (pending.size > 0) await sleep(POLL_MS);
    }
    const seconds = (performance.now() - started) / 1_000;
    const counts = await withClient(databaseUrl, async (client) => {
      const { rows } = await client.query<{ attempts: number; redialled: number }>(
        `SELECT count(*)::int AS attempts,
                (SELECT count(*)::int FROM (SELECT 1 FROM calls WHERE campaign_id = ANY ($1::uuid[]) GROUP BY contact_id HAVING count(*) > 1) d) AS redialled
         FROM calls WHERE campaign_id = ANY ($1::uuid[])`,
        [campaignIds],
      );
      return rows[0]!;
    });
    done = true;
    return { ...counts, seconds, ...(await sampler) };
  } finally {
    done = true;
    await sampler.catch(() => undefined);
  }
}

async function main(): Promise<number> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    process.stderr.write(
      'bench:scale-out needs PostgreSQL: set DATABASE_URL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres\n',
    );
    return 1;
  }
  process.stdout.write(
    `callforge scale-out bench: 1 + 1 then 2 + 2 API and worker processes on one PostgreSQL; ${CALLS.toLocaleString('en-US')} ended calls; ${CAMPAIGNS} campaigns of ${CONTACTS.toLocaleString('en-US')} contacts; ${CORES === undefined ? 'no CPU limit per process' : `each process limited to ${CORES} cores`}; node ${process.version}; run ${randomBytes(3).toString('hex')}\n`,
  );
  const runs: Run[] = [];
  for (const processes of [1, 2]) runs.push(await run(adminUrl, processes));
  const [one, two] = runs as [Run, Run];
  process.stdout.write(
    `\n${table(
      [
        [
          'API + workers',
          'profile req/s',
          'non-2xx/errors',
          'messages',
          'seconds',
          'messages/s',
          'duplicates',
          'WhatsApp at the fake',
          'attempts',
          'seconds',
          'attempts/s',
          'contacts called twice',
          'most calls in progress',
        ],
        ...runs.map((r) => [
          `${r.processes} + ${r.processes}`,
          fixed(r.reqPerSec, 1),
          `${r.non2xx}/${r.errors}`,
          String(r.messages),
          fixed(r.seconds, 2),
          fixed(r.messages / r.seconds, 1),
          String(r.duplicates),
          String(r.whatsappReceived),
          String(r.attempts),
          fixed(r.dialSeconds, 2),
          fixed(r.attempts / r.dialSeconds, 1),
          String(r.redialled),
          `${r.peakLive} (limit ${MAX_CONCURRENT_CALLS})`,
        ]),
        [
          '2 / 1',
          `${fixed(two.reqPerSec / one.reqPerSec, 2)}x`,
          '',
          '',
          '',
          `${fixed(two.messages / two.seconds / (one.messages / one.seconds), 2)}x`,
          '',
          '',
          '',
          '',
          `${fixed(two.attempts / two.dialSeconds / (one.attempts / one.dialSeconds), 2)}x`,
          '',
          '',
        ],
      ],
      (column) => column > 0,
    )}\n`,
  );
  const ms = (seconds: number, per: number) => fixed((seconds * 1_000) / per, 3);
  process.stdout.write(
    `\nCPU per unit of work, in ms (the API processes' under the request load, the workers' while messages and calls went out; PostgreSQL's in each):\n${table(
      [
        [
          'API + workers',
          'API per request',
          'PostgreSQL per request',
          'workers per message',
          'PostgreSQL per message',
          'workers per attempt',
          'PostgreSQL per attempt',
        ],
        ...runs.map((r) => {
          const requests = r.reqPerSec * DURATION;
          return [
            `${r.processes} + ${r.processes}`,
            ms(r.cpu.requests.processes, requests),
            ms(r.cpu.requests.postgres, requests),
            ms(r.cpu.messages.processes, r.messages),
            ms(r.cpu.messages.postgres, r.messages),
            ms(r.cpu.dial.processes, r.attempts),
            ms(r.cpu.dial.postgres, r.attempts),
          ];
        }),
      ],
      (column) => column > 0,
    )}\n`,
  );
  const clean = runs.every(
    (r) =>
      r.duplicates === 0 &&
      r.messages === 2 * CALLS &&
      r.whatsappReceived === CALLS &&
      r.non2xx + r.errors === 0 &&
      r.attempts === CONTACTS &&
      r.redialled === 0 &&
      r.peakLive <= MAX_CONCURRENT_CALLS,
  );
  if (!clean)
    process.stdout.write(
      'FAILED: a duplicate, a missing message, a failed request, a missed or repeated call or an over-dial (see the table)\n',
    );
  return clean ? 0 : 1;
}

await runBench(main);
