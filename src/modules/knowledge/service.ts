import type { Config } from '../../config.ts';
import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { onUniqueViolation, type Db } from '../../platform/db.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { isoOrNull } from '../../platform/clock.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import type { Logger } from '../../platform/logger.ts';
import type { Page } from '../../platform/pagination.ts';
import { refusePrivateUrl, safeFetch, UnsafeUrlError } from '../../platform/safe-fetch.ts';
import { localSentenceEncoder } from '../../providers/local-embeddings/sentence-encoder.ts';
import { openAiEmbeddings } from '../../providers/openai-compatible/embeddings.ts';
import type { Embedder } from '../../providers/types.ts';
import * as events from '../events/service.ts';
import { ExtractionError, FETCHABLE_MEDIA_TYPES, formatOfMediaType, type DocumentFormat } from './document-formats.ts';
import { parseDocument } from './parsing.ts';
import * as repo from './repo.ts';
import {
  SOURCE_BYTE_LIMIT,
  TOP_K_DEFAULT,
  type CreateBaseBody,
  type CreateSourceBody,
  type KnowledgeBase,
  type KnowledgeSource,
  type QueryBody,
  type QueryResult,
  type UpdateBaseBody,
} from './schemas.ts';
import { baseCache } from './base-cache.ts';
import { textSearch, type TextSearch } from './text-search.ts';
import { openVectorSearch, type VectorSearch } from './vector-search.ts';

/** What a process needs to index and search: the embedder, the way it searches vectors, its index of the bases' words. */
export interface KnowledgeEngine {
  embedder: Embedder;
  vectors: VectorSearch;
  text: TextSearch;
}

// Platform's Deps cannot name this module's engine (platform imports no module), so the
// module adds its field to Deps here; every program that uses Deps also loads this module.
declare module '../../platform/context.ts' {
  interface Deps {
    knowledge: KnowledgeEngine;
  }
}

export async function openKnowledgeEngine(db: Db, config: Config, log: Logger): Promise<KnowledgeEngine> {
  const settings = config.knowledge;
  const embedder = settings.embeddingsApiUrl
    ? openAiEmbeddings({
        baseUrl: settings.embeddingsApiUrl,
        apiKey: settings.embeddingsApiKey,
        model: settings.embeddingsModel,
        dimensions: settings.embeddingsDimensions,
      })
    : localSentenceEncoder({ documentWorkers: settings.embeddingWorkers || undefined });
  // One memory budget for what both searches keep of the bases they search.
  const cache = baseCache(settings.cacheBytes);
  return {
    embedder,
    vectors: await openVectorSearch(db, embedder, settings.vectorSearch, cache, log),
    text: textSearch(cache),
  };
}

export const toBase = (row: repo.BaseRow): KnowledgeBase => ({
  id: row.id,
  name: row.name,
  description: row.description,
  sourceCount: row.source_count,
  chunkCount: row.chunk_count,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export const toSource = (row: repo.SourceRow): KnowledgeSource => ({
  id: row.id,
  knowledgeBaseId: row.knowledge_base_id,
  sourceName: row.source_name,
  sourceType: row.source_type,
  status: row.status,
  url: row.url,
  fileName: row.file_name,
  chunkCount: row.chunk_count,
  error: row.error,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  processedAt: isoOrNull(row.processed_at),
});

const nameTaken = (name: string) => appError('KNOWLEDGE_BASE_NAME_TAKEN', { name });
const baseNotFound = () => appError('NOT_FOUND', { what: 'Knowledge base' });
const sourceNotFound = () => appError('NOT_FOUND', { what: 'Knowledge source' });

// ---------------------------------------------------------------------------------------------
// Knowledge bases

export async function createBase(ctx: TenantCtx, body: CreateBaseBody): Promise<KnowledgeBase> {
  const name = body.name.trim();
  const row = await onUniqueViolation(
    repo.insertBase(ctx.db, ctx.tenantId, { id: newId(), name, description: body.description ?? null }),
    () => nameTaken(name),
  );
  return toBase(row);
}

export async function getBase(ctx: TenantCtx, id: string): Promise<KnowledgeBase> {
  const row = await repo.findBase(ctx.db, ctx.tenantId, id);
  if (!row) throw baseNotFound();
  return toBase(row);
}

export async function listBases(ctx: TenantCtx, page: Page): Promise<{ data: KnowledgeBase[]; total: number }> {
  const { rows, total } = await repo.listBases(ctx.db, ctx.tenantId, page);
  return { data: rows.map(toBase), total };
}

export async function updateBase(ctx: TenantCtx, id: string, body: UpdateBaseBody): Promise<KnowledgeBase> {
  const name = body.name?.trim();
  const updated = await onUniqueViolation(repo.updateBase(ctx.db, ctx.tenantId, id, { name, description: body.description }), () =>
    nameTaken(name ?? ''),
  );
  if (!updated) throw baseNotFound();
  return getBase(ctx, id);
}

/** Names of the agents that search a base (the agents module answers it). */
export type BaseUsage = (ctx: TenantCtx, baseId: string) => Promise<string[]>;

/** Deletes a base with its sources and chunks; refused while an agent searches it. */
export async function deleteBase(ctx: TenantCtx, id: string, agentsSearching: BaseUsage): Promise<void> {
  if ((await repo.baseVersion(ctx.db, ctx.tenantId, id)) === undefined) throw baseNotFound();
  const agents = await agentsSearching(ctx, id);
  if (agents.length > 0) {
    throw appError('KNOWLEDGE_BASE_IN_USE', { agents: agents.map((name) => `"${name}"`).join(', ') });
  }
  if (!(await repo.deleteBase(ctx.db, ctx.tenantId, id))) throw baseNotFound();
}

/** Refuses knowledge base ids that are not the tenant's (an agent's knowledgeBaseIds): 404, as for any other tenant's resource. */
export async function assertBasesExist(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const missing = await repo.missingBases(ctx.db, ctx.tenantId, ids);
  if (missing.length > 0) {
    throw appError('NOT_FOUND.knowledgeBase', { id: missing[0]! }, [
      { path: `/knowledgeBaseIds/${ids.indexOf(missing[0]!)}`, message: 'is not a knowledge base of this account' },
    ]);
  }
}

// ---------------------------------------------------------------------------------------------
// Sources

export const PROCESS_SOURCE = 'knowledge.process';
export interface ProcessSourceJob {
  tenantId: string;
  sourceId: string;
  generation: number;
}

async function addSource(
  ctx: TenantCtx,
  baseId: string,
  source: Omit<Parameters<typeof repo.insertSource>[2], 'id' | 'baseId'>,
): Promise<KnowledgeSource> {
  return withTransaction(ctx, async (txCtx) => {
    if ((await repo.baseVersion(txCtx.db, ctx.tenantId, baseId)) === undefined) throw baseNotFound();
    const row = await repo.insertSource(txCtx.db, ctx.tenantId, { ...source, id: newId(), baseId });
    await ctx.jobs.send<ProcessSourceJob>(
      PROCESS_SOURCE,
      { tenantId: ctx.tenantId, sourceId: row.id, generation: row.generation },
      { tx: txCtx.db },
    );
    return toSource(row);
  });
}

/** A text or url source from the seed's JSON body; it is processed by a job. */
export async function addJsonSource(ctx: TenantCtx, baseId: string, body: CreateSourceBody): Promise<KnowledgeSource> {
  const name = body.sourceName.trim();
  if (body.sourceType === 'file') {
    throw appError('UNSUPPORTED_MEDIA_TYPE.fileSource');
  }
  if (body.sourceType === 'text') {
    if (body.url !== undefined)
      throw appError('VALIDATION_FAILED.textTakesRawText', {}, [{ path: '/url', message: 'is only for url sources' }]);
    if (body.rawText === undefined)
      throw appError('VALIDATION_FAILED.rawTextRequired', {}, [{ path: '/rawText', message: 'is required when sourceType is text' }]);
    if (body.rawText.trim() === '')
      throw appError('VALIDATION_FAILED.rawTextBlank', {}, [{ path: '/rawText', message: 'has only spaces and line breaks' }]);
    return addSource(ctx, baseId, {
      name,
      type: 'text',
      url: null,
      fileName: null,
      format: 'txt',
      content: Buffer.from(body.rawText, 'utf8'),
    });
  }
  if (body.rawText !== undefined)
    throw appError('VALIDATION_FAILED.urlTakesUrl', {}, [{ path: '/rawText', message: 'is only for text sources' }]);
  if (body.url === undefined)
    throw appError('VALIDATION_FAILED.urlRequired', {}, [{ path: '/url', message: 'is required when sourceType is url' }]);
  const url = httpUrl(body.url);
  await refusePrivateUrl(url, 'url', { allowPrivate: ctx.config.allowPrivateUrls });
  return addSource(ctx, baseId, { name, type: 'url', url, fileName: null, format: null, content: null });
}

function httpUrl(given: string): string {
  let url: URL;
  try {
    url = new URL(given.trim());
  } catch {
    throw appError('VALIDATION_FAILED.urlNotAbsolute', {}, [{ path: '/url', message: 'must be an absolute http or https URL' }]);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw appError('VALIDATION_FAILED.urlScheme', { scheme: url.protocol.replace(':', '') }, [
      { path: '/url', message: 'must use http or https' },
    ]);
  }
  if (url.username || url.password)
    throw appError('VALIDATION_FAILED.urlCredentials', {}, [{ path: '/url', message: 'must not carry credentials' }]);
  return url.href;
}

export async function addFileSource(
  ctx: TenantCtx,
  baseId: string,
  file: { sourceName: string; fileName: string; format: DocumentFormat; bytes: Buffer },
): Promise<KnowledgeSource> {
  return addSource(ctx, baseId, {
    name: file.sourceName.trim(),
    type: 'file',
    url: null,
    fileName: file.fileName,
    format: file.format,
    content: file.bytes,
  });
}

export async function listSources(ctx: TenantCtx, baseId: string, page: Page): Promise<{ data: KnowledgeSource[]; total: number }> {
  if ((await repo.baseVersion(ctx.db, ctx.tenantId, baseId)) === undefined) throw baseNotFound();
  const { rows, total } = await repo.listSources(ctx.db, ctx.tenantId, baseId, page);
  return { data: rows.map(toSource), total };
}

export async function getSource(ctx: TenantCtx, baseId: string, id: string): Promise<KnowledgeSource> {
  const row = await repo.findSource(ctx.db, ctx.tenantId, baseId, id);
  if (!row) throw sourceNotFound();
  return toSource(row);
}

/** Deletes a source and its chunks (a job still working on it finds it gone). */
export async function deleteSource(ctx: TenantCtx, baseId: string, id: string): Promise<void> {
  await withTransaction(ctx, async (txCtx) => {
    if (!(await repo.deleteSource(txCtx.db, ctx.tenantId, baseId, id))) throw sourceNotFound();
  });
}

/** Processes a source again: a url source is fetched anew, text and files are re-chunked and re-embedded. */
export async function refreshSource(ctx: TenantCtx, baseId: string, id: string): Promise<KnowledgeSource> {
  return withTransaction(ctx, async (txCtx) => {
    const row = await repo.restartSource(txCtx.db, ctx.tenantId, baseId, id);
    if (!row) throw sourceNotFound();
    await ctx.jobs.send<ProcessSourceJob>(
      PROCESS_SOURCE,
      { tenantId: ctx.tenantId, sourceId: row.id, generation: row.generation },
      { tx: txCtx.db },
    );
    return toSource(row);
  });
}

// ---------------------------------------------------------------------------------------------
// Processing

/** A reason a source cannot be indexed, worded for the person who added it. */
class SourceError extends Error {}

const FETCH_TIMEOUT_MS = 15_000;
const PROCESS_RETRY_LIMIT = 3;

async function fetchedDocument(ctx: TenantCtx, url: string): Promise<{ format: DocumentFormat; bytes: Buffer }> {
  const response = await safeFetch(url, {
    allowPrivate: ctx.config.allowPrivateUrls,
    accept: FETCHABLE_MEDIA_TYPES,
    maxBytes: SOURCE_BYTE_LIMIT,
    timeoutMs: FETCH_TIMEOUT_MS,
  });
  if (response.status < 200 || response.status >= 300)
    throw new SourceError(`${response.url} answered HTTP ${response.status}; check that the address is right and the page is public.`);
  const format = formatOfMediaType(response.contentType);
  if (!format) throw new SourceError(`${response.url} is ${response.contentType}, which cannot be indexed.`);
  return { format, bytes: response.body };
}

/** The source's text in chunks, parsed in a worker thread within the configured limits. */
async function sourceChunks(ctx: TenantCtx, source: repo.SourceRow & { content: Buffer | null }): Promise<string[]> {
  const document =
    source.source_type === 'url'
      ? await fetchedDocument(ctx, source.url!)
      : { format: source.format as DocumentFormat, bytes: source.content ?? Buffer.alloc(0) };
  return parseDocument(document.format, document.bytes, ctx.config.knowledge.parseLimits);
}

const isUserFacing = (error: unknown) =>
  error instanceof SourceError || error instanceof ExtractionError || error instanceof UnsafeUrlError;

/** Chunks embedded per model call of a source; between two, the job checks the source still wants them. */
const EMBED_SLICE = 256;

/**
 * A source's chunks embedded a slice at a time; undefined as soon as the source is deleted,
 * refreshed or settled meanwhile, so a large document given up on stops costing the model at the
 * next slice rather than at its end (a 10 MB text is thousands of chunks, minutes of model).
 */
async function embedWhileWanted(deps: Deps, ctx: TenantCtx, source: repo.SourceRow, pieces: string[]): Promise<Float32Array[] | undefined> {
  const vectors: Float32Array[] = [];
  for (let at = 0; at < pieces.length; at += EMBED_SLICE) {
    if (at > 0 && !(await repo.stillProcessing(ctx.db, ctx.tenantId, source.id, source.generation))) return undefined;
    vectors.push(...(await deps.knowledge.embedder.embed(pieces.slice(at, at + EMBED_SLICE))));
  }
  return vectors;
}

/**
 * Turns a PROCESSING source into chunks: its text (fetched for a url source, extracted for a
 * file), chunked, embedded and stored, then READY; or FAILED with the reason. Work of an older
 * generation (the source was refreshed or deleted meanwhile) is dropped. Either way the
 * `knowledge_source.processed` event is written with the outcome.
 */
export async function processSource(deps: Deps, job: ProcessSourceJob, meta: { retryCount: number }): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const source = await repo.sourceWithContent(ctx.db, ctx.tenantId, job.sourceId);
  if (!source || source.generation !== job.generation || source.status !== 'PROCESSING') return;
  let outcome: { chunks: repo.NewChunk[] } | { error: string };
  try {
    const pieces = await sourceChunks(ctx, source);
    if (pieces.length === 0) throw new SourceError('The source has no text to index.');
    const embeddings = await embedWhileWanted(deps, ctx, source, pieces);
    if (!embeddings) return;
    outcome = { chunks: pieces.map((text, position) => ({ id: newId(), position, text, embedding: embeddings[position]! })) };
  } catch (error) {
    if (isUserFacing(error)) outcome = { error: (error as Error).message };
    else if (meta.retryCount >= PROCESS_RETRY_LIMIT)
      outcome = {
        error: `Processing failed ${PROCESS_RETRY_LIMIT + 1} times (${(error as Error).message}); refresh the source to try again.`,
      };
    else throw error;
  }
  await withTransaction(ctx, async (txCtx) => {
    const current = await repo.lockGeneration(txCtx.db, ctx.tenantId, source.id, job.generation);
    if (!current || current.status !== 'PROCESSING') return;
    const at = ctx.clock.now();
    const done =
      'chunks' in outcome
        ? await repo.replaceChunks(
            txCtx.db,
            ctx.tenantId,
            current,
            deps.knowledge.embedder.model,
            outcome.chunks,
            deps.knowledge.vectors.fillsVectorColumn,
            at,
          )
        : await repo.markFailed(txCtx.db, ctx.tenantId, current.id, outcome.error, at);
    await events.emitEvent(txCtx, 'knowledge_source.processed', toSource(done), null);
  });
}

export function processSourceJobDefinition(deps: Deps): JobDefinition<ProcessSourceJob> {
  // One source at a time per process, embedded by every worker of the embedder. Two at a time
  // indexed faster (78 against 60 chunks/s) but on the embedded database their writes held its one
  // connection so often that queries asked meanwhile waited (p95 128 against 30 ms; docs/knowledge-performance.md).
  return {
    name: PROCESS_SOURCE,
    retryLimit: PROCESS_RETRY_LIMIT,
    batchSize: 1,
    concurrency: 1,
    expireInSeconds: 3600,
    handle: (data, meta) => processSource(deps, data, meta),
  };
}

// ---------------------------------------------------------------------------------------------
// Retrieval

/**
 * How the full-text and the vector rankings of a base are fused: `k` damps the weight of the very
 * first ranks (60 is the usual constant; a small k trusts each ranking's top more), and each ranking counts with its weight. Chosen by
 * recall@5 on the realistic corpus of bench/knowledge.ts (docs/knowledge-performance.md).
 */
export const FUSION = { k: 5, textWeight: 1, vectorWeight: 1 };

/** Reciprocal rank fusion: each ranking adds weight / (k + rank) to the items it ranks. */
export function reciprocalRankFusion(
  rankings: string[][],
  options: { k?: number; weights?: number[] } = {},
): { id: string; score: number }[] {
  const k = options.k ?? FUSION.k;
  const scores = new Map<string, number>();
  rankings.forEach((ranking, which) => {
    const weight = options.weights?.[which] ?? 1;
    ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + weight / (k + index + 1)));
  });
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
}

/** A passage retrieval found. */
export interface Passage {
  chunkId: string;
  sourceId: string;
  sourceName: string;
  text: string;
  score: number;
}

/**
 * Hybrid retrieval (contract §7): the full-text ranking and the vector ranking of the base's
 * chunks, each cut at a few times topK, fused by reciprocal rank. Undefined when the base does not
 * exist (for this tenant).
 */
async function rankBase(deps: Deps, tenantId: string, baseId: string, query: string, topK: number): Promise<Passage[] | undefined> {
  const candidates = Math.max(topK * 4, 20);
  const { db, knowledge } = deps;
  const toSearch = await repo.baseToSearch(db, tenantId, baseId, query);
  if (!toSearch) return undefined;
  const base = { tenantId, id: baseId, chunksVersion: toSearch.chunksVersion };
  const [lexical, semantic] = await Promise.all([
    knowledge.text.rank(db, base, toSearch.words, candidates),
    knowledge.embedder
      .embed([query], 'query')
      .then(([vector]) => knowledge.vectors.nearest(db, base, knowledge.embedder.model, vector!, candidates)),
  ]);
  const fused = reciprocalRankFusion([lexical, semantic.map((hit) => hit.id)], {
    weights: [FUSION.textWeight, FUSION.vectorWeight],
  }).slice(0, topK);
  const chunks = new Map(
    (
      await repo.chunksByIds(
        db,
        tenantId,
        fused.map((hit) => hit.id),
      )
    ).map((chunk) => [chunk.id, chunk]),
  );
  return fused.flatMap(({ id, score }) => {
    const chunk = chunks.get(id);
    // A chunk deleted between the rankings and this read is left out.
    if (!chunk) return [];
    return [
      {
        chunkId: id,
        sourceId: chunk.source_id,
        sourceName: chunk.source_name,
        text: chunk.text,
        score: Number(score.toFixed(6)),
      },
    ];
  });
}

export async function queryBase(deps: Deps, tenantId: string, baseId: string, body: QueryBody): Promise<QueryResult> {
  const passages = await rankBase(deps, tenantId, baseId, body.query, body.topK ?? TOP_K_DEFAULT);
  if (!passages) throw baseNotFound();
  return { results: passages.map(({ chunkId, sourceId, sourceName, text, score }) => ({ chunkId, sourceId, sourceName, text, score })) };
}

/**
 * The best passages of several bases (an agent's) for a query, through the same retrieval as the
 * query endpoint; each base's ranking is fused with the others'. A base deleted meanwhile is skipped.
 */
export async function searchBases(deps: Deps, tenantId: string, baseIds: string[], query: string, topK: number): Promise<Passage[]> {
  const perBase = await Promise.all(baseIds.map((baseId) => rankBase(deps, tenantId, baseId, query, topK)));
  const all = perBase.flatMap((passages) => passages ?? []);
  const byId = new Map(all.map((passage) => [passage.chunkId, passage]));
  return reciprocalRankFusion(perBase.map((passages) => (passages ?? []).map((passage) => passage.chunkId)))
    .slice(0, topK)
    .map(({ id }) => byId.get(id)!);
}

/**
 * How close in meaning each sentence is to a question (cosine similarity, -1 to 1), for who must
 * judge whether one answers it. The sentences are embedded on the query lane: a caller waits for them.
 */
export const similarityToQuestion = (deps: Deps, question: string, sentences: string[]): Promise<number[]> =>
  similaritiesBy(deps.knowledge.embedder, question, sentences);

/** `similarityToQuestion` with a given embedder (bench/retrieval-answers.ts compares sentence encoders with it). */
export async function similaritiesBy(embedder: Embedder, question: string, sentences: string[]): Promise<number[]> {
  if (sentences.length === 0) return [];
  const [asked, ...vectors] = await embedder.embed([question, ...sentences], 'query');
  // The embedder's vectors are unit length: their dot product is their cosine similarity.
  return vectors.map((vector) => vector.reduce((sum, value, i) => sum + value * asked![i]!, 0));
}
