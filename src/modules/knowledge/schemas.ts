import { Type, type Static } from '@sinclair/typebox';
import { StringEnum, Timestamp, Title, Uuid } from '../../platform/schemas.ts';

export const SOURCE_TYPES = ['text', 'url', 'file'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
export const SOURCE_STATUSES = ['PROCESSING', 'READY', 'FAILED'] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];

/** Upload and fetch limit of one source (contract §7). */
export const SOURCE_BYTE_LIMIT = 10 * 1024 * 1024;
export const TOP_K_DEFAULT = 5;
export const TOP_K_MAX = 50;

const BaseName = Title({ maxLength: 200, description: 'Unique in the tenant.' });
const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

export const KnowledgeBase = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  sourceCount: Type.Integer(),
  chunkCount: Type.Integer({ description: 'Chunks of its READY sources.' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type KnowledgeBase = Static<typeof KnowledgeBase>;

export const CreateBaseBody = Type.Object({ name: BaseName, description: Type.Optional(Description) }, { additionalProperties: false });
export type CreateBaseBody = Static<typeof CreateBaseBody>;
export const UpdateBaseBody = Type.Object(
  { name: Type.Optional(BaseName), description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type UpdateBaseBody = Static<typeof UpdateBaseBody>;

export const KnowledgeSource = Type.Object({
  id: Uuid,
  knowledgeBaseId: Uuid,
  sourceName: Type.String(),
  sourceType: StringEnum(SOURCE_TYPES),
  status: StringEnum(SOURCE_STATUSES, { description: 'PROCESSING, then READY (with chunkCount) or FAILED (with error).' }),
  url: Type.Union([Type.String(), Type.Null()], { description: 'The page or document of a url source.' }),
  fileName: Type.Union([Type.String(), Type.Null()], { description: 'The uploaded file name of a file source.' }),
  chunkCount: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why a FAILED source failed.' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  processedAt: Type.Union([Timestamp, Type.Null()]),
});
export type KnowledgeSource = Static<typeof KnowledgeSource>;

export const CreateSourceBody = Type.Object(
  {
    sourceType: StringEnum(SOURCE_TYPES, {
      description: 'text or url in JSON; file sources are uploaded as multipart/form-data (fields sourceType=file, sourceName, file).',
    }),
    sourceName: Title({ maxLength: 200, description: 'Human-readable title.' }),
    rawText: Type.Optional(Type.String({ minLength: 1, maxLength: SOURCE_BYTE_LIMIT, description: 'Required when sourceType is text.' })),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: 'Required when sourceType is url: an http(s) page or document (HTML, text, Markdown, PDF, DOCX) to fetch and index.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateSourceBody = Static<typeof CreateSourceBody>;

export const SourceParams = Type.Object({ id: Uuid, sourceId: Uuid });

export const QueryBody = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 2000, description: 'What to look for, in plain words.' }),
    topK: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: TOP_K_MAX,
        default: TOP_K_DEFAULT,
        description: `Results wanted, 1 to ${TOP_K_MAX} (default ${TOP_K_DEFAULT}).`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type QueryBody = Static<typeof QueryBody>;

export const QueryResult = Type.Object({
  results: Type.Array(
    Type.Object({
      chunkId: Uuid,
      sourceId: Uuid,
      sourceName: Type.String(),
      text: Type.String(),
      score: Type.Number({ description: 'Reciprocal-rank-fusion score of the full-text and vector rankings (higher is better).' }),
    }),
  ),
});
export type QueryResult = Static<typeof QueryResult>;
