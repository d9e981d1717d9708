/**
 * Cost of an authenticated read: GET /api/v1/profile with a valid key (auth hook, key cache, rate
 * limiter, the profile's statement) against GET /readyz (one database round trip: the ping shared
 * by concurrent probes, then the job queue's `SELECT 1`) and GET /healthz (no database at all), on
 * the same server, in the same run, on the embedded engine (PGlite) and, when DATABASE_URL is set,
 * on PostgreSQL. The target is profile ≥ 0.9× readyz.
 *
 * The profile is measured twice: every connection with one tenant's key (the profiles asked in the
 * same turn share one statement), then each connection with a key of a tenant of its own
 * (CONNECTIONS tenants: no two requests in flight share a tenant).
 *
 *   npm run bench:auth
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:auth
 *   BENCH_DURATION=3 BENCH_CONNECTIONS=10 npm run bench:auth     # quick smoke run
 *
 * The server runs as a child process (`node --import tsx src/main.ts`); autocannon runs here.
 */
import {
  checkClean,
  CONNECTIONS,
  createKey,
  DURATION,
  type Engine,
  fixed,
  forEachEngine,
  measure,
  measurementRows,
  type Measurement,
  runBench,
  startServer,
  table,
  WARMUP,
} from './harness.ts';

interface EngineResult {
  engine: string;
  healthz: Measurement;
  readyz: Measurement;
  profile: Measurement;
  tenants: Measurement;
}

const TARGET = 0.9;

function report(result: EngineResult): boolean {
  const { healthz, readyz, profile, tenants } = result;
  const rows = measurementRows(
    [healthz, readyz, profile, tenants],
    [
      ['profile / readyz', profile, readyz],
      ['profile / healthz', profile, healthz],
      [`${CONNECTIONS} tenants / readyz`, tenants, readyz],
    ],
    (m) => (m === tenants ? `GET ${m.path} (${CONNECTIONS} tenants)` : `GET ${m.path}`),
  );
  const verdict = (m: Measurement) => {
    const ratio = m.reqPerSec / readyz.reqPerSec;
    return `${ratio >= TARGET ? 'met' : 'MISSED'} (${fixed(ratio, 3)}×)`;
  };
  process.stdout.write(
    `\n${result.engine}\n${table(rows, (column) => column > 0)}\n` +
      `target profile ≥ ${TARGET}× readyz: one tenant ${verdict(profile)}, ${CONNECTIONS} tenants ${verdict(tenants)}\n`,
  );
  return [healthz, readyz, profile, tenants].map(checkClean).every(Boolean);
}

async function benchEngine(engine: Engine): Promise<EngineResult> {
  process.stdout.write(`\n[${engine.name}] starting server…\n`);
  const server = await startServer(engine.name, engine.serverEnv);
  try {
    const key = await createKey(server.base);
    process.stdout.write(
      `[${engine.name}] ready at ${server.base}; key ${key.slice(0, 12)}…; measuring /healthz, /readyz, /api/v1/profile\n`,
    );
    const healthz = await measure(server.base, '/healthz', {});
    const readyz = await measure(server.base, '/readyz', {});
    const profile = await measure(server.base, '/api/v1/profile', { authorization: `Bearer ${key}` });
    const keys = await Promise.all(Array.from({ length: CONNECTIONS }, () => createKey(server.base)));
    const tenants = await measure(
      server.base,
      '/api/v1/profile',
      {},
      keys.map((other) => ({ path: '/api/v1/profile', headers: { authorization: `Bearer ${other}` } })),
    );
    return { engine: engine.name, healthz, readyz, profile, tenants };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<number> {
  process.stdout.write(
    `callforge auth bench: ${CONNECTIONS} connections, ${DURATION} s per endpoint` +
      (WARMUP > 0 ? ` (after ${WARMUP} s unmeasured warm-up each)` : '') +
      `, node ${process.version}\n`,
  );
  const { results, failed } = await forEachEngine(benchEngine, report);

  if (results.length > 1) {
    const rows = [
      [
        'engine',
        'healthz req/s',
        'readyz req/s',
        'profile req/s',
        'profile/readyz',
        `${CONNECTIONS} tenants/readyz`,
        'readyz p99',
        'profile p99',
      ],
      ...results.map((r) => [
        r.engine.split(' ')[0]!,
        fixed(r.healthz.reqPerSec, 1),
        fixed(r.readyz.reqPerSec, 1),
        fixed(r.profile.reqPerSec, 1),
        `${fixed(r.profile.reqPerSec / r.readyz.reqPerSec, 3)}x`,
        `${fixed(r.tenants.reqPerSec / r.readyz.reqPerSec, 3)}x`,
        fixed(r.readyz.p99, 2),
        fixed(r.profile.p99, 2),
      ]),
    ];
    process.stdout.write(`\nsummary (p99 in ms)\n${table(rows, (column) => column > 0)}\n`);
  }
  return failed ? 1 : 0;
}

await runBench(main);
