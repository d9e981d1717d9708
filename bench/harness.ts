/**
 * What every bench shares: settings from the environment, cleanup on exit and Ctrl-C, the server
 * child process, a tenant with an API key, the engines (a temp DATA_DIR for PGlite, a throw-away
 * database on PostgreSQL), autocannon and table printing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import type { CpuQuota } from './process-cpu.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw new Error(`${name}=${JSON.stringify(raw)} is invalid: expected an integer of at least ${min}.`);
  return value;
}

/** Measured seconds of load per autocannon measurement. */
export const DURATION = intFromEnv('BENCH_DURATION', 10, 1);
/** Concurrent autocannon connections. */
export const CONNECTIONS = intFromEnv('BENCH_CONNECTIONS', 50, 1);
/** Seconds of unmeasured load before each measurement (JIT, caches, pools); 0: none. */
export const WARMUP = intFromEnv('BENCH_WARMUP', 1, 0);

/** How long a server child may take to answer /healthz; a machine busy with other work needs longer. */
const READY_TIMEOUT_MS = intFromEnv('BENCH_READY_SECONDS', 60, 1) * 1_000;
const STOP_TIMEOUT_MS = 15_000;
// The highest value the config accepts (src/config.ts); far above what one process serves.
const RATE_LIMIT_PER_MINUTE = '10000000';
const PROTECTED_DATABASES = new Set(['test', 'root', 'postgres', 'template0', 'template1']);
const BENCH_DATABASE = /^callforge_bench_[a-f0-9]+$/;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

let nextPhoneNumber = 0;
/** Distinct, valid E.164 numbers +1415XXXXXXX, one after the other (10 million of them per process). */
export function distinctPhoneNumber(): string {
  const n = nextPhoneNumber++;
  if (n >= 10_000_000) throw new Error('ran out of +1415XXXXXXX numbers');
  return `+1415${String(n).padStart(7, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// Cleanup: every acquired resource registers its release; run in reverse, once, also on Ctrl-C.

const cleanups: { label: string; run: () => Promise<void> | void }[] = [];
let cleaningUp: Promise<void> | undefined;

export function onCleanup(label: string, run: () => Promise<void> | void): () => Promise<void> {
  const entry = { label, run };
  cleanups.push(entry);
  return async () => {
    const index = cleanups.indexOf(entry);
    if (index === -1) return;
    cleanups.splice(index, 1);
    await entry.run();
  };
}

function cleanUpAll(): Promise<void> {
  cleaningUp ??= (async () => {
    while (cleanups.length > 0) {
      const entry = cleanups.pop()!;
      try {
        await entry.run();
      } catch (error) {
        process.stderr.write(`cleanup "${entry.label}" failed: ${errorMessage(error)}\n`);
      }
    }
  })();
  return cleaningUp;
}

/** Runs a bench's main, then everything registered with onCleanup (also on Ctrl-C), then exits with its code. */
export async function runBench(main: () => Promise<number>): Promise<never> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: cleaning up…\n`);
      void cleanUpAll().finally(() => process.exit(130));
    });
  }
  let code = 1;
  try {
    code = await main();
  } catch (error) {
    process.stderr.write(`\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  } finally {
    await cleanUpAll();
  }
  process.exit(code);
}

// ---------------------------------------------------------------------------------------------
// The server child.

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => (port ? resolve(port) : reject(new Error('could not find a free port'))));
    });
  });
}

export interface Server {
  base: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * Starts `node --import tsx src/main.ts` on a free port and waits until /healthz answers; with a
 * CPU quota, the child runs inside it from its first milliseconds.
 */
export async function startServer(label: string, env: Record<string, string>, quota?: CpuQuota): Promise<Server> {
  const port = await freePort();
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  // The embedded run must not inherit the PostgreSQL settings this bench itself was given.
  delete childEnv.DATABASE_URL;
  delete childEnv.SECRETS_KEY;
  Object.assign(childEnv, {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE,
    DEMO_BOOTSTRAP: '0',
    // A worker has no API port: its probes listen on WORKER_HEALTH_PORT, which readiness polls.
    ...(env.ROLE === 'worker' ? { WORKER_HEALTH_PORT: String(port) } : {}),
    ...env,
  });
  // BENCH_SERVER_NODE_ARGS passes Node.js options to the servers alone (`--cpu-prof --cpu-prof-dir=…`).
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (quota && child.pid !== undefined) quota.add(child.pid);

  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-16_384);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitCode: number | null | undefined;
  child.once('exit', (code, signal) => {
    exitCode = code ?? (signal ? -1 : null);
  });

  const stop = onCleanup(`stop ${label} server`, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited.then(() => true), sleep(STOP_TIMEOUT_MS).then(() => false)]);
    if (!stopped) {
      process.stderr.write(`${label} server did not exit ${STOP_TIMEOUT_MS / 1000} s after SIGTERM; sending SIGKILL\n`);
      child.kill('SIGKILL');
      await exited;
    }
  });

  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`${label} server exited during start (code ${exitCode}):\n${output}`);
    try {
      const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${label} server not ready after ${READY_TIMEOUT_MS / 1000} s:\n${output}`);
    await sleep(100);
  }
  return { base, child, output: () => output, stop };
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers and a key, by signing up and creating one, as a dashboard user would.

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export async function getJson(url: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(url, { headers });
  const text = await response.text();
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Signs up a fresh tenant and creates an API key with its session; returns the key (`aok_…`). */
export async function createKey(base: string): Promise<string> {
  const suffix = randomBytes(6).toString('hex');
  const session = await postJson(`${base}/api/v1/auth/signup`, {
    tenantName: `Bench ${suffix}`,
    email: `bench-${suffix}@example.com`,
    password: randomBytes(18).toString('base64url'),
  });
  if (typeof session.accessToken !== 'string') throw new Error(`signup returned no accessToken: ${JSON.stringify(session)}`);
  const created = await postJson(`${base}/api/v1/api-keys`, { name: 'bench' }, { authorization: `Bearer ${session.accessToken}` });
  if (typeof created.key !== 'string' || !created.key.startsWith('aok_'))
    throw new Error(`POST /api-keys returned no key: ${JSON.stringify(created)}`);

  const check = await fetch(`${base}/api/v1/profile`, { headers: { authorization: `Bearer ${created.key}` } });
  if (check.status !== 200) throw new Error(`GET /api/v1/profile with the new key answered ${check.status}: ${await check.text()}`);
  return created.key;
}

// ---------------------------------------------------------------------------------------------
// Load with autocannon.

export interface Measurement {
  path: string;
  reqPerSec: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** Seconds after which autocannon gives up on a request and counts a timeout (and an error). */
export const REQUEST_TIMEOUT_S = 10;

/** What one connection asks, again and again. */
export interface LoadRequest {
  path: string;
  headers: Record<string, string>;
}

/** Load on `base`: every connection asks the same, or connection i asks `requests[i % length]`. */
function load(base: string, requests: LoadRequest | LoadRequest[], duration: number): Promise<autocannon.Result> {
  const options = { connections: CONNECTIONS, duration, timeout: REQUEST_TIMEOUT_S };
  if (!Array.isArray(requests)) return autocannon({ url: base + requests.path, headers: requests.headers, ...options });
  let next = 0;
  const setupClient = (client: autocannon.Client) => client.setRequests([requests[next++ % requests.length]!]);
  return autocannon({ url: base + requests[0]!.path, setupClient, ...options });
}

/**
 * WARMUP seconds of unmeasured load, then DURATION seconds measured, with CONNECTIONS connections,
 * each asking `path` with `headers`, or each its own of `perConnection` (its requests are then
 * named by `path`). Between the two, one request is awaited: autocannon drops the warm-up's
 * requests still in flight but the server still serves them, and on a slow endpoint that backlog
 * would eat into the measured seconds.
 */
export async function measure(
  base: string,
  path: string,
  headers: Record<string, string>,
  perConnection?: LoadRequest[],
): Promise<Measurement> {
  const requests = perConnection ?? { path, headers };
  if (WARMUP > 0) {
    await load(base, requests, WARMUP);
    const first = Array.isArray(requests) ? requests[0]! : requests;
    const drain = await fetch(base + first.path, { headers: first.headers });
    await drain.arrayBuffer();
  }
  const result = await load(base, requests, DURATION);
  return {
    path,
    reqPerSec: result.requests.average,
    p99: result.latency.p99,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** Table rows of measurements (header first), then a ratio row per `[label, subject, baseline]`. */
export function measurementRows(
  measurements: Measurement[],
  ratios: [string, Measurement, Measurement][],
  name = (m: Measurement) => `GET ${m.path}`,
) {
  return [
    ['endpoint', 'req/s (avg)', 'p99 (ms)', '2xx', 'non-2xx', 'errors', 'timeouts'],
    ...measurements.map((m) => [
      name(m),
      fixed(m.reqPerSec, 1),
      fixed(m.p99, 2),
      String(m.ok),
      String(m.non2xx),
      String(m.errors),
      String(m.timeouts),
    ]),
    ...ratios.map(([label, subject, baseline]) => [
      label,
      `${fixed(subject.reqPerSec / baseline.reqPerSec, 3)}x`,
      `${fixed(subject.p99 / baseline.p99, 2)}x`,
      '',
      '',
      '',
      '',
    ]),
  ];
}

/** Whether a measurement is valid; prints a warning when it is not. */
export function checkClean(m: Measurement): boolean {
  if (m.ok === 0) {
    process.stdout.write(
      `WARNING: no GET ${m.path} completed within the ${DURATION} s measured (${CONNECTIONS} connections): each request waits longer than that under this load; ` +
        'measure longer (BENCH_DURATION) or with fewer connections (BENCH_CONNECTIONS).\n',
    );
    return false;
  }
  if (m.non2xx === 0 && m.errors === 0 && m.timeouts === 0) return true;
  process.stdout.write(
    `WARNING: GET ${m.path} had ${m.non2xx} non-2xx responses, ${m.errors} errors and ${m.timeouts} timeouts; its figures are not a valid measurement.\n`,
  );
  return false;
}

// ---------------------------------------------------------------------------------------------
// Printing.

export function table(rows: string[][], rightAligned: (column: number) => boolean): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => (rightAligned(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export const fixed = (value: number, digits: number) => value.toFixed(digits);

// ---------------------------------------------------------------------------------------------
// Engines.

export interface Engine {
  /** e.g. "embedded (PGlite)" or "PostgreSQL (127.0.0.1:5432/callforge_bench_…)". */
  name: string;
  kind: 'embedded' | 'postgres';
  /** What the server child needs to run on this engine. */
  serverEnv: Record<string, string>;
  /** PostgreSQL only: the URL of the bench database, for direct queries. */
  databaseUrl?: string;
}

async function withEmbedded<T>(work: (engine: Engine) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'callforge-bench-'));
  const removeDir = onCleanup(`remove ${dataDir}`, () => rmSync(dataDir, { recursive: true, force: true }));
  try {
    return await work({ name: 'embedded (PGlite)', kind: 'embedded', serverEnv: { DATA_DIR: dataDir } });
  } finally {
    await removeDir();
  }
}

function assertBenchDatabase(name: string) {
  if (PROTECTED_DATABASES.has(name) || !BENCH_DATABASE.test(name)) throw new Error(`refusing to touch database ${JSON.stringify(name)}`);
}

/** A connection to `url` for `work`, closed after it; `options` as the service passes them (SESSION_OPTIONS). */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>, options?: string): Promise<T> {
  const client = new pg.Client({ connectionString: url, ...(options ? { options } : {}) });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function withPostgres<T>(adminUrl: string, work: (engine: Engine) => Promise<T>): Promise<T> {
  const name = `callforge_bench_${randomBytes(6).toString('hex')}`;
  assertBenchDatabase(name);
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const dropDatabase = onCleanup(`drop database ${name}`, async () => {
    assertBenchDatabase(name);
    await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  });
  try {
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const databaseUrl = url.toString();
    return await work({
      name: `PostgreSQL (${url.host}/${name})`,
      kind: 'postgres',
      serverEnv: { DATABASE_URL: databaseUrl, SECRETS_KEY: randomBytes(32).toString('base64') },
      databaseUrl,
    });
  } finally {
    await dropDatabase();
  }
}

/**
 * Runs `work` on the embedded engine and, when DATABASE_URL is set, on PostgreSQL, one after the
 * other; `report` prints a result and says whether it is valid. A failing engine is reported and
 * the next one still runs. Returns the results and whether anything failed.
 */
export async function forEachEngine<R>(
  work: (engine: Engine) => Promise<R>,
  report: (result: R) => boolean,
): Promise<{ results: R[]; failed: boolean }> {
  const results: R[] = [];
  let failed = false;
  const engines: [string, () => Promise<R>][] = [['embedded', () => withEmbedded(work)]];
  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) engines.push(['postgres', () => withPostgres(adminUrl, work)]);

  for (const [label, run] of engines) {
    try {
      const result = await run();
      results.push(result);
      if (!report(result)) failed = true;
    } catch (error) {
      failed = true;
      process.stderr.write(`\n[${label}] failed: ${errorMessage(error)}\n`);
    }
  }
  if (!adminUrl)
    process.stdout.write('\nPostgreSQL: skipped (set DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/postgres, to bench it too).\n');
  return { results, failed };
}

// ---------------------------------------------------------------------------------------------
// In-process runtime, for benches that drive the job handlers themselves.

/**
 * The runtime and app in this process: on a fresh `callforge_bench_…` database of the PostgreSQL
 * server at `adminUrl`, or on PGlite in memory when `adminUrl` is undefined; everything is closed
 * (and the database dropped) at exit, also on Ctrl-C.
 */
export async function inProcessRuntime(adminUrl: string | undefined, env: Record<string, string> = {}) {
  let databaseUrl: string | undefined;
  let where = 'PGlite in memory';
  let dropDatabase = async () => {};
  if (adminUrl) {
    const name = `callforge_bench_${randomBytes(6).toString('hex')}`;
    assertBenchDatabase(name);
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
    dropDatabase = onCleanup(`drop database ${name}`, async () => {
      assertBenchDatabase(name);
      await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    });
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    where = `${url.host}/${name}`;
  }
  const [{ loadConfig }, { IN_MEMORY, openRuntime }, { buildApp }, { createLogger }] = await Promise.all([
    import('../src/config.ts'),
    import('../src/runtime.ts'),
    import('../src/app.ts'),
    import('../src/platform/logger.ts'),
  ]);
  const config = loadConfig({
    DATA_DIR: IN_MEMORY,
    LOG_LEVEL: 'warn',
    DEMO_BOOTSTRAP: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    JOBS_POLL_SECONDS: '0.5',
    RATE_LIMIT_PER_MINUTE: '10000000',
    ...env,
  });
  const runtime = await openRuntime(config, { log: createLogger(config.logLevel), superviseJobs: true });
  const closeRuntime = onCleanup('close the runtime', () => runtime.close());
  const app = await buildApp(runtime);
  await app.ready();
  const closeApp = onCleanup('close the app', () => app.close());
  /** Closes it all now (a bench that opens several runtimes one after another), rather than at exit. */
  const close = async () => {
    await closeApp();
    await closeRuntime();
    await dropDatabase();
  };
  return { runtime, app, where, close };
}

/**
 * Starts the workers and polls `settledCount` until it reaches `expected` (progress every 5 s,
 * failing after `timeoutS`); returns the seconds from starting the workers.
 */
export async function workUntilSettled(
  startWorkers: () => Promise<void>,
  settledCount: () => Promise<number>,
  options: { expected: number; what: string; timeoutS: number; pollMs: number },
): Promise<number> {
  const { expected, what, timeoutS, pollMs } = options;
  const started = performance.now();
  await startWorkers();
  let lastProgress = started;
  for (;;) {
    const settled = await settledCount();
    const now = performance.now();
    if (settled >= expected) return (now - started) / 1_000;
    if (now - started > timeoutS * 1_000) throw new Error(`only ${settled} of ${expected} ${what} settled within ${timeoutS} s`);
    if (now - lastProgress >= 5_000) {
      lastProgress = now;
      process.stdout.write(
        `   ${fixed((now - started) / 1_000, 0)} s: ${settled.toLocaleString('en-US')} of ${expected.toLocaleString('en-US')} ${what} settled\n`,
      );
    }
    await sleep(pollMs);
  }
}
