/**
 * Dialer throughput and worker memory on PostgreSQL: BENCH_DIALER_CONTACTS contacts (default
 * 20,000) on the SIMULATOR with instant calls (ring 0 s, talk 0 s) and the highest concurrency a
 * campaign allows (50), in one campaign and then shared by BENCH_DIALER_CAMPAIGNS campaigns
 * (default 4), each dialled by one and then by two worker processes; then a smaller campaign
 * (BENCH_DIALER_SMALL, default 2,000) with one worker, to compare peak memory. One campaign is
 * claimed by one worker at a time (its row lock holds its concurrency), so what a second worker
 * adds shows where there are several campaigns to dial.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:dialer
 *   BENCH_DIALER_CONTACTS=5000 BENCH_DIALER_SMALL=500 DATABASE_URL=… npm run bench:dialer   # quick run
 *
 * Each run gets a fresh database, one API process (`--role api`) to set the campaign up over HTTP,
 * and N worker processes (`--role worker`). The clock starts when POST /campaigns/{id}/start is
 * sent (after every worker logged that it started) and stops when GET /campaigns/{id} says
 * COMPLETED (polled every 250 ms). Attempts per second = rows in `calls` for the campaign / seconds.
 * Each worker's RSS (VmRSS of /proc/<pid>/status) is sampled every 250 ms from its start.
 * The tables are new in every run. When the server runs without autovacuum (this machine's), the
 * processes analyze and vacuum changed tables themselves (ANALYZE_SECONDS, src/platform/analyze.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  campaignView,
  INSTANT_CALLS,
  MAX_CONCURRENT_CALLS,
  setUpCampaign,
  setUpDialTenant,
  startCampaign,
  walletBalance,
  type CampaignView,
} from './dial-campaign.ts';
import { fixed, intFromEnv, onCleanup, runBench, sleep, startServer, table, withClient } from './harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const CONTACTS = intFromEnv('BENCH_DIALER_CONTACTS', 20_000, 2);
const SMALL_CONTACTS = intFromEnv('BENCH_DIALER_SMALL', 2_000, 2);
/** The campaigns of the runs that share the contacts between campaigns. */
const CAMPAIGNS = intFromEnv('BENCH_DIALER_CAMPAIGNS', 4, 2);
/** Seconds a campaign may take before the run fails. */
const CAMPAIGN_TIMEOUT_S = intFromEnv('BENCH_DIALER_TIMEOUT', 1_800, 1);

const POLL_MS = 250;
const RSS_SAMPLE_MS = 250;
const PROGRESS_EVERY_MS = 2_000;
const TARGET_ATTEMPTS_PER_SECOND = 1000;
const WORKER_READY_TIMEOUT_MS = 60_000;
const WORKER_STOP_TIMEOUT_MS = 15_000;
const WORKER_STARTED = 'workers and dialer started';
/** The API gets this much starting credit; at 0 s of talk a call costs nothing, checked after each run. */
const STARTING_CREDIT = '1000';

const PROTECTED_DATABASES = new Set(['test', 'root', 'postgres', 'template0', 'template1']);
const BENCH_DATABASE = /^callforge_bench_[a-f0-9]+$/;

// ---------------------------------------------------------------------------------------------
// A fresh database per run, named and dropped like harness.ts does it.

/**
 * Set on Ctrl-C / SIGTERM. runBench then runs the registered cleanups and exits once they are done;
 * a drop started from a finally block instead would be taken off that list and cut short by the
 * exit, so after a signal the drop is left to runBench.
 */
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void (interrupted = true));

interface Database {
  name: string;
  url: string;
  secretsKey: string;
}

function assertBenchDatabase(name: string) {
  if (PROTECTED_DATABASES.has(name) || !BENCH_DATABASE.test(name)) throw new Error(`refusing to touch database ${JSON.stringify(name)}`);
}

async function withDatabase<T>(adminUrl: string, work: (database: Database) => Promise<T>): Promise<T> {
  const name = `callforge_bench_${randomBytes(6).toString('hex')}`;
  assertBenchDatabase(name);
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const drop = onCleanup(`drop database ${name}`, async () => {
    assertBenchDatabase(name);
    await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  });
  try {
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return await work({ name, url: url.toString(), secretsKey: randomBytes(32).toString('base64') });
  } finally {
    if (!interrupted) await drop();
  }
}

// ---------------------------------------------------------------------------------------------
// Worker processes: `node --import tsx src/main.ts --role worker`; ready when it logs WORKER_STARTED.

interface Worker {
  pid: number;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

async function startWorker(label: string, env: Record<string, string>): Promise<Worker> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.DATABASE_URL;
  delete childEnv.SECRETS_KEY;
  Object.assign(childEnv, { LOG_LEVEL: 'info', DEMO_BOOTSTRAP: '0', ...env });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--role', 'worker'], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`${label}: could not spawn node`);
  const pid = child.pid;

  let output = '';
  let pending = '';
  let started = false;
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-16_384);
  };
  child.stderr!.on('data', keep);
  child.stdout!.on('data', (chunk: Buffer) => {
    keep(chunk);
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      try {
        if ((JSON.parse(line) as { msg?: unknown }).msg === WORKER_STARTED) started = true;
      } catch {
        // not a pino line
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitCode: number | null | undefined;
  child.once('exit', (code, signal) => {
    exitCode = code ?? (signal ? -1 : null);
  });

  const stop = onCleanup(`stop ${label}`, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited.then(() => true), sleep(WORKER_STOP_TIMEOUT_MS).then(() => false)]);
    if (!stopped) {
      process.stderr.write(`${label} did not exit ${WORKER_STOP_TIMEOUT_MS / 1000} s after SIGTERM; sending SIGKILL\n`);
      child.kill('SIGKILL');
      await exited;
    }
  });

  const deadline = performance.now() + WORKER_READY_TIMEOUT_MS;
  while (!started) {
    if (exitCode !== undefined) throw new Error(`${label} exited during start (code ${exitCode}):\n${output}`);
    if (performance.now() > deadline)
      throw new Error(`${label} did not log "${WORKER_STARTED}" within ${WORKER_READY_TIMEOUT_MS / 1000} s:\n${output}`);
    await sleep(50);
  }
  return { pid, child, output: () => output, stop };
}

/** VmRSS of a process in bytes, from /proc/<pid>/status; undefined once it is gone. */
function rssOf(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Samples each pid's RSS every RSS_SAMPLE_MS; peak and first sample per pid. */
function sampleRss(pids: number[]) {
  const first = pids.map((pid) => rssOf(pid) ?? 0);
  const peak = [...first];
  const timer = setInterval(() => {
    pids.forEach((pid, i) => {
      const rss = rssOf(pid);
      if (rss !== undefined && rss > peak[i]!) peak[i] = rss;
    });
  }, RSS_SAMPLE_MS);
  return {
    first,
    peakSoFar: () => [...peak],
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One run.

interface RunSpec {
  label: string;
  workers: number;
  contacts: number;
  /** The contacts are shared by this many campaigns of the tenant, each with its own list. */
  campaigns: number;
}

interface RunResult extends RunSpec {
  seconds: number;
  attempts: number;
  attemptsPerSecond: number;
  /** Peak RSS per worker, bytes; and RSS when the worker had just started. */
  peakRss: number[];
  startRss: number[];
  answered: number;
  startRequestMs: number;
  fillSeconds: number;
  balanceBefore: string;
  balanceAfter: string;
}

const mb = (bytes: number) => fixed(bytes / (1024 * 1024), 1);
const sumOf = (views: CampaignView[], stat: keyof NonNullable<CampaignView['stats']>) =>
  views.reduce((sum, view) => sum + (view.stats?.[stat] ?? 0), 0);

async function benchRun(adminUrl: string, spec: RunSpec): Promise<RunResult> {
  const say = (line: string) => process.stdout.write(`[${spec.label}] ${line}\n`);
  return withDatabase(adminUrl, async (database) => {
    const dbEnv = { DATABASE_URL: database.url, SECRETS_KEY: database.secretsKey };
    process.stdout.write('\n');
    say(`database ${database.name}; starting the API process…`);
    const server = await startServer(`${spec.label} API`, { ...dbEnv, ...INSTANT_CALLS, STARTING_CREDIT, ROLE: 'api' });
    const workers: Worker[] = [];
    try {
      say(
        `setting up: tenant, key, agent, SIMULATOR number, ${spec.campaigns} campaign(s) on lists of ${spec.contacts.toLocaleString('en-US')} contacts in all…`,
      );
      const tenant = await setUpDialTenant(server.base);
      const campaignIds: string[] = [];
      let fillSeconds = 0;
      for (let i = 0; i < spec.campaigns; i++) {
        const share = Math.floor(spec.contacts / spec.campaigns) + (i < spec.contacts % spec.campaigns ? 1 : 0);
        const campaign = await setUpCampaign(tenant, share);
        campaignIds.push(campaign.campaignId);
        fillSeconds += campaign.fillSeconds;
      }
      const balanceBefore = await walletBalance(tenant);
      say(`   lists filled in ${fixed(fillSeconds, 1)} s; starting ${spec.workers} worker process${spec.workers > 1 ? 'es' : ''}…`);
      for (let i = 1; i <= spec.workers; i++) workers.push(await startWorker(`${spec.label} worker ${i}`, { ...dbEnv, ...INSTANT_CALLS }));
      const rss = sampleRss(workers.map((w) => w.pid));
      say(
        `   workers started (pids ${workers.map((w) => w.pid).join(', ')}; RSS ${rss.first.map(mb).join(', ')} MB); starting the campaign(s)`,
      );

      const started = performance.now();
      let startRequestMs = 0;
      for (const id of campaignIds) startRequestMs += await startCampaign(tenant, id);

      let views: CampaignView[];
      let lastProgress = started;
      for (;;) {
        views = [];
        for (const id of campaignIds) views.push(await campaignView(tenant, id));
        const now = performance.now();
        if (views.every((view) => view.status === 'COMPLETED')) break;
        for (const worker of workers) {
          if (worker.child.exitCode !== null || worker.child.signalCode !== null)
            throw new Error(`a worker (pid ${worker.pid}) exited during the run:\n${worker.output()}`);
        }
        if (now - started > CAMPAIGN_TIMEOUT_S * 1_000)
          throw new Error(
            `the campaigns did not complete within ${CAMPAIGN_TIMEOUT_S} s (BENCH_DIALER_TIMEOUT): ${JSON.stringify(views.map((view) => view.stats))}`,
          );
        if (now - lastProgress >= PROGRESS_EVERY_MS) {
          lastProgress = now;
          const total = sumOf(views, 'total');
          const done = total - sumOf(views, 'pending') - sumOf(views, 'inProgress');
          say(
            `   ${fixed((now - started) / 1_000, 0)} s: ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} contacts done (${fixed(done / ((now - started) / 1_000), 0)}/s); peak RSS so far ${rss.peakSoFar().map(mb).join(', ')} MB`,
          );
        }
        await sleep(POLL_MS);
      }
      const seconds = (performance.now() - started) / 1_000;
      const peakRss = rss.stop();

      const attempts = await withClient(database.url, async (client) => {
        const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE campaign_id = ANY ($1::uuid[])', [
          campaignIds,
        ]);
        return rows[0]!.n;
      });
      const [total, answered] = [sumOf(views, 'total'), sumOf(views, 'answered')];
      if (total !== spec.contacts || answered !== spec.contacts || attempts !== spec.contacts) {
        throw new Error(
          `expected ${spec.contacts} contacts, all ANSWERED in one call each; got ${attempts} calls and stats ${JSON.stringify(views.map((view) => view.stats))}`,
        );
      }
      const balanceAfter = await walletBalance(tenant);
      const result: RunResult = {
        ...spec,
        seconds,
        attempts,
        attemptsPerSecond: attempts / seconds,
        peakRss,
        startRss: rss.first,
        answered,
        startRequestMs,
        fillSeconds,
        balanceBefore,
        balanceAfter,
      };
      say(
        `   COMPLETED: ${attempts.toLocaleString('en-US')} calls in ${fixed(seconds, 2)} s = ${fixed(result.attemptsPerSecond, 1)} attempts/s` +
          ` (POST …/start took ${fixed(startRequestMs, 0)} ms of it); peak RSS ${peakRss.map(mb).join(', ')} MB; wallet ${balanceBefore} → ${balanceAfter}`,
      );
      return result;
    } finally {
      for (const worker of workers.reverse()) await worker.stop();
      await server.stop();
    }
  });
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    process.stderr.write(
      'bench:dialer needs PostgreSQL: set DATABASE_URL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:dialer\n',
    );
    return 1;
  }
  const runs: RunSpec[] = [
    { label: `${CONTACTS.toLocaleString('en-US')} contacts, 1 worker`, workers: 1, contacts: CONTACTS, campaigns: 1 },
    { label: `${CONTACTS.toLocaleString('en-US')} contacts, 2 workers`, workers: 2, contacts: CONTACTS, campaigns: 1 },
    {
      label: `${CONTACTS.toLocaleString('en-US')} contacts in ${CAMPAIGNS} campaigns, 1 worker`,
      workers: 1,
      contacts: CONTACTS,
      campaigns: CAMPAIGNS,
    },
    {
      label: `${CONTACTS.toLocaleString('en-US')} contacts in ${CAMPAIGNS} campaigns, 2 workers`,
      workers: 2,
      contacts: CONTACTS,
      campaigns: CAMPAIGNS,
    },
    { label: `${SMALL_CONTACTS.toLocaleString('en-US')} contacts, 1 worker`, workers: 1, contacts: SMALL_CONTACTS, campaigns: 1 },
  ];
  const autovacuum = await withClient(
    adminUrl,
    async (client) =>
      (await client.query<{ autovacuum: string }>("SELECT current_setting('autovacuum') AS autovacuum")).rows[0]!.autovacuum,
  );
  process.stdout.write(
    `callforge dialer bench on PostgreSQL: SIMULATOR, ring ${INSTANT_CALLS.SIMULATOR_RING_SECONDS} s, talk ${INSTANT_CALLS.SIMULATOR_TALK_SECONDS} s, ` +
      `maxConcurrentCalls ${MAX_CONCURRENT_CALLS}, maxAttempts 1, DIALER_TICK_MS=${INSTANT_CALLS.DIALER_TICK_MS}, DIALER_CALLS_PER_SECOND=${INSTANT_CALLS.DIALER_CALLS_PER_SECOND}; ` +
      `runs: ${runs.map((r) => r.label).join('; ')}; node ${process.version}\n` +
      `the server's autovacuum is ${autovacuum}${autovacuum === 'on' ? '' : '; the processes analyze and vacuum changed tables themselves (ANALYZE_SECONDS, default 10)'}\n`,
  );

  const results: RunResult[] = [];
  for (const spec of runs) results.push(await benchRun(adminUrl, spec));

  const rows = [
    ['run', 'workers', 'contacts', 'campaigns', 'seconds', 'attempts/s', 'peak RSS per worker (MB)', 'RSS at start (MB)'],
    ...results.map((r, i) => [
      String(i + 1),
      String(r.workers),
      r.contacts.toLocaleString('en-US'),
      String(r.campaigns),
      fixed(r.seconds, 2),
      fixed(r.attemptsPerSecond, 1),
      r.peakRss.map(mb).join(' / '),
      r.startRss.map(mb).join(' / '),
    ]),
  ];
  process.stdout.write(`\n${table(rows, (column) => column > 0 && column < 6)}\n`);

  const run = (workers: number, campaigns: number) =>
    results.find((r) => r.workers === workers && r.campaigns === campaigns && r.contacts === CONTACTS)!;
  const [oneAlone, twoAlone, oneShared, twoShared] = [run(1, 1), run(2, 1), run(1, CAMPAIGNS), run(2, CAMPAIGNS)];
  const small = results[results.length - 1]!;
  const verdict = (r: RunResult) =>
    `${r.attemptsPerSecond >= TARGET_ATTEMPTS_PER_SECOND ? 'met' : 'MISSED'} (${fixed(r.attemptsPerSecond, 1)} attempts/s)`;
  process.stdout.write(
    `\n≥ ${TARGET_ATTEMPTS_PER_SECOND} attempts/s with two workers, ${CAMPAIGNS} campaigns: ${verdict(twoShared)}; one campaign: ${verdict(twoAlone)}\n` +
      `two workers / one worker: ${fixed(twoShared.attemptsPerSecond / oneShared.attemptsPerSecond, 2)}x attempts/s with ${CAMPAIGNS} campaigns, ` +
      `${fixed(twoAlone.attemptsPerSecond / oneAlone.attemptsPerSecond, 2)}x with one\n` +
      `memory in the number of contacts (1 worker): peak RSS ${mb(oneAlone.peakRss[0]!)} MB with ${CONTACTS.toLocaleString('en-US')} contacts, ` +
      `${mb(small.peakRss[0]!)} MB with ${SMALL_CONTACTS.toLocaleString('en-US')}: ratio ${fixed(oneAlone.peakRss[0]! / small.peakRss[0]!, 2)}x ` +
      `for ${fixed(CONTACTS / SMALL_CONTACTS, 1)}x the contacts\n`,
  );
  const charged = results.filter((r) => r.balanceAfter !== r.balanceBefore);
  if (charged.length > 0)
    process.stdout.write(
      `note: the wallet was debited in ${charged.map((r) => `"${r.label}" (${r.balanceBefore} → ${r.balanceAfter})`).join(', ')}\n`,
    );
  return 0;
}

await runBench(main);
