import type { Config } from '../../config.ts';
import { withoutStatementTimeout, type Db, type Queryable } from '../../platform/db.ts';
import type { Logger } from '../../platform/logger.ts';
import type { GraphBuilder, ort } from '../../platform/onnx-graph.ts';
import type { Embedder } from '../../providers/types.ts';
import type { BaseCache, BaseRef } from './base-cache.ts';
import * as repo from './repo.ts';

export interface Ranked {
  id: string;
  similarity: number;
}

/** Nearest chunks of one base to a query vector, by cosine similarity (most similar first). */
export interface VectorSearch {
  readonly kind: 'hnsw' | 'exact';
  /** Whether stored chunks also fill the pgvector column (it exists on this database). */
  readonly fillsVectorColumn: boolean;
  nearest(db: Queryable, base: BaseRef, model: string, query: Float32Array, limit: number): Promise<Ranked[]>;
}

// Any fixed number shared by every process: one process at a time changes the column.
const VECTOR_LOCK = 7_140_532;

/**
 * Decides how this process searches vectors. The index (mode `hnsw`, or `auto` on a PostgreSQL
 * server): pgvector is installed when the database offers it and `knowledge_chunks.embedding_vector`
 * gets the embedder's dimensions and an HNSW index (a column of other dimensions is replaced: those
 * vectors came from another model). Otherwise the search is exact cosine over the stored embeddings.
 *
 * `auto` on the embedded database is exact: there the index search runs in the database's one
 * thread, queued behind every other statement, and each chunk written pays its insert into the
 * graph; at the sizes an embedded installation holds the exact search was measured faster, more
 * accurate and quicker to index (docs/knowledge-performance.md). Only this process uses an
 * embedded database, so a column left by an earlier `hnsw` spell is dropped rather than kept
 * filled for nobody.
 */
export async function openVectorSearch(
  db: Db,
  embedder: Embedder,
  mode: Config['knowledge']['vectorSearch'],
  cache: BaseCache,
  log: Logger,
): Promise<VectorSearch> {
  const embedded = db.engine === 'pglite';
  const wantsIndex = mode === 'hnsw' || (mode === 'auto' && !embedded);
  const column = await db.transaction(async (tx) => {
    // Building the index over every chunk (or waiting for another process' build) is not a request.
    await withoutStatementTimeout(tx);
    await tx.query('SELECT pg_advisory_xact_lock($1)', [VECTOR_LOCK]);
    const { rows } = await tx.query<{ type: string }>(
      "SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'knowledge_chunks'::regclass AND attname = 'embedding_vector' AND NOT attisdropped",
    );
    const wanted = `vector(${embedder.dimensions})`;
    if (!wantsIndex && embedded) {
      if (rows[0]) await tx.query('ALTER TABLE knowledge_chunks DROP COLUMN embedding_vector');
      return false;
    }
    // On a server, a column another process searches by stays filled whatever this one's mode.
    if (rows[0]?.type === wanted) return true;
    if (!wantsIndex) return false;
    if (!(await installVector(tx))) return false;
    if (rows[0]) await tx.query('ALTER TABLE knowledge_chunks DROP COLUMN embedding_vector');
    await tx.query(`ALTER TABLE knowledge_chunks ADD COLUMN embedding_vector ${wanted}`);
    await tx.query('CREATE INDEX knowledge_chunks_vector_idx ON knowledge_chunks USING hnsw (embedding_vector vector_cosine_ops)');
    return true;
  });
  if (column) await backfillVectors(db, embedder.model);
  const kind = column && wantsIndex ? 'hnsw' : 'exact';
  log.info(
    { vectorSearch: kind },
    kind === 'hnsw' ? 'knowledge search uses the pgvector HNSW index' : 'knowledge search uses exact cosine similarity',
  );
  if (kind === 'hnsw') {
    return {
      kind,
      fillsVectorColumn: true,
      nearest: (tx, base, model, query, limit) => repo.nearestByIndex(tx, base.tenantId, base.id, model, query, limit),
    };
  }
  return exactVectorSearch(cache, column);
}

/** CREATE EXTENSION in a savepoint: where pgvector is not installable the transaction goes on. */
async function installVector(tx: Queryable): Promise<boolean> {
  await tx.query('SAVEPOINT vector_extension');
  try {
    await tx.query('CREATE EXTENSION IF NOT EXISTS vector');
    await tx.query('RELEASE SAVEPOINT vector_extension');
    return true;
  } catch {
    await tx.query('ROLLBACK TO SAVEPOINT vector_extension');
    return false;
  }
}

/** Chunks stored while the column was missing (an `exact` spell) get their vectors now. */
async function backfillVectors(db: Db, model: string): Promise<void> {
  for (;;) {
    const missing = await repo.chunksWithoutVector(db, model, 500);
    if (missing.length === 0) return;
    await repo.setVectors(db, missing);
  }
}

interface BaseVectors {
  ids: string[];
  vectors: Float32Array;
}

/**
 * Exact cosine similarity (vectors are unit length: a dot product) over a base's embeddings,
 * kept in memory per base (`baseCache`) until its chunk version moves.
 */
export function exactVectorSearch(cache: BaseCache, fillsVectorColumn: boolean): VectorSearch {
  const read = async (db: Queryable, base: BaseRef, model: string, dimensions: number) => {
    const rows = (await repo.baseEmbeddings(db, base.tenantId, base.id, model)).filter(
      (row) => row.embedding.byteLength === dimensions * 4,
    );
    const vectors = new Float32Array(rows.length * dimensions);
    rows.forEach((row, i) => vectors.set(repo.fromBytes(row.embedding), i * dimensions));
    return { value: { ids: rows.map((row) => row.id), vectors }, bytes: vectors.byteLength };
  };

  return {
    kind: 'exact',
    fillsVectorColumn,
    async nearest(db, base, model, query, limit) {
      const { ids, vectors } = await cache.get<BaseVectors>(base, `vectors ${query.length} ${model}`, () =>
        read(db, base, model, query.length),
      );
      return (await nearestRows(vectors, query.length, query, limit)).map(({ row, similarity }) => ({ id: ids[row]!, similarity }));
    },
  };
}

/** Loaded on the first exact search: a process that never searches (HNSW, a worker) does not load the runtime (0.1 s, 13 MB). */
let scoring: Promise<{ session: ort.InferenceSession; Tensor: typeof ort.Tensor }> | undefined;

/**
 * The `limit` rows of `vectors` (rows of `dimensions` values) with the highest dot product with
 * `query`, highest first (ties: lower row first), by ONNX Runtime's native kernels: a MatMul and a
 * TopK. On 10,000 rows of 512: 1.7 ms, against 5.9 ms for the best JavaScript loop (Node 20),
 * which was most of a query's time on the event loop. The vectors are read where they are.
 */
export async function nearestRows(
  vectors: Float32Array,
  dimensions: number,
  query: Float32Array,
  limit: number,
): Promise<{ row: number; similarity: number }[]> {
  const rows = vectors.length / dimensions;
  const k = Math.min(limit, rows);
  if (k <= 0) return [];
  scoring ??= import('../../platform/onnx-graph.ts').then(async ({ graphBuilder, openSession, ort }) => ({
    session: await openSession(scoringGraph(graphBuilder())),
    Tensor: ort.Tensor,
  }));
  const { session, Tensor } = await scoring;
  const result = await session.run({
    vectors: new Tensor('float32', vectors, [rows, dimensions]),
    query: new Tensor('float32', query, [dimensions, 1]),
    k: new Tensor('int64', BigInt64Array.of(BigInt(k)), [1]),
  });
  const [similarityOutput, rowOutput] = session.outputNames as [string, string];
  const similarities = result[similarityOutput]!.data as Float32Array;
  const indices = result[rowOutput]!.data as BigInt64Array;
  return Array.from(indices, (row, i) => ({ row: Number(row), similarity: similarities[i]! }));
}

function scoringGraph({ op, node, ints, model }: GraphBuilder): Uint8Array {
  const scores = op('Reshape', [op('MatMul', ['vectors', 'query']), ints(-1)]);
  const [similarities, rows] = node('TopK', [scores, 'k'], { largest: 1, sorted: 1 }, 2) as [string, string];
  return model(
    'nearest-rows',
    [
      { name: 'vectors', type: 'float', dims: ['rows', 'dimensions'] },
      { name: 'query', type: 'float', dims: ['dimensions', 1] },
      { name: 'k', type: 'int64', dims: [1] },
    ],
    [
      { name: similarities, type: 'float', dims: ['k'] },
      { name: rows, type: 'int64', dims: ['k'] },
    ],
  );
}
