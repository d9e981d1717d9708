/**
 * Cost of API-key authentication: GET /api/v1/profile with a valid key (auth hook, key cache,
 * rate limiter, profile queries) against GET /healthz (none of that) on the same server, in the
 * same run, on the embedded engine (PGlite) and, when DATABASE_URL is set, on PostgreSQL.
 *
 *   npm run bench:auth
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:auth
 *   BENCH_DURATION=3 BENCH_CONNECTIONS=10 npm run bench:auth     # quick smoke run
 *
 * The server runs as a child process (`node --import tsx src/main.ts`); autocannon runs here.
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

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name}=${JSON.stringify(raw)} is invalid: expected an integer of at least ${min}.`);
  return value;
}

const DURATION = intFromEnv('BENCH_DURATION', 10, 1);
const CONNECTIONS = intFromEnv('BENCH_CONNECTIONS', 50, 1);
/** Seconds of unmeasured load per endpoint before each measurement (JIT, key cache, pools). */
const WARMUP = intFromEnv('BENCH_WARMUP', 1, 0);
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
// The highest value the config accepts (src/config.ts); far above what one process serves.
const RATE_LIMIT_PER_MINUTE = '10000000';
const PROTECTED_DATABASES = new Set(['test', 'root', 'postgres', 'template0', 'template1']);
const BENCH_DATABASE = /^callforge_bench_[a-f0-9]+$/;

// ---------------------------------------------------------------------------------------------
// Cleanup: every acquired resource registers its release; run in reverse, once, also on Ctrl-C.

const cleanups: { label: string; run: () => Promise<void> | void }[] = [];
let cleaningUp: Promise<void> | undefined;

function onCleanup(label: string, run: () => Promise<void> | void): () => Promise<void> {
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
        process.stderr.write(`cleanup "${entry.label}" failed: ${error instanceof Error ? error.message : String(error)}\n`);
      }
    }
  })();
  return cleaningUp;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: cleaning up…\n`);
    void cleanUpAll().finally(() => process.exit(130));
  });
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

interface Server {
  base: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function startServer(label: string, env: Record<string, string>): Promise<Server> {
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
    ...env,
  });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });

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
// A key, by signing up and creating one, as a dashboard user would.

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function createKey(base: string): Promise<string> {
  const suffix = randomBytes(6).toString('hex');
  const session = await postJson(`${base}/api/v1/auth/signup`, {
    tenantName: `Bench ${suffix}`,
    email: `bench-${suffix}@example.com`,
    password: randomBytes(18).toString('base64url'),
  });
  if (typeof session.accessToken !== 'string') throw new Error(`signup returned no accessToken: ${JSON.stringify(session)}`);
  const created = await postJson(`${base}/api/v1/api-keys`, { name: 'bench' }, { authorization: `Bearer ${session.accessToken}` });
  if (typeof created.key !== 'string' || !created.key.startsWith('aok_')) throw new Error(`POST /api-keys returned no key: ${JSON.stringify(created)}`);

  const check = await fetch(`${base}/api/v1/profile`, { headers: { authorization: `Bearer ${created.key}` } });
  if (check.status !== 200) throw new Error(`GET /api/v1/profile with the new key answered ${check.status}: ${await check.text()}`);
  return created.key;
}

// ---------------------------------------------------------------------------------------------
// Measuring.

interface Measurement {
  path: string;
  reqPerSec: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

async function load(url: string, headers: Record<string, string>, duration: number): Promise<autocannon.Result> {
  return autocannon({ url, headers, connections: CONNECTIONS, duration, timeout: 10 });
}

async function measure(base: string, path: string, headers: Record<string, string>): Promise<Measurement> {
  if (WARMUP > 0) await load(base + path, headers, WARMUP);
  const result = await load(base + path, headers, DURATION);
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

interface EngineResult {
  engine: string;
  healthz: Measurement;
  profile: Measurement;
}

function table(rows: string[][], rightAligned: (column: number) => boolean): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) => row.map((cell, column) => (rightAligned(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ').trimEnd())
    .join('\n');
}

const fixed = (value: number, digits: number) => value.toFixed(digits);

function report(result: EngineResult): boolean {
  const { healthz, profile } = result;
  const rows = [
    ['endpoint', 'req/s (avg)', 'p99 (ms)', '2xx', 'non-2xx', 'errors', 'timeouts'],
    ...[healthz, profile].map((m) => [`GET ${m.path}`, fixed(m.reqPerSec, 1), fixed(m.p99, 2), String(m.ok), String(m.non2xx), String(m.errors), String(m.timeouts)]),
    ['profile / healthz', `${fixed(profile.reqPerSec / healthz.reqPerSec, 3)}x`, `${fixed(profile.p99 / healthz.p99, 2)}x`, '', '', '', ''],
  ];
  process.stdout.write(`\n${result.engine}\n${table(rows, (column) => column > 0)}\n`);
  let clean = true;
  for (const m of [healthz, profile]) {
    if (m.non2xx > 0 || m.errors > 0 || m.timeouts > 0) {
      clean = false;
      process.stdout.write(`WARNING: GET ${m.path} had ${m.non2xx} non-2xx responses, ${m.errors} errors and ${m.timeouts} timeouts; its figures are not a valid measurement.\n`);
    }
  }
  return clean;
}

async function benchEngine(engine: string, env: Record<string, string>): Promise<EngineResult> {
  process.stdout.write(`\n[${engine}] starting server…\n`);
  const server = await startServer(engine, env);
  try {
    const key = await createKey(server.base);
    process.stdout.write(`[${engine}] ready at ${server.base}; key ${key.slice(0, 12)}…; measuring /healthz then /api/v1/profile\n`);
    const healthz = await measure(server.base, '/healthz', {});
    const profile = await measure(server.base, '/api/v1/profile', { authorization: `Bearer ${key}` });
    return { engine, healthz, profile };
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Engines.

async function embedded(): Promise<EngineResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'callforge-bench-'));
  const removeDir = onCleanup(`remove ${dataDir}`, () => rmSync(dataDir, { recursive: true, force: true }));
  try {
    return await benchEngine('embedded (PGlite)', { DATA_DIR: dataDir });
  } finally {
    await removeDir();
  }
}

function assertBenchDatabase(name: string) {
  if (PROTECTED_DATABASES.has(name) || !BENCH_DATABASE.test(name)) throw new Error(`refusing to touch database ${JSON.stringify(name)}`);
}

async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function postgres(adminUrl: string): Promise<EngineResult> {
  const name = `callforge_bench_${randomBytes(6).toString('hex')}`;
  assertBenchDatabase(name);
  await withAdmin(adminUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const dropDatabase = onCleanup(`drop database ${name}`, async () => {
    assertBenchDatabase(name);
    await withAdmin(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  });
  try {
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return await benchEngine(`PostgreSQL (${url.host}/${name})`, { DATABASE_URL: url.toString(), SECRETS_KEY: randomBytes(32).toString('base64') });
  } finally {
    await dropDatabase();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  process.stdout.write(
    `callforge auth bench: ${CONNECTIONS} connections, ${DURATION} s per endpoint` + (WARMUP > 0 ? ` (after ${WARMUP} s unmeasured warm-up each)` : '') + `, node ${process.version}\n`,
  );
  const results: EngineResult[] = [];
  let failed = false;
  const engines: [string, () => Promise<EngineResult>][] = [['embedded', embedded]];
  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) engines.push(['postgres', () => postgres(adminUrl)]);

  for (const [label, run] of engines) {
    try {
      const result = await run();
      results.push(result);
      if (!report(result)) failed = true;
    } catch (error) {
      failed = true;
      process.stderr.write(`\n[${label}] failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  if (!adminUrl) process.stdout.write('\nPostgreSQL: skipped (set DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/postgres, to bench it too).\n');

  if (results.length > 1) {
    const rows = [
      ['engine', 'healthz req/s', 'profile req/s', 'req/s ratio', 'healthz p99', 'profile p99', 'p99 ratio'],
      ...results.map((r) => [
        r.engine.split(' ')[0]!,
        fixed(r.healthz.reqPerSec, 1),
        fixed(r.profile.reqPerSec, 1),
        `${fixed(r.profile.reqPerSec / r.healthz.reqPerSec, 3)}x`,
        fixed(r.healthz.p99, 2),
        fixed(r.profile.p99, 2),
        `${fixed(r.profile.p99 / r.healthz.p99, 2)}x`,
      ]),
    ];
    process.stdout.write(`\nsummary (p99 in ms)\n${table(rows, (column) => column > 0)}\n`);
  }
  return failed ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} finally {
  await cleanUpAll();
}
process.exit(code);
