/**
 * Contact import and the contact page of a big list, on the embedded engine (PGlite) and, when
 * DATABASE_URL is set, on PostgreSQL:
 *
 * 1. CSV import: 50 sequential uploads of a 500-row CSV (multipart/form-data, field "file"), each
 *    into a fresh list so every row is imported; p50, p99 and mean of the request time.
 * 2. List page on a big list, run first: a user's first list, filled as their API client fills it
 *    (100 requests of 1,000 to POST …/contacts/bulk, nothing else in the table), then autocannon on
 *    GET /readyz (the baseline: one database round trip), on
 *    GET /api/v1/contact-lists/{id}/contacts?limit=25 and on 50 distinct pages; the ratios
 *    (targets ≥ 0.8× and ≥ 0.5×). The load waits for the statistics the database keeps itself
 *    (autovacuum, or the service's own analyze): the bench runs no ANALYZE.
 * 3. PostgreSQL only: EXPLAIN of the page statement, one page and 50 pages batched, in a session
 *    with the server's settings (JIT as configured there) and in one with the service's.
 *
 *   npm run bench:csv
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:csv
 *   BENCH_DURATION=3 npm run bench:csv                               # quick smoke run
 *
 * The server runs as a child process (`node --import tsx src/main.ts`); uploads, bulk adds and
 * autocannon run here.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { contactPagesSql } from '../src/modules/contacts/repo.ts';
import { SESSION_OPTIONS } from '../src/platform/db.ts';
import {
  checkClean,
  CONNECTIONS,
  createKey,
  distinctPhoneNumber,
  DURATION,
  type Engine,
  fixed,
  forEachEngine,
  getJson,
  measure,
  measurementRows,
  type Measurement,
  postJson,
  REQUEST_TIMEOUT_S,
  runBench,
  sleep,
  startServer,
  table,
  WARMUP,
  withClient,
} from './harness.ts';

const UPLOADS = 50;
const CSV_ROWS = 500;
/** Unmeasured uploads before the 50 measured ones; none when BENCH_WARMUP=0. */
const WARMUP_UPLOADS = WARMUP > 0 ? 5 : 0;
const BIG_LIST_CONTACTS = 100_000;
const BULK_BATCH = 1_000;
const PAGE_LIMIT = 25;
/** Page requests sent one at a time before the load, for the latency of one request alone. */
const SEQUENTIAL_PAGES = 20;
const UPLOAD_TARGET_P50_MS = 50;
/** Page req/s over /readyz req/s on the same server in the same run: one page, and 50 distinct pages. */
const PAGE_TARGET_RATIO = 0.8;
const PAGES_TARGET_RATIO = 0.5;

/**
 * The embedded server analyzes changed tables this often during the bench (default 10 s), as does a
 * server whose autovacuum is off; the bench waits for it, or for autovacuum, before the load.
 */
const ANALYZE_SECONDS = 1;
/** How long the bench waits for the database's own statistics of the filled list (autovacuum naps 60 s by default). */
const STATISTICS_TIMEOUT_S = 180;

// ---------------------------------------------------------------------------------------------
// Data: distinct, valid E.164 numbers (distinctPhoneNumber; a run uses 125,000 and a few thousand
// for warm-up).

function csvOf(rows: number): string {
  const lines = ['phone,name,email'];
  for (let i = 0; i < rows; i++) {
    const phone = distinctPhoneNumber();
    const id = phone.slice(1);
    lines.push(`${phone},Contact ${id},contact${id}@example.com`);
  }
  return lines.join('\r\n') + '\r\n';
}

/** A multipart/form-data body with the CSV as the only part, in field "file". */
function multipart(csv: string): { body: Buffer; contentType: string } {
  const boundary = `----callforge-bench-${randomBytes(12).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contacts.csv"\r\nContent-Type: text/csv\r\n\r\n`,
      'utf8',
    ),
    Buffer.from(csv, 'utf8'),
    Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8'),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

// ---------------------------------------------------------------------------------------------
// 1. CSV import.

interface UploadStats {
  samples: number;
  p50: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile of sorted values (with 50 samples p99 is the slowest one). */
const percentile = (sorted: number[], p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function createList(base: string, auth: Record<string, string>, name: string): Promise<{ id: string; tenantId: string }> {
  const list = await postJson(`${base}/api/v1/contact-lists`, { name }, auth);
  if (typeof list.id !== 'string' || typeof list.tenantId !== 'string')
    throw new Error(`POST /contact-lists returned no id: ${JSON.stringify(list)}`);
  return { id: list.id, tenantId: list.tenantId };
}

/** Uploads one CSV into a fresh list; returns the request time in ms (send to last byte read). */
async function uploadOnce(base: string, auth: Record<string, string>, name: string): Promise<number> {
  const list = await createList(base, auth, name);
  const { body, contentType } = multipart(csvOf(CSV_ROWS));
  const url = `${base}/api/v1/contact-lists/${list.id}/upload`;

  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': contentType }, body });
  const text = await response.text();
  const elapsed = performance.now() - started;

  if (response.status !== 200)
    throw new Error(`upload "${name}": POST ${url} answered ${response.status}, expected 200: ${text.slice(0, 2_000)}`);
  const result = JSON.parse(text) as { imported?: unknown; skipped?: unknown };
  if (result.imported !== CSV_ROWS || result.skipped !== 0) {
    throw new Error(`upload "${name}": expected imported: ${CSV_ROWS}, skipped: 0; got ${text.slice(0, 2_000)}`);
  }
  return elapsed;
}

async function benchUploads(base: string, auth: Record<string, string>): Promise<UploadStats> {
  for (let i = 1; i <= WARMUP_UPLOADS; i++) await uploadOnce(base, auth, `warm-up ${i}`);
  const times: number[] = [];
  for (let i = 1; i <= UPLOADS; i++) times.push(await uploadOnce(base, auth, `upload ${i}`));
  const sorted = [...times].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: times.reduce((sum, t) => sum + t, 0) / times.length,
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
  };
}

// ---------------------------------------------------------------------------------------------
// 2. A big list and its first page.

interface Fill {
  contacts: number;
  requests: number;
  seconds: number;
}

async function fillList(base: string, auth: Record<string, string>, listId: string): Promise<Fill> {
  const url = `${base}/api/v1/contact-lists/${listId}/contacts/bulk`;
  const requests = BIG_LIST_CONTACTS / BULK_BATCH;
  const bodies: string[] = [];
  for (let r = 0; r < requests; r++) {
    const contacts = Array.from({ length: BULK_BATCH }, () => {
      const phone = distinctPhoneNumber();
      return { phoneNumber: phone, name: `Contact ${phone.slice(1)}` };
    });
    bodies.push(JSON.stringify({ contacts }));
  }

  const started = performance.now();
  for (const [index, body] of bodies.entries()) {
    const response = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
    const text = await response.text();
    if (response.status !== 200)
      throw new Error(`bulk request ${index + 1}: POST ${url} answered ${response.status}: ${text.slice(0, 2_000)}`);
    const result = JSON.parse(text) as { imported?: unknown; skipped?: unknown };
    if (result.imported !== BULK_BATCH || result.skipped !== 0)
      throw new Error(`bulk request ${index + 1}: expected imported: ${BULK_BATCH}, skipped: 0; got ${text.slice(0, 2_000)}`);
  }
  const seconds = (performance.now() - started) / 1_000;

  const page = await getJson(`${base}/api/v1/contact-lists/${listId}/contacts?limit=${PAGE_LIMIT}`, auth);
  if (page.total !== BIG_LIST_CONTACTS || !Array.isArray(page.data) || page.data.length !== PAGE_LIMIT) {
    throw new Error(
      `the big list should hold ${BIG_LIST_CONTACTS} contacts and answer pages of ${PAGE_LIMIT}; got total ${String(page.total)}, ${Array.isArray(page.data) ? page.data.length : 'no'} rows`,
    );
  }
  return { contacts: BIG_LIST_CONTACTS, requests, seconds };
}

interface Sequential {
  requests: number;
  p50: number;
  mean: number;
}

/** SEQUENTIAL_PAGES page requests, one at a time: what one request costs with no queue. */
async function sequentialPages(base: string, auth: Record<string, string>, listId: string): Promise<Sequential> {
  const url = `${base}/api/v1/contact-lists/${listId}/contacts?limit=${PAGE_LIMIT}`;
  const times: number[] = [];
  for (let i = 0; i < SEQUENTIAL_PAGES; i++) {
    const started = performance.now();
    const response = await fetch(url, { headers: auth });
    const text = await response.text();
    times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 2_000)}`);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { requests: times.length, p50: percentile(sorted, 50), mean: times.reduce((sum, t) => sum + t, 0) / times.length };
}

// ---------------------------------------------------------------------------------------------
// 3. Query plans (PostgreSQL).

interface Plan {
  label: string;
  text: string;
  /** The planner's estimate of the whole statement (the top node's total cost). */
  cost: number;
  /** Whether the JIT compiled it (the plan has a JIT section). */
  jit: boolean;
  /** "Index" in the plan and no "Seq Scan on contacts". */
  usesIndex: boolean;
  indexes: string[];
}

function planOf(label: string, rows: Record<string, unknown>[]): Plan {
  const text = rows.map((row) => String(row['QUERY PLAN'])).join('\n');
  const indexes = [...new Set([...text.matchAll(/Index(?: Only)? Scan(?: Backward)? (?:using|on) (\S+)/g)].map((match) => match[1]!))];
  return {
    label,
    text,
    cost: Number(/cost=[\d.]+\.\.([\d.]+)/.exec(text)?.[1] ?? NaN),
    jit: /^JIT:/m.test(text),
    usesIndex: text.includes('Index') && !text.includes('Seq Scan on contacts'),
    indexes,
  };
}

interface Plans {
  plans: Plan[];
  /** What the planner weighs: how much of the table the list is, and how much of it is all-visible. */
  tableRows: number;
  listRows: number;
  pages: number;
  allVisiblePages: number;
  /** The server's settings the plans depend on. */
  autovacuum: string;
  jitAboveCost: number;
}

/**
 * Waits for the statistics the database makes itself of the filled list, as a user's client finds
 * them a little after its fill: the bench runs no ANALYZE. PostgreSQL: until every insert of the
 * fill is counted (n_tup_ins: n_live_tup is ANALYZE's estimate, which may stay a few rows short) and contacts was analyzed recently enough that neither autovacuum nor the
 * service's own analyze would analyze it again (fewer than 50 + 10% of its rows changed since).
 * Embedded: three periods of the server's own analyze (the bench cannot read the embedded
 * database while the server holds it). Returns how long it waited.
 */
async function awaitStatistics(engine: Engine): Promise<number> {
  const started = performance.now();
  if (!engine.databaseUrl) {
    await sleep(3 * ANALYZE_SECONDS * 1_000);
  } else {
    await withClient(engine.databaseUrl, async (client) => {
      const deadline = Date.now() + STATISTICS_TIMEOUT_S * 1_000;
      for (;;) {
        const { rows } = await client.query<{ current: boolean }>(
          `SELECT greatest(last_analyze, last_autoanalyze) IS NOT NULL AND n_tup_ins >= $1 AND n_mod_since_analyze <= 50 + 0.1 * n_live_tup AS current
           FROM pg_stat_user_tables WHERE relid = 'contacts'::regclass`,
          [BIG_LIST_CONTACTS],
        );
        if (rows[0]?.current) return;
        if (Date.now() > deadline) throw new Error(`contacts had no current statistics ${STATISTICS_TIMEOUT_S} s after the fill`);
        await sleep(250);
      }
    });
  }
  return (performance.now() - started) / 1_000;
}

/**
 * The page statement as the service sends it, for one page of 25 and for 50 pages batched as the
 * load's (limits 1 to 50), each in a session with the server's own settings (JIT as configured
 * there: whether the estimate alone passes `jit_above_cost`) and in one with the service's.
 */
async function explain(databaseUrl: string, tenantId: string, listId: string): Promise<Plans> {
  const asks = (n: number) => [
    Array.from({ length: n }, () => tenantId),
    Array.from({ length: n }, () => listId),
    Array.from({ length: n }, () => null),
    Array.from({ length: n }, (_, i) => (n === 1 ? PAGE_LIMIT : i + 1)),
    Array.from({ length: n }, () => 0),
  ];
  const sql = `EXPLAIN (ANALYZE, BUFFERS, SETTINGS) ${contactPagesSql(false)}`;
  const plans: Plan[] = [];
  for (const [session, options] of [
    ["the server's settings", undefined],
    [`the service's (${SESSION_OPTIONS})`, SESSION_OPTIONS],
  ] as const) {
    await withClient(
      databaseUrl,
      async (client) => {
        for (const n of [1, CONNECTIONS]) {
          const { rows } = await client.query<Record<string, unknown>>(sql, asks(n));
          plans.push(planOf(`${n === 1 ? `one page of ${PAGE_LIMIT}` : `${n} pages batched`}, session with ${session}`, rows));
        }
      },
      options,
    );
  }
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{
      table_rows: number;
      list_rows: number;
      pages: number;
      all_visible: number;
      autovacuum: string;
      jit_above_cost: string;
    }>(
      `SELECT (SELECT count(*)::int FROM contacts) AS table_rows,
              (SELECT count(*)::int FROM contacts WHERE tenant_id = $1 AND list_id = $2) AS list_rows,
              relpages AS pages, relallvisible AS all_visible,
              current_setting('autovacuum') AS autovacuum, current_setting('jit_above_cost') AS jit_above_cost
       FROM pg_class WHERE oid = 'contacts'::regclass`,
      [tenantId, listId],
    );
    const row = rows[0]!;
    return {
      plans,
      tableRows: row.table_rows,
      listRows: row.list_rows,
      pages: row.pages,
      allVisiblePages: row.all_visible,
      autovacuum: row.autovacuum,
      jitAboveCost: Number(row.jit_above_cost),
    };
  });
}

// ---------------------------------------------------------------------------------------------

interface EngineResult {
  engine: string;
  kind: Engine['kind'];
  upload: UploadStats;
  fill: Fill;
  /** Seconds the bench waited for the database's own statistics of the filled list. */
  statisticsWait: number;
  sequential: Sequential;
  readyz: Measurement;
  page: Measurement;
  /** Each connection its own first page (connection i: limit i + 1): no two requests in flight read the same. */
  pages: Measurement;
  plans: Plans | undefined;
}

async function benchEngine(engine: Engine): Promise<EngineResult> {
  const say = (line: string) => process.stdout.write(`[${engine.name}] ${line}\n`);
  process.stdout.write('\n');
  say('starting server…');
  const server = await startServer(engine.name, { ...engine.serverEnv, ANALYZE_SECONDS: String(ANALYZE_SECONDS) });
  let upload: UploadStats;
  let fill: Fill;
  let statisticsWait: number;
  let sequential: Sequential;
  let readyz: Measurement;
  let page: Measurement;
  let pages: Measurement;
  let plans: Plans | undefined;
  try {
    const key = await createKey(server.base);
    const auth = { authorization: `Bearer ${key}` };
    say(`ready at ${server.base}; key ${key.slice(0, 12)}…`);

    // The list first: a user's first list is the whole table, and that is what the planner sees.
    say(
      `2. filling one list with ${BIG_LIST_CONTACTS.toLocaleString('en-US')} contacts (${BIG_LIST_CONTACTS / BULK_BATCH} bulk requests of ${BULK_BATCH.toLocaleString('en-US')})…`,
    );
    const bigList = await createList(server.base, auth, 'big list');
    fill = await fillList(server.base, auth, bigList.id);
    say(`   filled in ${fixed(fill.seconds, 1)} s; waiting for the database's own statistics of it…`);
    statisticsWait = await awaitStatistics(engine);
    sequential = await sequentialPages(server.base, auth, bigList.id);
    say(
      `   loading GET …/contacts?limit=${PAGE_LIMIT} (${CONNECTIONS} connections, ${DURATION} s${WARMUP > 0 ? ` after ${WARMUP} s warm-up` : ''})…`,
    );
    readyz = await measure(server.base, '/readyz', {});
    const listPath = `/api/v1/contact-lists/${bigList.id}/contacts`;
    page = await measure(server.base, `${listPath}?limit=${PAGE_LIMIT}`, auth);
    // Each connection its own first page, limit 1 to CONNECTIONS (25 rows on average, as above): no
    // two requests in flight ask the same, so none is answered by another's read.
    const perConnection = Array.from({ length: CONNECTIONS }, (_, i) => ({ path: `${listPath}?limit=${(i % 200) + 1}`, headers: auth }));
    pages = await measure(server.base, `${listPath}?limit=1…${CONNECTIONS}`, auth, perConnection);
    if (engine.databaseUrl) {
      say('3. query plans of the page statement on the big list…');
      plans = await explain(engine.databaseUrl, bigList.tenantId, bigList.id);
    }

    say(
      `1. CSV import: ${WARMUP_UPLOADS > 0 ? `${WARMUP_UPLOADS} unmeasured, then ` : ''}${UPLOADS} uploads of ${CSV_ROWS} rows, one after the other, each into a fresh list…`,
    );
    upload = await benchUploads(server.base, auth);
  } finally {
    await server.stop();
  }
  return { engine: engine.name, kind: engine.kind, upload, fill, statisticsWait, sequential, readyz, page, pages, plans };
}

function targetNote(result: EngineResult): string {
  const target = `target: p50 < ${UPLOAD_TARGET_P50_MS} ms on PostgreSQL`;
  if (result.kind !== 'postgres') return `${target} (not this engine)`;
  return `${target} (${result.upload.p50 < UPLOAD_TARGET_P50_MS ? 'met' : 'MISSED'})`;
}

function report(result: EngineResult): boolean {
  const { upload, fill, sequential, readyz, page, pages, plans } = result;
  const out: string[] = [`\n${result.engine}`];

  out.push(
    `\n1. CSV import: ${upload.samples} uploads of ${CSV_ROWS} rows (multipart, each into a fresh list), all 200 with imported: ${CSV_ROWS}`,
  );
  out.push(
    table(
      [
        ['', 'ms', ''],
        ['p50', fixed(upload.p50, 1), targetNote(result)],
        ['p99', fixed(upload.p99, 1), `(nearest rank of ${upload.samples}: the slowest upload)`],
        ['mean', fixed(upload.mean, 1), ''],
        ['min', fixed(upload.min, 1), ''],
        ['max', fixed(upload.max, 1), ''],
      ],
      (column) => column === 1,
    ),
  );

  out.push(
    `\n2. List page on a list of ${fill.contacts.toLocaleString('en-US')} contacts` +
      `\n   fill: ${fill.requests} bulk requests of ${BULK_BATCH.toLocaleString('en-US')} in ${fixed(fill.seconds, 2)} s` +
      ` (${fixed(fill.contacts / fill.seconds, 0)} contacts/s, ${fixed((fill.seconds * 1_000) / fill.requests, 1)} ms per request)` +
      `\n   one at a time: ${sequential.requests} requests of GET …/contacts?limit=${PAGE_LIMIT}, p50 ${fixed(sequential.p50, 1)} ms, mean ${fixed(sequential.mean, 1)} ms` +
      `\n   under load (${CONNECTIONS} connections, ${DURATION} s, autocannon timeout ${REQUEST_TIMEOUT_S} s):`,
  );
  out.push(
    table(
      measurementRows(
        [readyz, page, pages],
        [
          ['page / readyz', page, readyz],
          [`${CONNECTIONS} pages / readyz`, pages, readyz],
        ],
        (m) =>
          m === page ? `GET …/contacts?limit=${PAGE_LIMIT}` : m === pages ? `GET …/contacts?limit=1…${CONNECTIONS}` : `GET ${m.path}`,
      ),
      (column) => column > 0,
    ),
  );
  const verdict = (m: Measurement, target: number) => {
    const ratio = m.reqPerSec / readyz.reqPerSec;
    return `${ratio >= target ? 'met' : 'MISSED'} (${fixed(ratio, 3)}×)`;
  };
  out.push(
    `   targets: one page ≥ ${PAGE_TARGET_RATIO}× readyz ${verdict(page, PAGE_TARGET_RATIO)}, ` +
      `${CONNECTIONS} distinct pages ≥ ${PAGES_TARGET_RATIO}× ${verdict(pages, PAGES_TARGET_RATIO)}`,
  );

  if (plans) {
    out.push(
      `\n3. Query plans of the page statement on the big list (${contactPagesSql(false).replace(/\s+/g, ' ')})` +
        `\n   the table holds ${plans.tableRows.toLocaleString('en-US')} contacts, ${plans.listRows.toLocaleString('en-US')} of them (${fixed((100 * plans.listRows) / plans.tableRows, 0)}%) in this list;` +
        ` ${plans.allVisiblePages} of its ${plans.pages} pages are all-visible (what an index-only scan needs)` +
        `\n   autovacuum is ${plans.autovacuum} on this server (the load waited ${fixed(result.statisticsWait, 1)} s for the statistics it or the service made); jit_above_cost ${plans.jitAboveCost}`,
    );
    for (const plan of plans.plans) {
      out.push(`\n${plan.label}:\n${plan.text}`);
      out.push(
        `=> estimate ${fixed(plan.cost, 0)} (${plan.cost < plans.jitAboveCost ? 'below' : 'ABOVE'} jit_above_cost), ${plan.jit ? 'COMPILED by the JIT' : 'no JIT'}; ` +
          (plan.usesIndex
            ? `index used (${plan.indexes.join(', ') || 'see plan'}), no Seq Scan on contacts`
            : `NO index used${plan.text.includes('Seq Scan on contacts') ? ': Seq Scan on contacts' : ''}`),
      );
    }
  } else if (result.kind === 'embedded') {
    out.push('\n3. Query plans: PostgreSQL only.');
  }
  process.stdout.write(out.join('\n') + '\n');
  return [readyz, page, pages].map(checkClean).every(Boolean);
}

async function main(): Promise<number> {
  process.stdout.write(
    `callforge CSV import bench: ${UPLOADS} uploads of ${CSV_ROWS} rows; page of a ${BIG_LIST_CONTACTS.toLocaleString('en-US')}-contact list with ` +
      `${CONNECTIONS} connections for ${DURATION} s` +
      (WARMUP > 0 ? ` (after ${WARMUP} s unmeasured warm-up)` : '') +
      `; node ${process.version}\n`,
  );
  const { results, failed } = await forEachEngine(benchEngine, report);

  if (results.length > 1) {
    const rows = [
      [
        'engine',
        'upload p50',
        'upload p99',
        'upload mean',
        'fill (s)',
        'page alone p50',
        'readyz req/s',
        'page req/s',
        'page/readyz',
        `${CONNECTIONS} pages/readyz`,
        'page p99',
        'page non-2xx',
        'page estimate',
      ],
      ...results.map((r) => [
        r.engine.split(' ')[0]!,
        fixed(r.upload.p50, 1),
        fixed(r.upload.p99, 1),
        fixed(r.upload.mean, 1),
        fixed(r.fill.seconds, 1),
        fixed(r.sequential.p50, 1),
        fixed(r.readyz.reqPerSec, 1),
        fixed(r.page.reqPerSec, 1),
        `${fixed(r.page.reqPerSec / r.readyz.reqPerSec, 3)}x`,
        `${fixed(r.pages.reqPerSec / r.readyz.reqPerSec, 3)}x`,
        fixed(r.page.p99, 2),
        String(r.page.non2xx),
        r.plans ? fixed(r.plans.plans[0]!.cost, 0) : '-',
      ]),
    ];
    process.stdout.write(
      `\nsummary (times in ms unless stated; target: upload p50 < ${UPLOAD_TARGET_P50_MS} ms on PostgreSQL)\n${table(rows, (column) => column > 0)}\n`,
    );
  }
  return failed ? 1 : 0;
}

await runBench(main);
