import { VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { Timestamp, Uuid } from '../../platform/schemas.ts';
import { AGENT_TOOLS } from './tools.ts';

const Metadata = Type.Record(Type.String(), Type.Unknown(), { description: 'Arbitrary key-value pairs.' });
const Nullable = <T extends TSchema>(schema: T, options?: { description: string }) => Type.Union([schema, Type.Null()], options);

const AgentName = Type.String({ minLength: 1, maxLength: 200, description: 'Unique in the tenant, whatever the case.' });
// language[-Script][-REGION]: en-US, es, pt-BR, zh-Hant-TW, es-419. Any case; stored canonical.
const Language = Type.String({
  pattern: '^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?$',
  maxLength: 16,
  description: 'BCP-47 language tag such as en-US, es or pt-BR; default en-US.',
});
const Description = Type.String({ maxLength: 2000 });
const Voice = Type.String({ minLength: 1, maxLength: 200, description: "The text-to-speech voice's identifier." });
const SystemPrompt = Type.String({ maxLength: 50_000, description: 'Instructions the agent follows on every call.' });
const FirstMessage = Type.String({ maxLength: 2000, description: 'What the agent says first when the call is answered.' });
const KnowledgeBaseIds = Type.Array(Uuid, {
  uniqueItems: true,
  maxItems: 20,
  description: "Knowledge bases the agent searches; each must be one of the tenant's knowledge bases.",
});
const Tools = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  uniqueItems: true,
  maxItems: AGENT_TOOLS.length,
  description: `Tool names from GET /analytics/tools: ${AGENT_TOOLS.map((tool) => tool.name).join(', ')}.`,
});

export const Agent = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  language: Type.String(),
  voice: Nullable(Type.String()),
  systemPrompt: Nullable(Type.String()),
  firstMessage: Nullable(Type.String()),
  knowledgeBaseIds: Type.Array(Uuid),
  tools: Type.Array(Type.String()),
  metadata: Metadata,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Agent = Static<typeof Agent>;

export const CreateAgentBody = Type.Object(
  {
    name: AgentName,
    description: Type.Optional(Nullable(Description)),
    language: Type.Optional(Language),
    voice: Type.Optional(Nullable(Voice)),
    systemPrompt: Type.Optional(Nullable(SystemPrompt)),
    firstMessage: Type.Optional(Nullable(FirstMessage)),
    knowledgeBaseIds: Type.Optional(KnowledgeBaseIds),
    tools: Type.Optional(Tools),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);
export type CreateAgentBody = Static<typeof CreateAgentBody>;

export const UpdateAgentBody = Type.Partial(CreateAgentBody, { additionalProperties: false });
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;

export const AgentsQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: '1-based page number.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 25, description: 'Items per page, 1 to 200.' })),
  search: Type.Optional(Type.String({ maxLength: 200, description: 'Part of the agent name, any case.' })),
});

export const VOICE_PROVIDERS = VOICE_PROVIDER_NAMES;
export type VoiceProvider = string;
// An enum rather than a union of literals, so a wrong value reads "must be one of SIMULATOR, TWILIO".
// The intersection lets the Fastify type provider (typebox 1.x, which reads `enum`) infer the same type.
const Provider = Type.Unsafe<VoiceProvider>({
  type: 'string',
  enum: [...VOICE_PROVIDERS],
  description: 'The telephony provider that carries the number.',
}) as TUnsafe<VoiceProvider> & {
  type: 'string';
  enum: typeof VOICE_PROVIDERS;
};

const Label = Type.String({ maxLength: 200 });
const InboundAgentId = Nullable(Uuid, { description: 'The agent that answers calls to this number; null for none.' });

export const VoiceNumber = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  phoneNumber: Type.String({ description: 'E.164' }),
  provider: Provider,
  label: Nullable(Type.String()),
  inboundAgentId: Nullable(Uuid),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type VoiceNumber = Static<typeof VoiceNumber>;

export const CreateVoiceNumberBody = Type.Object(
  {
    phoneNumber: Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'E.164; spaces, dashes, dots and parentheses are removed first. Unique on the platform.',
    }),
    provider: Provider,
    label: Type.Optional(Nullable(Label)),
    inboundAgentId: Type.Optional(InboundAgentId),
  },
  { additionalProperties: false },
);
export type CreateVoiceNumberBody = Static<typeof CreateVoiceNumberBody>;

// The number and its provider identify a line at a carrier: register another number to change them.
export const UpdateVoiceNumberBody = Type.Object(
  {
    label: Type.Optional(Nullable(Label)),
    inboundAgentId: Type.Optional(InboundAgentId),
  },
  { additionalProperties: false },
);
export type UpdateVoiceNumberBody = Static<typeof UpdateVoiceNumberBody>;
