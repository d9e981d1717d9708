/**
 * Knowledge bases on a realistic corpus (bench/knowledge-corpus.ts: a large handbook with 50
 * hand-written facts planted in it and asked about in other words):
 *
 * 1. Ingestion through the real `knowledge.process` job on each engine: chunks/s with one embedding
 *    worker (the baseline) and with one per core, and the API's latency meanwhile.
 * 2. On a base of N chunks (default 10,000) on each engine: recall@5 of the 50 questions through
 *    POST /query, and its latency one query at a time and 4 at a time.
 * 3. Fusion: recall@5 of the full-text ranking before (ts_rank, every word alike) and now (BM25
 *    weights), alone and fused with the vector ranking at several settings.
 *
 * The N chunks' vectors are computed once and kept in a file in the system's temporary folder
 * (BENCH_KNOWLEDGE_VECTORS names another), so later runs skip the model. See bench/README.md.
 */
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jobDefinitions } from '../src/jobs.ts';
import { parseDocument } from '../src/modules/knowledge/parsing.ts';
import * as repo from '../src/modules/knowledge/repo.ts';
import { FUSION, reciprocalRankFusion } from '../src/modules/knowledge/service.ts';
import { newId } from '../src/platform/ids.ts';
import { fixed, inProcessRuntime, intFromEnv, runBench, sleep, table, workUntilSettled } from './harness.ts';
import { knowledgeCorpus, type KnowledgeCorpus } from './knowledge-corpus.ts';

const CHUNKS = intFromEnv('BENCH_KNOWLEDGE_CHUNKS', 10_000, 100);
const INGEST_CHUNKS = intFromEnv('BENCH_KNOWLEDGE_INGEST_CHUNKS', 600, 10);
const QUERIES = intFromEnv('BENCH_KNOWLEDGE_QUERIES', 200, 10);
/** Milliseconds between the starts of two API requests (and two queries) during ingestion; 0: back to back. */
const PROBE_MS = intFromEnv('BENCH_KNOWLEDGE_PROBE_MS', 0, 0);
const CONCURRENT = 4;
const TOP_K = 5;
const VECTOR_FILE = process.env.BENCH_KNOWLEDGE_VECTORS ?? join(tmpdir(), 'callforge-bench-knowledge-vectors.bin');
const DIMENSIONS = 512;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const load = () =>
  loadavg()
    .map((value) => fixed(value, 1))
    .join(', ');
const timed = async (work: () => Promise<unknown>) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};

type Opened = Awaited<ReturnType<typeof inProcessRuntime>>;

async function tenantApi(opened: Opened) {
  const signup = await opened.app.inject({
    method: 'POST',
    url: '/api/v1/auth/signup',
    payload: { tenantName: 'Bench', email: `bench-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery' },
  });
  const { accessToken, user } = signup.json() as { accessToken: string; user: { tenantId: string } };
  const call = (method: 'POST' | 'GET', url: string, payload?: object) =>
    opened.app.inject({
      method,
      url: `/api/v1${url}`,
      headers: { authorization: `Bearer ${accessToken}` },
      ...(payload ? { payload } : {}),
    });
  return { tenantId: user.tenantId, call };
}

// ---------------------------------------------------------------------------------------------
// Vectors of the corpus, kept between runs: records of sha256(model, text) and the vector.

const RECORD_BYTES = 32 + DIMENSIONS * 4;
// The model's name and how its weights are quantized: vectors kept by an older build are not reused.
const textKey = (text: string) => createHash('sha256').update(`use-lite-512 7-bit\n${text}`).digest('hex');

async function corpusVectors(texts: string[]): Promise<Float32Array[]> {
  const known = new Map<string, Float32Array>();
  if (existsSync(VECTOR_FILE)) {
    const bytes = readFileSync(VECTOR_FILE);
    for (let at = 0; at + RECORD_BYTES <= bytes.length; at += RECORD_BYTES) {
      const vector = new Float32Array(bytes.buffer.slice(bytes.byteOffset + at + 32, bytes.byteOffset + at + RECORD_BYTES));
      known.set(bytes.subarray(at, at + 32).toString('hex'), vector);
    }
  }
  const missing = [...new Set(texts.filter((text) => !known.has(textKey(text))))];
  process.stdout.write(`Vectors: ${texts.length - missing.length} of ${texts.length} read from ${VECTOR_FILE}\n`);
  if (missing.length > 0) {
    const { localSentenceEncoder } = await import('../src/providers/local-embeddings/sentence-encoder.ts');
    const embedder = localSentenceEncoder();
    const started = performance.now();
    for (let i = 0; i < missing.length; i += 240) {
      const batch = missing.slice(i, i + 240);
      const vectors = await embedder.embed(batch);
      appendFileSync(
        VECTOR_FILE,
        Buffer.concat(
          batch.map((text, j) => Buffer.concat([Buffer.from(textKey(text), 'hex'), Buffer.from(vectors[j]!.buffer as ArrayBuffer)])),
        ),
      );
      batch.forEach((text, j) => known.set(textKey(text), vectors[j]!));
      const seconds = (performance.now() - started) / 1000;
      process.stdout.write(`   embedded ${i + batch.length} of ${missing.length} (${fixed((i + batch.length) / seconds, 1)} chunks/s)\n`);
    }
  }
  return texts.map((text) => known.get(textKey(text))!);
}

// ---------------------------------------------------------------------------------------------
// 1. Ingestion while the API answers

interface IngestRow {
  engine: string;
  workers: number;
  chunks: number;
  chunksPerSecond: number;
  idleP99: number;
  busyP50: number;
  busyP99: number;
  queryP95: number;
}

/**
 * Latencies of `probe` called until `done` says stop: back to back (the default, the worst case:
 * a request always waiting), or one every BENCH_KNOWLEDGE_PROBE_MS at most, as users would.
 */
async function probeUntil(probe: () => Promise<unknown>, done: () => boolean): Promise<number[]> {
  const times: number[] = [];
  while (!done()) {
    const started = performance.now();
    times.push(await timed(probe));
    const rest = PROBE_MS - (performance.now() - started);
    if (rest > 0) await sleep(rest);
  }
  return times;
}

async function measureIngestion(
  engine: string,
  adminUrl: string | undefined,
  workers: number,
  corpus: KnowledgeCorpus,
): Promise<IngestRow> {
  // A loaded machine must not fail the sources on the parsing time limit (this measures throughput).
  const opened = await inProcessRuntime(adminUrl, { EMBEDDING_WORKERS: String(workers), KNOWLEDGE_PARSE_TIMEOUT_SECONDS: '600' });
  const { runtime } = opened;
  const { tenantId, call } = await tenantApi(opened);
  const base = (await call('POST', '/knowledge-bases', { name: 'Ingest' })).json() as { id: string };
  // Handbook parts (the planted documents are at the start; skip them) until INGEST_CHUNKS chunks.
  const documents = corpus.documents.slice(6, 6 + Math.ceil(INGEST_CHUNKS / 40));
  for (const document of documents)
    await call('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: document.name, rawText: document.text });
  // Warm the query lane so its model load is not counted as a query, and start the document parser
  // and the embedding workers (each loads the model): this measures a running service's pace, not
  // its first source's wait for them (a second or two, which would be a fifth of a 600-chunk run).
  await call('POST', `/knowledge-bases/${base.id}/query`, { query: 'warm up', topK: TOP_K });
  await parseDocument('txt', Buffer.from('Warm up.'), runtime.config.knowledge.parseLimits);
  await runtime.knowledge.embedder.embed(corpus.chunks.slice(0, 8 * workers));

  const list = () => call('GET', '/knowledge-bases?limit=10');
  const idleUntil = performance.now() + 3000;
  const idle = await probeUntil(list, () => performance.now() > idleUntil);

  let settled = false;
  const settledCount = async () => {
    const { rows } = await runtime.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM knowledge_sources WHERE tenant_id = $1 AND status <> 'PROCESSING'",
      [tenantId],
    );
    return rows[0]!.n;
  };
  const busy = probeUntil(list, () => settled);
  const queries = probeUntil(
    () => call('POST', `/knowledge-bases/${base.id}/query`, { query: corpus.questions[0]!.question, topK: TOP_K }),
    () => settled,
  );
  const seconds = await workUntilSettled(() => runtime.jobs.work(jobDefinitions(runtime)), settledCount, {
    expected: documents.length,
    what: 'sources',
    timeoutS: 3600,
    pollMs: 100,
  });
  settled = true;
  const [busyTimes, queryTimes] = await Promise.all([busy, queries]);
  const { rows } = await runtime.db.query<{ n: number }>(
    'SELECT coalesce(sum(chunk_count), 0)::int AS n FROM knowledge_sources WHERE tenant_id = $1',
    [tenantId],
  );
  await opened.close();
  return {
    engine,
    workers,
    chunks: rows[0]!.n,
    chunksPerSecond: rows[0]!.n / seconds,
    idleP99: percentile(idle, 99),
    busyP50: percentile(busyTimes, 50),
    busyP99: percentile(busyTimes, 99),
    queryP95: percentile(queryTimes, 95),
  };
}

// ---------------------------------------------------------------------------------------------
// 2. Recall and latency on a large base

interface QueryRow {
  engine: string;
  search: string;
  recall: number;
  aloneP50: number;
  aloneP95: number;
  concurrentP95: number;
}

interface Loaded {
  opened: Opened;
  tenantId: string;
  baseId: string;
  call: Awaited<ReturnType<typeof tenantApi>>['call'];
  textOf: Map<string, string>;
}

async function loadBase(opened: Opened, corpus: KnowledgeCorpus, vectors: Float32Array[]): Promise<Loaded> {
  const { runtime } = opened;
  const { tenantId, call } = await tenantApi(opened);
  const base = (await call('POST', '/knowledge-bases', { name: 'Large' })).json() as { id: string };
  const source = (
    await call('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'Handbook', rawText: 'placeholder' })
  ).json() as { id: string };
  const chunks = corpus.chunks.map((text, position) => ({ id: newId(), position, text, embedding: vectors[position]! }));
  await runtime.db.transaction(async (tx) => {
    const row = (await repo.lockGeneration(tx, tenantId, source.id, 1))!;
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
  await runtime.db.query('ANALYZE');
  return { opened, tenantId, baseId: base.id, call, textOf: new Map(chunks.map((chunk) => [chunk.id, chunk.text])) };
}

async function measureQueries(label: string, loaded: Loaded, corpus: KnowledgeCorpus): Promise<QueryRow> {
  const { call, baseId } = loaded;
  const ask = async (question: string) =>
    ((await call('POST', `/knowledge-bases/${baseId}/query`, { query: question, topK: TOP_K })).json() as { results: { text: string }[] })
      .results;
  const questions = corpus.questions;
  let found = 0;
  for (const q of questions) if ((await ask(q.question)).some((result) => result.text.includes(q.answer))) found++;

  const alone: number[] = [];
  for (let i = 0; i < QUERIES; i++) alone.push(await timed(() => ask(questions[i % questions.length]!.question)));
  const concurrent: number[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENT }, async (_, lane) => {
      for (let i = lane; i < QUERIES; i += CONCURRENT) concurrent.push(await timed(() => ask(questions[i % questions.length]!.question)));
    }),
  );
  return {
    engine: label,
    search: loaded.opened.runtime.knowledge.vectors.kind,
    recall: found / questions.length,
    aloneP50: percentile(alone, 50),
    aloneP95: percentile(alone, 95),
    concurrentP95: percentile(concurrent, 95),
  };
}

// ---------------------------------------------------------------------------------------------
// 3. Full-text ranking and fusion settings

/** The full-text ranking as it was before BM25 weights: ts_rank over any of the query's words. */
async function rankByTextBefore(loaded: Loaded, query: string, limit: number): Promise<string[]> {
  const { rows } = await loaded.opened.runtime.db.query<{ id: string }>(
    `WITH q AS (SELECT nullif(replace(plainto_tsquery('english', $3)::text, ' & ', ' | '), '')::tsquery AS query)
     SELECT c.id FROM knowledge_chunks c, q
     WHERE c.tenant_id = $1 AND c.knowledge_base_id = $2 AND c.search @@ q.query
     ORDER BY ts_rank(c.search, q.query) DESC, c.id LIMIT $4`,
    [loaded.tenantId, loaded.baseId, query, limit],
  );
  return rows.map((row) => row.id);
}

async function fusionTable(loaded: Loaded, corpus: KnowledgeCorpus): Promise<string> {
  const { runtime } = loaded.opened;
  const candidates = Math.max(TOP_K * 4, 20);
  const { embedder, vectors } = runtime.knowledge;
  const chunksVersion = (await repo.baseVersion(runtime.db, loaded.tenantId, loaded.baseId))!;
  const questions = corpus.questions;
  const questionVectors = await embedder.embed(
    questions.map((q) => q.question),
    'query',
  );
  const semantic: string[][] = [];
  for (const vector of questionVectors)
    semantic.push(
      (
        await vectors.nearest(
          runtime.db,
          { tenantId: loaded.tenantId, id: loaded.baseId, chunksVersion },
          embedder.model,
          vector,
          candidates,
        )
      ).map((hit) => hit.id),
    );
  const rankings = { before: [] as string[][], bm25: [] as string[][] };
  const times = { before: [] as number[], bm25: [] as number[] };
  for (const q of questions) {
    times.before.push(await timed(async () => rankings.before.push(await rankByTextBefore(loaded, q.question, candidates))));
    times.bm25.push(
      await timed(async () =>
        rankings.bm25.push(
          await runtime.knowledge.text.rank(
            runtime.db,
            { tenantId: loaded.tenantId, id: loaded.baseId, chunksVersion },
            (await repo.baseToSearch(runtime.db, loaded.tenantId, loaded.baseId, q.question))!.words,
            candidates,
          ),
        ),
      ),
    );
  }
  const recall = (lists: string[][]) =>
    lists.filter((ids, i) => ids.slice(0, TOP_K).some((id) => loaded.textOf.get(id)!.includes(questions[i]!.answer))).length /
    questions.length;
  const fused = (lexical: string[][], k: number, textWeight: number) =>
    recall(lexical.map((ids, i) => reciprocalRankFusion([ids, semantic[i]!], { k, weights: [textWeight, 1] }).map((hit) => hit.id)));

  const settings: [number, number][] = [];
  for (const k of [5, 20, 60]) for (const textWeight of [0.5, 0.75, 1, 1.5, 2]) settings.push([k, textWeight]);
  const rows = [
    ['fusion (k, text : vector weight)', 'before (ts_rank)', 'now (BM25)'],
    ['full text alone', fixed(recall(rankings.before), 2), fixed(recall(rankings.bm25), 2)],
    ['vector alone', fixed(recall(semantic), 2), fixed(recall(semantic), 2)],
    ...settings.map(([k, textWeight]) => [
      `k ${k}, ${textWeight} : 1${k === FUSION.k && textWeight === FUSION.textWeight / FUSION.vectorWeight ? ' (chosen)' : ''}${k === 60 && textWeight === 1 ? ' (before)' : ''}`,
      fixed(fused(rankings.before, k, textWeight), 2),
      fixed(fused(rankings.bm25, k, textWeight), 2),
    ]),
    ['full-text ranking p95 ms', fixed(percentile(times.before, 95), 1), fixed(percentile(times.bm25, 95), 1)],
  ];
  return table(rows, (column) => column >= 1);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const adminUrl = process.env.DATABASE_URL;
  const corpus = knowledgeCorpus(CHUNKS);
  process.stdout.write(
    `Knowledge on ${availableParallelism()} cores (load average ${load()}): ${corpus.chunks.length.toLocaleString('en-US')} chunks from ${corpus.documents.length} documents, ${corpus.vocabulary.toLocaleString('en-US')} distinct words, ${corpus.questions.length} questions\n`,
  );
  const vectors = await corpusVectors(corpus.chunks);

  process.stdout.write(
    `\n1. Ingestion of about ${INGEST_CHUNKS} chunks through the job (default vector search); meanwhile a request and a query ${PROBE_MS > 0 ? `every ${PROBE_MS} ms at most` : 'always in flight'}\n`,
  );
  const databases: [string, string | undefined][] = [['embedded (PGlite)', undefined]];
  if (adminUrl) databases.push(['PostgreSQL server', adminUrl]);
  const ingestion: IngestRow[] = [];
  for (const [engine, url] of databases)
    for (const workers of [1, availableParallelism()]) {
      ingestion.push(await measureIngestion(engine, url, workers, corpus));
      process.stdout.write(`   (load average ${load()})\n`);
    }
  process.stdout.write(
    table(
      [
        [
          'engine',
          'embedding workers',
          'chunks',
          'chunks/s',
          'vs 1 worker',
          'API p99 idle ms',
          'API p50 ms meanwhile',
          'API p99 ms meanwhile',
          'query p95 ms meanwhile',
        ],
        ...ingestion.map((row) => [
          row.engine,
          String(row.workers),
          String(row.chunks),
          fixed(row.chunksPerSecond, 1),
          `${fixed(row.chunksPerSecond / ingestion.find((one) => one.engine === row.engine)!.chunksPerSecond, 2)}x`,
          fixed(row.idleP99, 1),
          fixed(row.busyP50, 1),
          fixed(row.busyP99, 1),
          fixed(row.queryP95, 1),
        ]),
      ],
      (column) => column >= 2,
    ) + '\n',
  );

  process.stdout.write(`\n2. ${QUERIES} queries (topK ${TOP_K}) on ${corpus.chunks.length.toLocaleString('en-US')} chunks\n`);
  const engines: [string, string | undefined, Record<string, string>][] = [
    ['embedded (PGlite)', undefined, { VECTOR_SEARCH: 'auto' }],
    ['embedded (PGlite)', undefined, { VECTOR_SEARCH: 'hnsw' }],
  ];
  if (adminUrl) engines.push(['PostgreSQL server', adminUrl, {}]);
  else process.stdout.write('DATABASE_URL is not set: the PostgreSQL server is left out.\n');
  const rows: QueryRow[] = [];
  let fusion = '';
  for (const [label, url, env] of engines) {
    const loaded = await loadBase(await inProcessRuntime(url, env), corpus, vectors);
    rows.push(await measureQueries(label, loaded, corpus));
    if (loaded.opened.runtime.knowledge.vectors.kind === 'exact' && !fusion) fusion = await fusionTable(loaded, corpus);
    await loaded.opened.close();
    process.stdout.write(`   ${label} done (load average ${load()})\n`);
  }
  process.stdout.write(
    table(
      [
        [
          'engine',
          'vector search',
          'recall@5',
          'p50 ms alone',
          'p95 ms alone',
          `p95 ms ${CONCURRENT} at a time`,
          `${CONCURRENT} at a time / alone`,
        ],
        ...rows.map((row) => [
          row.engine,
          row.search,
          fixed(row.recall, 2),
          fixed(row.aloneP50, 1),
          fixed(row.aloneP95, 1),
          fixed(row.concurrentP95, 1),
          `${fixed(row.concurrentP95 / row.aloneP95, 2)}x`,
        ]),
      ],
      (column) => column >= 2,
    ) + '\n',
  );
  process.stdout.write(
    `\n3. recall@5 of the ${corpus.questions.length} questions by full-text ranking and fusion (embedded PGlite, exact vectors)\n${fusion}\n`,
  );
  process.stdout.write(`\nLoad average at the end: ${load()}\n`);
  return 0;
}

void runBench(main);
