import { LLM_PROVIDER_NAMES, STT_PROVIDER_NAMES, TTS_PROVIDER_NAMES, VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
import { Type, type Static, type TUnsafe } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { Nullable, PATTERN_MESSAGE, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';
import { AGENT_TOOLS } from './tools.ts';

const Metadata = Type.Record(Type.String(), Type.Unknown(), { description: 'Arbitrary key-value pairs.' });

const AgentName = Type.String({ minLength: 1, maxLength: 200, description: 'Unique in the tenant, whatever the case.' });
// language[-Script][-REGION]: en-US, es, pt-BR, zh-Hant-TW, es-419. Any case; stored canonical.
const Language = Type.String({
  pattern: '^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?$',
  [PATTERN_MESSAGE]: 'a BCP-47 language tag such as en-US, es or pt-BR',
  maxLength: 16,
  description: 'BCP-47 language tag such as en-US, es or pt-BR; default en-US.',
});
const Description = Type.String({ maxLength: 2000 });
const VoiceId = Type.String({
  minLength: 1,
  maxLength: 200,
  description:
    "One of the voices of the agent's tts provider (GET /api/v1/voices?provider=…); absent or null: the provider's first voice for the agent's language.",
});
const TEMPLATE_HINT =
  'A template: {{name}}, {{phone}}, {{email}}, {{metadata.<key>}}, {{campaign.name}}, {{agent.name}}, {{now}}, {{date}}, {{time}} and {{timezone}} are filled per call. {{name|there}} says "there" when the value is empty; the first message and a voicemail, said word for word, need such a fallback for every variable but {{agent.name}}, {{now}}, {{date}}, {{time}} and {{timezone}}.';
const SystemPrompt = Type.String({ maxLength: 50_000, description: `Instructions the agent follows on every call. ${TEMPLATE_HINT}` });
const FirstMessage = Type.String({
  maxLength: 2000,
  description: `What the agent says first when the call is answered; empty or null lets the model open. ${TEMPLATE_HINT}`,
});
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

const LlmProvider = Type.Unsafe<string>({
  type: 'string',
  enum: [...LLM_PROVIDER_NAMES],
  description:
    'Who serves the model; every OpenAI-compatible server (OpenAI, Groq, Together, Mistral, vLLM, Ollama…) is OPENAI_COMPATIBLE.',
}) as TUnsafe<string> & { type: 'string'; enum: typeof LLM_PROVIDER_NAMES };

export const AgentLlm = Type.Object(
  {
    provider: Type.Optional(LlmProvider),
    model: Type.String({ minLength: 1, maxLength: 200, description: 'The model asked, such as gpt-4o-mini or llama3.1:8b.' }),
    temperature: Type.Optional(
      Type.Number({ minimum: 0, maximum: 2, description: 'Sampling temperature, 0 to 2; the server default when absent.' }),
    ),
    maxTokens: Type.Optional(
      Type.Integer({ minimum: 16, maximum: 4096, description: "A cap on one reply's length, 16 to 4,096 tokens; 300 when absent." }),
    ),
  },
  {
    additionalProperties: false,
    description: "The agent's language model; null uses the service's LLM_MODEL, or the retrieval agent when no model is configured.",
  },
);
export type AgentLlm = Static<typeof AgentLlm>;

/** A provider enum: a wrong value reads "must be one of ESPEAK, OPENAI_COMPATIBLE". */
const providerEnum = (names: readonly [string, ...string[]], description: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...names], description }) as TUnsafe<string> & { type: 'string'; enum: typeof names };

const SpeechModel = Type.String({ minLength: 1, maxLength: 200, description: "The provider's model; its default when absent." });

/** How the end of the caller's turn is decided on a phone line (docs/voice.md, "Turn-taking"); each is a folder of media/turn-detection/. */
export const END_OF_TURN_DETECTORS = ['WORDS', 'SILENCE', 'SMART_TURN', 'FLUX'] as const;
export type EndOfTurn = (typeof END_OF_TURN_DETECTORS)[number];

export const AgentStt = Type.Object(
  {
    provider: providerEnum(STT_PROVIDER_NAMES, 'Who turns the caller’s speech into text.'),
    model: Type.Optional(SpeechModel),
    endOfTurn: Type.Optional(
      Type.Unsafe<EndOfTurn>({
        type: 'string',
        enum: [...END_OF_TURN_DETECTORS],
        description:
          'How the agent knows the caller has finished, on a media stream (docs/voice.md, "Turn-taking"). WORDS (default): ' +
          'at each short pause the words so far decide: a finished question or sentence is answered at once, an unfinished ' +
          'phrase ("I\'d like to…", "my number is 4 1 5") waits up to VOICE_UNFINISHED_MS of silence. SILENCE: the turn ends ' +
          'after VOICE_END_OF_SPEECH_MS of silence, whatever was said. SMART_TURN: the Smart Turn v3 model hears from the voice ' +
          'whether the caller finished (the service must set SMART_TURN_MODEL_PATH). FLUX: Deepgram Flux (provider DEEPGRAM, model ' +
          'flux-general-en unless a flux- model is named) ends the turns itself, and a reply is prepared, unspoken, on its eager end of turn.',
      }) as TUnsafe<EndOfTurn> & { type: 'string'; enum: typeof END_OF_TURN_DETECTORS },
    ),
  },
  {
    additionalProperties: false,
    description:
      "The agent's speech-to-text on a phone line; null: the agent cannot listen on a phone line. Default: OPENAI_COMPATIBLE when the service sets SPEECH_API_URL, else null.",
  },
);
export type AgentStt = Static<typeof AgentStt>;

export const AgentTts = Type.Object(
  {
    provider: providerEnum(TTS_PROVIDER_NAMES, 'Who speaks the agent’s replies; ESPEAK works offline with no account.'),
    model: Type.Optional(SpeechModel),
  },
  { additionalProperties: false, description: "The agent's text-to-speech; default { provider: ESPEAK }." },
);
export type AgentTts = Static<typeof AgentTts>;

export const REALTIME_TURN_DETECTIONS = ['server', 'pipeline'] as const;
export const AgentRealtime = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'The speech-to-speech model, such as gpt-realtime or gpt-realtime-mini.',
    }),
    voice: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          "The model's voice (OpenAI's: alloy, ash, ballad, cedar, coral, echo, marin, sage, shimmer, verse); marin when absent.",
      }),
    ),
    turnDetection: Type.Optional(
      Type.Unsafe<(typeof REALTIME_TURN_DETECTIONS)[number]>({
        type: 'string',
        enum: [...REALTIME_TURN_DETECTIONS],
        description:
          "Who decides when the caller's turn is over: server (default), the model's server, which transcribes the caller too; pipeline, ours, through the agent's stt (which it needs).",
      }) as TUnsafe<(typeof REALTIME_TURN_DETECTIONS)[number]> & { type: 'string'; enum: typeof REALTIME_TURN_DETECTIONS },
    ),
  },
  {
    additionalProperties: false,
    description:
      "Speech-to-speech: the agent converses through a realtime model (OpenAI's Realtime API) on the tenant's OpenAI-compatible connection, or the service's LLM_API_URL, in place of stt, llm and tts; null or absent: the staged pipeline. Phone calls on a media stream only. See docs/voice.md § Speech-to-speech.",
  },
);
export type AgentRealtime = Static<typeof AgentRealtime>;
/** As stored and returned: the defaults filled. */
export type StoredRealtime = Required<AgentRealtime>;

const BackupTts = Type.Object(
  {
    provider: AgentTts.properties.provider,
    model: Type.Optional(SpeechModel),
    voice: Type.Optional(Nullable(VoiceId)),
  },
  {
    additionalProperties: false,
    description: "The backup text-to-speech, in its own voice (absent or null: its default for the agent's language).",
  },
);
export const AgentBackup = Type.Object(
  {
    llm: Type.Optional(Nullable(AgentLlm)),
    stt: Type.Optional(Nullable(AgentStt)),
    tts: Type.Optional(Nullable(BackupTts)),
  },
  {
    additionalProperties: false,
    description:
      "Mid-call failover: when the agent's model, speech-to-text or text-to-speech fails or stalls during a call, the call goes on with the one named here (for the rest of the call) and the transcript says so. Each must differ from the agent's own; null or absent: none. See docs/voice.md § Mid-call failover.",
  },
);
export type AgentBackup = Static<typeof AgentBackup>;
/** As stored and returned: each part named or null, the backup voice chosen. */
export interface StoredBackup {
  llm: AgentLlm | null;
  stt: AgentStt | null;
  tts: (AgentTts & { voice: string }) | null;
}
const StoredBackupSchema = Type.Object(
  {
    llm: Nullable(AgentLlm),
    stt: Nullable(AgentStt),
    tts: Nullable(Type.Object({ provider: Type.String(), model: Type.Optional(Type.String()), voice: Type.String() })),
  },
  { description: AgentBackup.description },
);

export const VOICE_PIPELINES = ['MEDIA_STREAM', 'CONVERSATION_RELAY'] as const;
export type VoicePipeline = (typeof VOICE_PIPELINES)[number];
// An enum, so a wrong value reads "must be one of MEDIA_STREAM, CONVERSATION_RELAY".
export const VoicePipelineSchema = Type.Unsafe<VoicePipeline>({
  type: 'string',
  enum: [...VOICE_PIPELINES],
  description:
    "How the agent's calls on Twilio numbers are voiced. MEDIA_STREAM (default): the call's audio streams to callforge, whose stt, tts and voice run. " +
    "CONVERSATION_RELAY: Twilio's ConversationRelay listens and speaks, and only text travels; stt must be DEEPGRAM (Twilio's Deepgram; stt.model is Twilio's speechModel), " +
    "tts ELEVENLABS without a model (Twilio's ElevenLabs), and voice an ElevenLabs voice id or null for Twilio's default voice for the language. Twilio bills those minutes to the tenant's Twilio account.",
}) as TUnsafe<VoicePipeline> & { type: 'string'; enum: typeof VOICE_PIPELINES };

/** A voice a text-to-speech provider offers. */
export const Voice = Type.Object({
  id: Type.String({ description: "What an agent's voice holds." }),
  name: Type.String(),
  languages: Type.Array(Type.String(), { description: 'BCP-47 tags it speaks, best first; empty: any language its model speaks.' }),
  gender: Type.Optional(Type.Union([Type.Literal('female'), Type.Literal('male'), Type.Literal('neutral')])),
});
export type Voice = Static<typeof Voice>;

export const VoicesQuery = Type.Object(
  {
    provider: Type.Optional(providerEnum(TTS_PROVIDER_NAMES, 'The text-to-speech provider; default ESPEAK.')),
    language: Type.Optional(
      Type.String({
        ...Language,
        description: 'Only voices that speak this language (en matches en-US; en-US matches en-US and voices for any language).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CustomTool = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$',
      [PATTERN_MESSAGE]: 'a letter, then letters, digits or underscores (at most 64 in all)',
      description: 'What the model calls it: a letter, then letters, digits or _, at most 64; not the name of a built-in tool.',
    }),
    description: Type.String({ minLength: 1, maxLength: 1000, description: 'What it does and when to use it, for the model.' }),
    parameters: Type.Record(Type.String(), Type.Unknown(), {
      description: "A JSON Schema of type object for its arguments; the model's arguments are checked against it before the call.",
    }),
    url: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'Where the arguments are POSTed (https, a public address), signed the Standard Webhooks way.',
    }),
  },
  { additionalProperties: false },
);
export type CustomTool = Static<typeof CustomTool>;
const CustomTools = Type.Array(CustomTool, { maxItems: 20, description: "The tenant's own HTTP tools, at most 20, names unique." });
const TransferNumber = Type.String({ minLength: 1, maxLength: 40, description: 'Where transfer_call sends the caller, E.164.' });

/** The longest a recording may be kept: ten years. */
export const MAX_RETENTION_DAYS = 3650;
export const DEFAULT_RETENTION_DAYS = 30;
const RecordingEnabled = Type.Boolean({
  description: "Whether the agent's phone calls are recorded: a two-channel WAV, the caller left and the agent right.",
});
const retentionDays = (extra = '') =>
  Type.Integer({
    minimum: 1,
    maximum: MAX_RETENTION_DAYS,
    description: `Days a recording is kept from its call, 1 to ${MAX_RETENTION_DAYS}; then it is deleted.${extra}`,
  });
const CONSENT_NOTE = 'Where the person called lives, recording may need their consent or an announcement: that is the tenant’s duty.';
export const AgentRecording = Type.Object(
  { enabled: RecordingEnabled, retentionDays: retentionDays() },
  { additionalProperties: false, description: `Call recording. ${CONSENT_NOTE}` },
);
export type AgentRecording = Static<typeof AgentRecording>;
const AgentRecordingBody = Type.Object(
  { enabled: RecordingEnabled, retentionDays: Type.Optional(retentionDays(` ${DEFAULT_RETENTION_DAYS} when absent.`)) },
  {
    additionalProperties: false,
    description: `Call recording; default { enabled: false, retentionDays: ${DEFAULT_RETENTION_DAYS} }. ${CONSENT_NOTE}`,
  },
);

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
  customTools: Type.Array(CustomTool),
  llm: Nullable(AgentLlm),
  realtime: Nullable(
    Type.Object(
      {
        model: Type.String(),
        voice: Type.String(),
        turnDetection: Type.Union([Type.Literal('server'), Type.Literal('pipeline')]),
      },
      { description: AgentRealtime.description },
    ),
  ),
  stt: Nullable(AgentStt),
  tts: AgentTts,
  backup: Nullable(StoredBackupSchema),
  voicePipeline: VoicePipelineSchema,
  knowledgeInContext: Type.Boolean({ description: "Passages of the agent's knowledge bases are put in the model's context each turn." }),
  transferNumber: Nullable(Type.String()),
  recording: AgentRecording,
  metadata: Metadata,
  /**
   * Custom tools' requests are signed with it; given once, in the answer to the request that
   * created it (the agent's creation), like an API key's webhook secret.
   */
  toolSigningSecret: Type.Optional(Type.String({ description: 'whsec_…: verifies the signature of custom tool requests; shown once.' })),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Agent = Static<typeof Agent>;

export const CreateAgentBody = Type.Object(
  {
    name: AgentName,
    description: Type.Optional(Nullable(Description)),
    language: Type.Optional(Language),
    voice: Type.Optional(Nullable(VoiceId)),
    systemPrompt: Type.Optional(Nullable(SystemPrompt)),
    firstMessage: Type.Optional(Nullable(FirstMessage)),
    knowledgeBaseIds: Type.Optional(KnowledgeBaseIds),
    tools: Type.Optional(Tools),
    customTools: Type.Optional(CustomTools),
    llm: Type.Optional(Nullable(AgentLlm)),
    realtime: Type.Optional(Nullable(AgentRealtime)),
    stt: Type.Optional(Nullable(AgentStt)),
    tts: Type.Optional(AgentTts),
    backup: Type.Optional(Nullable(AgentBackup)),
    voicePipeline: Type.Optional(VoicePipelineSchema),
    knowledgeInContext: Type.Optional(Type.Boolean()),
    transferNumber: Type.Optional(Nullable(TransferNumber)),
    recording: Type.Optional(AgentRecordingBody),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);
export type CreateAgentBody = Static<typeof CreateAgentBody>;

export const UpdateAgentBody = Type.Partial(CreateAgentBody, { additionalProperties: false });
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;

export const AgentsQuery = Type.Object({
  ...PageQuery.properties,
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

/**
 * What a version freezes: how the agent converses (its prompts, tools, knowledge, model, speech, their
 * backup and transfer number). Its name, description, metadata and recording stay the agent's own: a label and
 * a duty of the tenant, the same whatever version a call runs.
 */
export const VERSIONED_FIELDS = [
  'language',
  'voice',
  'systemPrompt',
  'firstMessage',
  'knowledgeBaseIds',
  'tools',
  'customTools',
  'llm',
  'realtime',
  'stt',
  'tts',
  'backup',
  'voicePipeline',
  'knowledgeInContext',
  'transferNumber',
] as const;
export type VersionedField = (typeof VERSIONED_FIELDS)[number];

export const AgentConfig = Type.Pick(Agent, [...VERSIONED_FIELDS], {
  description: "The agent's conversational config as the version froze it (the fields of the agent of the same names).",
});
export type AgentConfig = Static<typeof AgentConfig>;

const VersionNumber = Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'The version number, 1 for the first published.' });

export const AgentVersion = Type.Object({
  agentId: Uuid,
  version: VersionNumber,
  note: Nullable(Type.String(), { description: 'What the publisher said of it.' }),
  config: AgentConfig,
  createdAt: Timestamp,
});
export type AgentVersion = Static<typeof AgentVersion>;

export const PublishVersionBody = Type.Optional(
  Type.Object(
    { note: Type.Optional(Type.String({ maxLength: 500, description: 'What changed, for the people reading the list of versions.' })) },
    { additionalProperties: false },
  ),
);
export type PublishVersionBody = Static<typeof PublishVersionBody>;

export const VersionParams = Type.Object({ id: Uuid, version: VersionNumber });

export const VersionDiffQuery = Type.Object(
  {
    against: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description: "The version compared with; absent: the agent's current config (what restoring the version would change).",
      }),
    ),
  },
  { additionalProperties: false },
);

export const AgentVersionDiff = Type.Object({
  agentId: Uuid,
  version: VersionNumber,
  against: Type.Union([VersionNumber, Type.Null()], { description: "The version compared with; null: the agent's current config." }),
  changes: Type.Array(
    Type.Object({
      field: StringEnum(VERSIONED_FIELDS),
      from: Type.Unknown({ description: 'The value in `against` (or the current config).' }),
      to: Type.Unknown({ description: 'The value in `version`.' }),
    }),
    { description: 'The fields that differ, in the order of the config; empty when the two are the same.' },
  ),
});
export type AgentVersionDiff = Static<typeof AgentVersionDiff>;
