import { updateSet, type Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';
import type { SourceStatus, SourceType } from './schemas.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['knowledge_bases', 'knowledge_sources', 'knowledge_chunks'] as const;

export interface BaseRow {
  tenant_id: string;
  id: string;
  name: string;
  description: string | null;
  chunks_version: number;
  created_at: Date;
  updated_at: Date;
  source_count: number;
  chunk_count: number;
}

export interface SourceRow {
  tenant_id: string;
  id: string;
  knowledge_base_id: string;
  source_name: string;
  source_type: SourceType;
  status: SourceStatus;
  url: string | null;
  file_name: string | null;
  format: string | null;
  generation: number;
  chunk_count: number;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  processed_at: Date | null;
}

export interface NewChunk {
  id: string;
  position: number;
  text: string;
  embedding: Float32Array;
}

export interface ChunkHit {
  id: string;
  source_id: string;
  source_name: string;
  text: string;
}

// ---------------------------------------------------------------------------------------------
// Knowledge bases

const BASE_SELECT = `SELECT b.*,
    (SELECT count(*)::int FROM knowledge_sources s WHERE s.tenant_id = b.tenant_id AND s.knowledge_base_id = b.id) AS source_count,
    (SELECT coalesce(sum(s.chunk_count), 0)::int FROM knowledge_sources s WHERE s.tenant_id = b.tenant_id AND s.knowledge_base_id = b.id) AS chunk_count
  FROM knowledge_bases b`;

export async function insertBase(
  db: Queryable,
  tenantId: string,
  base: { id: string; name: string; description: string | null },
): Promise<BaseRow> {
  await db.query('INSERT INTO knowledge_bases (tenant_id, id, name, description) VALUES ($1, $2, $3, $4)', [
    tenantId,
    base.id,
    base.name,
    base.description,
  ]);
  return (await findBase(db, tenantId, base.id))!;
}

export async function findBase(db: Queryable, tenantId: string, id: string): Promise<BaseRow | undefined> {
  const { rows } = await db.query<BaseRow>(`${BASE_SELECT} WHERE b.tenant_id = $1 AND b.id = $2`, [tenantId, id]);
  return rows[0];
}

/** Whether the base is the tenant's, and the version of its chunks. */
export async function baseVersion(db: Queryable, tenantId: string, id: string): Promise<number | undefined> {
  const { rows } = await db.query<{ chunks_version: number }>(
    'SELECT chunks_version FROM knowledge_bases WHERE tenant_id = $1 AND id = $2',
    [tenantId, id],
  );
  return rows[0]?.chunks_version;
}

/** A base's chunk version and the words of a query to search it for (its `english` lexemes, sorted); undefined when the base is not the tenant's. */
export async function baseToSearch(
  db: Queryable,
  tenantId: string,
  id: string,
  query: string,
): Promise<{ chunksVersion: number; words: string[] } | undefined> {
  const { rows } = await db.query<{ chunks_version: number; words: string[] }>(
    `SELECT chunks_version, ARRAY(SELECT lexeme FROM unnest(to_tsvector('english', $3)) ORDER BY lexeme) AS words
     FROM knowledge_bases WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, query],
  );
  return rows[0] && { chunksVersion: rows[0].chunks_version, words: rows[0].words };
}

export async function listBases(db: Queryable, tenantId: string, page: Page): Promise<{ rows: BaseRow[]; total: number }> {
  return selectPage<BaseRow>(
    db,
    {
      rows: `${BASE_SELECT} WHERE b.tenant_id = $1 ORDER BY b.created_at DESC, b.id DESC`,
      total: 'SELECT count(*)::int AS n FROM knowledge_bases WHERE tenant_id = $1',
      params: [tenantId],
    },
    page,
  );
}

export async function updateBase(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: { name?: string; description?: string | null },
): Promise<boolean> {
  const { set, params } = updateSet({ name: patch.name ?? undefined, description: patch.description }, 2);
  const { rowCount } = await db.query(`UPDATE knowledge_bases SET ${set} WHERE tenant_id = $1 AND id = $2`, [tenantId, id, ...params]);
  return rowCount > 0;
}

export async function deleteBase(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM knowledge_bases WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rowCount > 0;
}

/** Ids among `ids` that are not the tenant's knowledge bases. */
export async function missingBases(db: Queryable, tenantId: string, ids: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM unnest($2::uuid[]) AS given(id) WHERE NOT EXISTS (SELECT 1 FROM knowledge_bases b WHERE b.tenant_id = $1 AND b.id = given.id)',
    [tenantId, ids],
  );
  return rows.map((row) => row.id);
}

// Also the lock that puts a base's chunk writers one after another: every change to the chunks
// moves the version first.
const bumpVersion = (db: Queryable, tenantId: string, baseId: string) =>
  db.query('UPDATE knowledge_bases SET chunks_version = chunks_version + 1 WHERE tenant_id = $1 AND id = $2', [tenantId, baseId]);

// ---------------------------------------------------------------------------------------------
// Sources

const SOURCE_COLUMNS =
  'tenant_id, id, knowledge_base_id, source_name, source_type, status, url, file_name, format, generation, chunk_count, error, created_at, updated_at, processed_at';

export async function insertSource(
  db: Queryable,
  tenantId: string,
  source: {
    id: string;
    baseId: string;
    name: string;
    type: SourceType;
    url: string | null;
    fileName: string | null;
    format: string | null;
    content: Buffer | null;
  },
): Promise<SourceRow> {
  const { rows } = await db.query<SourceRow>(
    `INSERT INTO knowledge_sources (tenant_id, id, knowledge_base_id, source_name, source_type, url, file_name, format, content)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${SOURCE_COLUMNS}`,
    [tenantId, source.id, source.baseId, source.name, source.type, source.url, source.fileName, source.format, source.content],
  );
  return rows[0]!;
}

export async function findSource(db: Queryable, tenantId: string, baseId: string, id: string): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>(
    `SELECT ${SOURCE_COLUMNS} FROM knowledge_sources WHERE tenant_id = $1 AND knowledge_base_id = $2 AND id = $3`,
    [tenantId, baseId, id],
  );
  return rows[0];
}

/** The source with what it was made from, for processing. */
export async function sourceWithContent(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<(SourceRow & { content: Buffer | null }) | undefined> {
  const { rows } = await db.query<SourceRow & { content: Buffer | null }>(
    `SELECT ${SOURCE_COLUMNS}, content FROM knowledge_sources WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return rows[0];
}

export async function listSources(
  db: Queryable,
  tenantId: string,
  baseId: string,
  page: Page,
): Promise<{ rows: SourceRow[]; total: number }> {
  return selectPage<SourceRow>(
    db,
    {
      rows: `SELECT ${SOURCE_COLUMNS} FROM knowledge_sources WHERE tenant_id = $1 AND knowledge_base_id = $2 ORDER BY created_at DESC, id DESC`,
      total: 'SELECT count(*)::int AS n FROM knowledge_sources WHERE tenant_id = $1 AND knowledge_base_id = $2',
      params: [tenantId, baseId],
    },
    page,
  );
}

/** Deletes a source with its chunks, in the caller's transaction. */
export async function deleteSource(db: Queryable, tenantId: string, baseId: string, id: string): Promise<boolean> {
  await bumpVersion(db, tenantId, baseId);
  const { rowCount } = await db.query('DELETE FROM knowledge_sources WHERE tenant_id = $1 AND knowledge_base_id = $2 AND id = $3', [
    tenantId,
    baseId,
    id,
  ]);
  return rowCount > 0;
}

/** Starts a new generation of a source (a refresh); returns it, or undefined when it is gone. */
export async function restartSource(db: Queryable, tenantId: string, baseId: string, id: string): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>(
    `UPDATE knowledge_sources SET status = 'PROCESSING', error = NULL, generation = generation + 1, updated_at = now()
     WHERE tenant_id = $1 AND knowledge_base_id = $2 AND id = $3 RETURNING ${SOURCE_COLUMNS}`,
    [tenantId, baseId, id],
  );
  return rows[0];
}

/** Whether the source is still being processed in this generation (not deleted, refreshed or settled since). */
export async function stillProcessing(db: Queryable, tenantId: string, id: string, generation: number): Promise<boolean> {
  const { rows } = await db.query(
    "SELECT 1 FROM knowledge_sources WHERE tenant_id = $1 AND id = $2 AND generation = $3 AND status = 'PROCESSING'",
    [tenantId, id, generation],
  );
  return rows.length > 0;
}

/** Locks the source when it is still the generation a job was given; undefined means the job is outdated. */
export async function lockGeneration(db: Queryable, tenantId: string, id: string, generation: number): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>(
    `SELECT ${SOURCE_COLUMNS} FROM knowledge_sources WHERE tenant_id = $1 AND id = $2 AND generation = $3 FOR UPDATE`,
    [tenantId, id, generation],
  );
  return rows[0];
}

export async function markFailed(db: Queryable, tenantId: string, id: string, error: string, at: Date): Promise<SourceRow> {
  const { rows } = await db.query<SourceRow>(
    `UPDATE knowledge_sources SET status = 'FAILED', error = $3, processed_at = $4, updated_at = $4 WHERE tenant_id = $1 AND id = $2 RETURNING ${SOURCE_COLUMNS}`,
    [tenantId, id, error, at],
  );
  return rows[0]!;
}

// ---------------------------------------------------------------------------------------------
// Chunks

// Embeddings are stored as float32 in the machine's byte order (little-endian on x86 and ARM).
const toBytes = (vector: Float32Array) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
export const fromBytes = (bytes: Buffer) => new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
const toVectorLiteral = (vector: Float32Array) => `[${Array.from(vector).join(',')}]`;

/**
 * Replaces a source's chunks and marks it READY, in the caller's transaction; `withVector` also
 * fills the pgvector column. The base's chunk version moves so caches reload.
 */
export async function replaceChunks(
  db: Queryable,
  tenantId: string,
  source: SourceRow,
  model: string,
  chunks: NewChunk[],
  withVector: boolean,
  at: Date,
): Promise<SourceRow> {
  await bumpVersion(db, tenantId, source.knowledge_base_id);
  await db.query('DELETE FROM knowledge_chunks WHERE tenant_id = $1 AND source_id = $2', [tenantId, source.id]);
  const params = [
    tenantId,
    source.knowledge_base_id,
    source.id,
    model,
    chunks.map((c) => c.id),
    chunks.map((c) => c.position),
    chunks.map((c) => c.text),
    chunks.map((c) => toBytes(c.embedding)),
  ];
  if (withVector) {
    await db.query(
      `INSERT INTO knowledge_chunks (tenant_id, knowledge_base_id, source_id, embedding_model, id, position, text, embedding, embedding_vector)
       SELECT $1, $2, $3, $4, u.id, u.position, u.text, u.embedding, u.vector::vector
       FROM unnest($5::uuid[], $6::int[], $7::text[], $8::bytea[], $9::text[]) AS u(id, position, text, embedding, vector)`,
      [...params, chunks.map((c) => toVectorLiteral(c.embedding))],
    );
  } else {
    await db.query(
      `INSERT INTO knowledge_chunks (tenant_id, knowledge_base_id, source_id, embedding_model, id, position, text, embedding)
       SELECT $1, $2, $3, $4, u.id, u.position, u.text, u.embedding
       FROM unnest($5::uuid[], $6::int[], $7::text[], $8::bytea[]) AS u(id, position, text, embedding)`,
      params,
    );
  }
  const { rows } = await db.query<SourceRow>(
    `UPDATE knowledge_sources SET status = 'READY', error = NULL, chunk_count = $3, processed_at = $4, updated_at = $4
     WHERE tenant_id = $1 AND id = $2 RETURNING ${SOURCE_COLUMNS}`,
    [tenantId, source.id, chunks.length, at],
  );
  return rows[0]!;
}

/** Every embedding of a base made by `model`, for the exact search. */
export async function baseEmbeddings(
  db: Queryable,
  tenantId: string,
  baseId: string,
  model: string,
): Promise<{ id: string; embedding: Buffer }[]> {
  const { rows } = await db.query<{ id: string; embedding: Buffer }>(
    'SELECT id, embedding FROM knowledge_chunks WHERE tenant_id = $1 AND knowledge_base_id = $2 AND embedding_model = $3',
    [tenantId, baseId, model],
  );
  return rows;
}

export async function chunksWithoutVector(
  db: Queryable,
  model: string,
  limit: number,
): Promise<{ tenant_id: string; id: string; embedding: Buffer }[]> {
  const { rows } = await db.query<{ tenant_id: string; id: string; embedding: Buffer }>(
    'SELECT tenant_id, id, embedding FROM knowledge_chunks WHERE embedding_vector IS NULL AND embedding_model = $1 LIMIT $2',
    [model, limit],
  );
  return rows;
}

export async function setVectors(db: Queryable, chunks: { tenant_id: string; id: string; embedding: Buffer }[]): Promise<void> {
  await db.query(
    `UPDATE knowledge_chunks c SET embedding_vector = u.vector::vector
     FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS u(tenant_id, id, vector) WHERE c.tenant_id = u.tenant_id AND c.id = u.id`,
    [chunks.map((c) => c.tenant_id), chunks.map((c) => c.id), chunks.map((c) => toVectorLiteral(fromBytes(c.embedding)))],
  );
}

/** Nearest chunks by the HNSW index; iterative scans keep looking past other tenants' and bases' rows. */
export async function nearestByIndex(
  db: Queryable,
  tenantId: string,
  baseId: string,
  model: string,
  query: Float32Array,
  limit: number,
): Promise<{ id: string; similarity: number }[]> {
  return db.transaction(async (tx) => {
    await tx.query("SET LOCAL hnsw.iterative_scan = 'relaxed_order'");
    await tx.query(`SET LOCAL hnsw.ef_search = ${Math.max(40, limit * 2)}`);
    const { rows } = await tx.query<{ id: string; similarity: number }>(
      `SELECT id, 1 - (embedding_vector <=> $4::vector) AS similarity FROM knowledge_chunks
       WHERE tenant_id = $1 AND knowledge_base_id = $2 AND embedding_model = $3
       ORDER BY embedding_vector <=> $4::vector LIMIT $5`,
      [tenantId, baseId, model, toVectorLiteral(query), limit],
    );
    return rows;
  });
}

/** Every chunk of a base with its words (the lexemes of its full-text vector), in id order, for the full-text ranking. */
export async function baseWords(db: Queryable, tenantId: string, baseId: string): Promise<{ id: string; words: string[] }[]> {
  const { rows } = await db.query<{ id: string; words: string[] }>(
    'SELECT id, tsvector_to_array(search) AS words FROM knowledge_chunks WHERE tenant_id = $1 AND knowledge_base_id = $2 ORDER BY id',
    [tenantId, baseId],
  );
  return rows;
}

export async function chunksByIds(db: Queryable, tenantId: string, ids: string[]): Promise<ChunkHit[]> {
  const { rows } = await db.query<ChunkHit>(
    `SELECT c.id, c.source_id, s.source_name, c.text FROM knowledge_chunks c
     JOIN knowledge_sources s ON s.tenant_id = c.tenant_id AND s.id = c.source_id
     WHERE c.tenant_id = $1 AND c.id = ANY ($2::uuid[])`,
    [tenantId, ids],
  );
  return rows;
}
