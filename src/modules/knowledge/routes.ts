// Seed §4.5 and contract §7: knowledge bases, their sources, and the retrieval agents use.
import multipart, { type MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { appError, MULTIPART_LIMITS, validationError } from '../../platform/errors.ts';
import { PageOf, PageQuery, pageOf, toPage } from '../../platform/pagination.ts';
import { EmptyBody, errorResponses, IdParams } from '../../platform/schemas.ts';
import { formatOfFile, type DocumentFormat } from './document-formats.ts';
import * as knowledge from './service.ts';
import {
  CreateBaseBody,
  CreateSourceBody,
  KnowledgeBase,
  KnowledgeSource,
  QueryBody,
  QueryResult,
  SOURCE_BYTE_LIMIT,
  SourceParams,
  UpdateBaseBody,
} from './schemas.ts';

const TEN_MB = `${SOURCE_BYTE_LIMIT / 1024 / 1024} MB`;

/** The one file of a multipart upload with the fields beside it, whatever their order. */
async function readUpload(
  request: FastifyRequest,
): Promise<{ fields: Record<string, string>; file?: { name: string; mediaType: string; bytes: Buffer } }> {
  const fields: Record<string, string> = {};
  let file: { name: string; mediaType: string; bytes: Buffer } | undefined;
  for await (const part of request.parts()) {
    if (part.type === 'field') {
      fields[part.fieldname] = String(part.value);
      continue;
    }
    const upload = part as MultipartFile;
    // A second file never gets here: the upload's limit of one file refuses it first (platform/errors.ts).
    if (upload.fieldname !== 'file') {
      await upload.toBuffer().catch(() => undefined);
      throw appError('VALIDATION_FAILED.oneFile', {}, [{ path: `/${upload.fieldname}`, message: 'is not the file field' }]);
    }
    try {
      file = { name: upload.filename, mediaType: upload.mimetype, bytes: await upload.toBuffer() };
    } catch (error) {
      if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw appError('PAYLOAD_TOO_LARGE.document', { limit: TEN_MB });
      throw error;
    }
  }
  return { fields, file };
}

function fileSource(upload: Awaited<ReturnType<typeof readUpload>>): {
  sourceName: string;
  fileName: string;
  format: DocumentFormat;
  bytes: Buffer;
} {
  const { fields, file } = upload;
  const unknown = Object.keys(fields).find((name) => name !== 'sourceType' && name !== 'sourceName');
  if (unknown !== undefined)
    throw validationError([{ instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: unknown } }], 'body');
  if (fields.sourceType !== 'file') {
    throw appError('VALIDATION_FAILED.multipartIsFile', {}, [{ path: '/sourceType', message: 'must be file in a multipart upload' }]);
  }
  const sourceName = fields.sourceName?.trim() ?? '';
  if (sourceName === '' || sourceName.length > 200) {
    throw appError('VALIDATION_FAILED.sourceName', {}, [{ path: '/sourceName', message: 'must be 1 to 200 characters' }]);
  }
  if (!file) throw appError('FILE_REQUIRED.document');
  const format = formatOfFile(file.name, file.mediaType);
  if (!format) {
    throw appError('UNSUPPORTED_FILE_TYPE', { fileName: file.name });
  }
  if (file.bytes.length === 0) throw appError('EMPTY_FILE', { fileName: file.name });
  return { sourceName, fileName: file.name, format, bytes: file.bytes };
}

/** `agentsSearchingBase` is handed down by the composition root (app.ts): agents sit above knowledge. */
export const knowledgeRoutes =
  (agentsSearchingBase: knowledge.BaseUsage): ModulePlugin =>
  (plugin, options) =>
    mountKnowledgeRoutes(agentsSearchingBase, plugin, options);

async function mountKnowledgeRoutes(
  agentsSearchingBase: knowledge.BaseUsage,
  plugin: Parameters<ModulePlugin>[0],
  { deps }: Parameters<ModulePlugin>[1],
) {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: FastifyRequest) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['knowledge'];

  app.post(
    '/knowledge-bases',
    {
      schema: {
        tags,
        summary: 'Create a knowledge base',
        body: CreateBaseBody,
        response: { 201: KnowledgeBase, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await knowledge.createBase(ctxOf(request), request.body)),
  );
  app.get(
    '/knowledge-bases',
    {
      schema: {
        tags,
        summary: 'List knowledge bases',
        querystring: PageQuery,
        response: { 200: PageOf(KnowledgeBase), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await knowledge.listBases(ctxOf(request), page);
      return pageOf(data, total, page);
    },
  );
  app.get(
    '/knowledge-bases/:id',
    {
      schema: {
        tags,
        summary: 'Get a knowledge base',
        params: IdParams,
        response: { 200: KnowledgeBase, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => knowledge.getBase(ctxOf(request), request.params.id),
  );
  app.patch(
    '/knowledge-bases/:id',
    {
      schema: {
        tags,
        summary: 'Rename or describe a knowledge base',
        params: IdParams,
        body: UpdateBaseBody,
        response: { 200: KnowledgeBase, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => knowledge.updateBase(ctxOf(request), request.params.id, request.body),
  );
  app.delete(
    '/knowledge-bases/:id',
    {
      schema: {
        tags,
        summary: 'Delete a knowledge base with its sources (refused while an agent searches it)',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await knowledge.deleteBase(ctxOf(request), request.params.id, agentsSearchingBase);
      return reply.code(204).send(null);
    },
  );

  await app.register(multipart, { limits: { fileSize: SOURCE_BYTE_LIMIT, ...MULTIPART_LIMITS } });
  app.post(
    '/knowledge-bases/:id/sources',
    {
      // A text source's rawText may be as large as an uploaded file.
      bodyLimit: SOURCE_BYTE_LIMIT + 64 * 1024,
      schema: {
        tags,
        summary: `Add a source: JSON for text and url sources, multipart/form-data (sourceType=file, sourceName, file) for a PDF, DOCX, TXT, Markdown or HTML file up to ${TEN_MB}. It answers PROCESSING; a job makes it READY or FAILED.`,
        consumes: ['application/json', 'multipart/form-data'],
        params: IdParams,
        // Only JSON is validated by schema; a multipart upload is checked field by field.
        body: { content: { 'application/json': { schema: CreateSourceBody } } } as unknown as typeof CreateSourceBody,
        response: { 201: KnowledgeSource, ...errorResponses(400, 401, 403, 404, 413, 415) },
      },
    },
    async (request, reply) => {
      const ctx = ctxOf(request);
      // Fastify validates a body by its content type; a request with neither body nor type skips the JSON schema.
      if (!request.isMultipart() && request.body === undefined)
        throw appError('VALIDATION_FAILED', {
          subject: 'The request body',
          problem: 'is required: JSON for a text or url source, multipart/form-data for a file',
        });
      const source = request.isMultipart()
        ? await knowledge.addFileSource(ctx, request.params.id, fileSource(await readUpload(request)))
        : await knowledge.addJsonSource(ctx, request.params.id, request.body);
      return reply.code(201).send(source);
    },
  );
  app.get(
    '/knowledge-bases/:id/sources',
    {
      schema: {
        tags,
        summary: 'List the sources of a knowledge base',
        params: IdParams,
        querystring: PageQuery,
        response: { 200: PageOf(KnowledgeSource), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await knowledge.listSources(ctxOf(request), request.params.id, page);
      return pageOf(data, total, page);
    },
  );
  app.get(
    '/knowledge-bases/:id/sources/:sourceId',
    {
      schema: {
        tags,
        summary: 'Get a source and its processing status',
        params: SourceParams,
        response: { 200: KnowledgeSource, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => knowledge.getSource(ctxOf(request), request.params.id, request.params.sourceId),
  );
  app.delete(
    '/knowledge-bases/:id/sources/:sourceId',
    {
      schema: {
        tags,
        summary: 'Delete a source and its chunks',
        params: SourceParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await knowledge.deleteSource(ctxOf(request), request.params.id, request.params.sourceId);
      return reply.code(204).send(null);
    },
  );
  app.post(
    '/knowledge-bases/:id/sources/:sourceId/refresh',
    {
      schema: {
        tags,
        summary: 'Process a source again (a url source is fetched anew); answers the source, PROCESSING',
        params: SourceParams,
        body: EmptyBody,
        response: { 202: KnowledgeSource, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await knowledge.refreshSource(ctxOf(request), request.params.id, request.params.sourceId)),
  );
  app.post(
    '/knowledge-bases/:id/query',
    {
      schema: {
        tags,
        summary: 'Search a knowledge base: full-text and vector rankings fused (the retrieval agents use during calls)',
        params: IdParams,
        body: QueryBody,
        response: { 200: QueryResult, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => knowledge.queryBase(deps, principalOf(request).tenantId, request.params.id, request.body),
  );
}
