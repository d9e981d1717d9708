/**
 * Knowledge bases: ingestion through the real `knowledge.process` job (text sources chunked and
 * embedded by the offline model, stored on the engine), then query latency on a base of N chunks
 * (default 10,000) through POST /query in process: the full hybrid query, and the vector search
 * alone. Engines: embedded PGlite with the pgvector HNSW index and with exact cosine, and the
 * PostgreSQL server of DATABASE_URL (exact cosine: pgvector is not installable there). The N
 * chunks' vectors are computed once and stored on every engine. See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { jobDefinitions } from '../src/jobs.ts';
import { chunkText } from '../src/modules/knowledge/chunking.ts';
import * as repo from '../src/modules/knowledge/repo.ts';
import { newId } from '../src/platform/ids.ts';
import { fixed, inProcessRuntime, intFromEnv, runBench, table, workUntilSettled } from './harness.ts';

const CHUNKS = intFromEnv('BENCH_KNOWLEDGE_CHUNKS', 10_000, 100);
const INGEST_SOURCES = intFromEnv('BENCH_KNOWLEDGE_SOURCES', 20, 1);
const QUERIES = intFromEnv('BENCH_KNOWLEDGE_QUERIES', 200, 10);

// A made-up business vocabulary: enough words that texts differ, few enough that they overlap.
const SUBJECTS = [
  'The clinic',
  'Our helpline',
  'The invoice',
  'Your contract',
  'The workshop',
  'A refund',
  'The venue',
  'Your policy',
  'The technician',
  'A late payment',
  'The deposit',
  'Your appointment',
];
const VERBS = [
  'is processed within',
  'must be confirmed within',
  'can be moved within',
  'is charged after',
  'is reviewed within',
  'expires after',
];
const SPANS = ['two business days', 'five working days', '48 hours', 'one week', 'thirty days', 'the first of the month', 'ten minutes'];
const TAILS = [
  'unless the account is overdue.',
  'for customers in the north region.',
  'when the request arrives by phone.',
  'except on public holidays.',
  'if a reference number is given.',
  'as stated in the terms of service.',
];

const pick = <T>(items: T[], seed: number) => items[seed % items.length]!;
const sentence = (seed: number) =>
  `${pick(SUBJECTS, seed)} ${pick(VERBS, seed * 7 + 3)} ${pick(SPANS, seed * 13 + 5)} ${pick(TAILS, seed * 31 + 11)} Case ${seed}.`;
const passage = (seed: number) => [0, 1, 2].map((i) => sentence(seed * 3 + i)).join(' ');
const question = (seed: number) =>
  `How long until ${pick(SUBJECTS, seed).toLowerCase()} ${pick(VERBS, seed * 7 + 3).split(' ')[0]} ${pick(['done', 'handled', 'confirmed'], seed)}?`;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

type Opened = Awaited<ReturnType<typeof inProcessRuntime>>;

async function tenantKey(opened: Opened): Promise<{ key: string; tenantId: string }> {
  const signup = await opened.app.inject({
    method: 'POST',
    url: '/api/v1/auth/signup',
    payload: { tenantName: 'Bench', email: `bench-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery' },
  });
  const { accessToken, user } = signup.json() as { accessToken: string; user: { tenantId: string } };
  const key = await opened.app.inject({
    method: 'POST',
    url: '/api/v1/api-keys',
    headers: { authorization: `Bearer ${accessToken}` },
    payload: { name: 'bench' },
  });
  return { key: (key.json() as { key: string }).key, tenantId: user.tenantId };
}

interface Row {
  engine: string;
  search: string;
  chunksPerSecond: number;
  queryP50: number;
  queryP95: number;
  vectorP50: number;
  vectorP95: number;
  firstQuery: number;
}

async function measureEngine(opened: Opened, label: string, corpus: { texts: string[]; vectors: Float32Array[] }): Promise<Row> {
  const { runtime, app } = opened;
  const { key, tenantId } = await tenantKey(opened);
  const call = (method: 'POST' | 'GET', url: string, payload?: object) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: `Bearer ${key}` }, ...(payload ? { payload } : {}) });

  // Ingestion: text sources through the job, timed from the first job to the last READY.
  const ingest = (await call('POST', '/knowledge-bases', { name: 'Ingest' })).json() as { id: string };
  const documents = Array.from({ length: INGEST_SOURCES }, (_, d) =>
    Array.from({ length: 25 }, (_, p) => `## Section ${p}\n\n${passage(d * 100 + p)}`).join('\n\n'),
  );
  for (const [d, rawText] of documents.entries())
    await call('POST', `/knowledge-bases/${ingest.id}/sources`, { sourceType: 'text', sourceName: `Document ${d}`, rawText });
  const settledCount = async () => {
    const { rows } = await runtime.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM knowledge_sources WHERE tenant_id = $1 AND status <> 'PROCESSING'",
      [tenantId],
    );
    return rows[0]!.n;
  };
  const seconds = await workUntilSettled(() => runtime.jobs.work(jobDefinitions(runtime)), settledCount, {
    expected: INGEST_SOURCES,
    what: 'sources',
    timeoutS: 900,
    pollMs: 100,
  });
  const { rows } = await runtime.db.query<{ n: number }>(
    'SELECT coalesce(sum(chunk_count), 0)::int AS n FROM knowledge_sources WHERE tenant_id = $1',
    [tenantId],
  );
  const chunksPerSecond = rows[0]!.n / seconds;

  // Query latency on a base of CHUNKS chunks, stored with their precomputed vectors.
  const base = (await call('POST', '/knowledge-bases', { name: 'Large' })).json() as { id: string };
  const source = (
    await call('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'Large', rawText: 'placeholder' })
  ).json() as { id: string };
  await runtime.db.transaction(async (tx) => {
    const row = (await repo.lockGeneration(tx, tenantId, source.id, 1))!;
    const chunks = corpus.texts.map((text, position) => ({ id: newId(), position, text, embedding: corpus.vectors[position]! }));
    await repo.replaceChunks(
      tx,
      tenantId,
      row,
      runtime.knowledge.embedder.model,
      chunks,
      runtime.knowledge.vectors.fillsVectorColumn,
      new Date(),
    );
  });
  await runtime.db.query('ANALYZE knowledge_chunks');

  const timed = async (work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  const firstQuery = await timed(() => call('POST', `/knowledge-bases/${base.id}/query`, { query: question(0), topK: 5 }));
  const queryTimes: number[] = [];
  const vectorTimes: number[] = [];
  const baseRef = { tenantId, id: base.id, chunksVersion: (await repo.baseVersion(runtime.db, tenantId, base.id))! };
  for (let i = 1; i <= QUERIES; i++) {
    queryTimes.push(await timed(() => call('POST', `/knowledge-bases/${base.id}/query`, { query: question(i), topK: 5 })));
    const probe = corpus.vectors[(i * 7919) % corpus.vectors.length]!;
    vectorTimes.push(
      await timed(() => runtime.knowledge.vectors.nearest(runtime.db, baseRef, runtime.knowledge.embedder.model, probe, 20)),
    );
  }
  queryTimes.sort((a, b) => a - b);
  vectorTimes.sort((a, b) => a - b);
  return {
    engine: label,
    search: runtime.knowledge.vectors.kind,
    chunksPerSecond,
    queryP50: percentile(queryTimes, 50),
    queryP95: percentile(queryTimes, 95),
    vectorP50: percentile(vectorTimes, 50),
    vectorP95: percentile(vectorTimes, 95),
    firstQuery,
  };
}

async function main(): Promise<number> {
  const adminUrl = process.env.DATABASE_URL;
  process.stdout.write(
    `Knowledge: ingestion of ${INGEST_SOURCES} text sources through the job; ${QUERIES} queries on ${CHUNKS.toLocaleString('en-US')} chunks\n`,
  );

  const { localSentenceEncoder } = await import('../src/providers/local-embeddings/sentence-encoder.ts');
  const embedder = localSentenceEncoder();
  const texts = Array.from({ length: Math.ceil(CHUNKS / 2) }, (_, i) => `## Topic ${i % 50}\n\n${passage(i)} ${passage(i + CHUNKS)}`)
    .flatMap((text) => chunkText(text, { maxChars: 300 }))
    .slice(0, CHUNKS);
  while (texts.length < CHUNKS) texts.push(passage(texts.length + 3 * CHUNKS));
  const started = performance.now();
  const vectors = await embedder.embed(texts);
  const embedSeconds = (performance.now() - started) / 1000;
  process.stdout.write(
    `Embedded ${CHUNKS.toLocaleString('en-US')} chunks once in ${fixed(embedSeconds, 1)} s (${fixed(CHUNKS / embedSeconds, 1)} chunks/s, the model alone)\n\n`,
  );
  const corpus = { texts, vectors };

  const rows: Row[] = [];
  for (const mode of ['auto', 'exact'] as const) {
    const opened = await inProcessRuntime(undefined, { VECTOR_SEARCH: mode });
    rows.push(await measureEngine(opened, 'embedded (PGlite)', corpus));
  }
  if (adminUrl) {
    const opened = await inProcessRuntime(adminUrl);
    rows.push(await measureEngine(opened, 'PostgreSQL server', corpus));
  } else {
    process.stdout.write('DATABASE_URL is not set: the PostgreSQL server is left out.\n');
  }

  const exactBaseline = rows.find((row) => row.search === 'exact')!;
  process.stdout.write(
    table(
      [
        [
          'engine',
          'vector search',
          'ingest chunks/s',
          'query p50 ms',
          'query p95 ms',
          'vector p50 ms',
          'vector p95 ms',
          'first query ms',
          'p95 vs PGlite exact',
        ],
        ...rows.map((row) => [
          row.engine,
          row.search,
          fixed(row.chunksPerSecond, 1),
          fixed(row.queryP50, 1),
          fixed(row.queryP95, 1),
          fixed(row.vectorP50, 2),
          fixed(row.vectorP95, 2),
          fixed(row.firstQuery, 0),
          `${fixed(row.queryP95 / exactBaseline.queryP95, 2)}x`,
        ]),
      ],
      (column) => column >= 2,
    ) + '\n',
  );
  return 0;
}

void runBench(main);
