import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { InstantOrDate, MoneyString, Nullable, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

const Outcome = StringEnum(['ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED']);
export const ANSWERED_BY = ['human', 'machine', 'fax', 'unknown', 'call_screening', 'phone_menu'] as const;

const KnowledgeSource = Type.Object({ sourceId: Uuid, sourceName: Type.String(), chunkId: Uuid });

/** One turn of the conversation as it happened (contract §3: role agent, contact or tool). */
export const TranscriptTurn = Type.Object({
  role: StringEnum(['agent', 'contact', 'tool']),
  text: Type.String({ description: 'What was said; for a tool turn, its result (or error) as the model read it.' }),
  at: Timestamp,
  startMs: Type.Optional(Type.Integer({ description: 'Milliseconds from the answer to the start of the turn.' })),
  endMs: Type.Optional(Type.Integer({ description: 'Milliseconds from the answer to the end of the turn.' })),
  by: Type.Optional(
    Type.String({
      description:
        "Who wrote an agent turn: 'model:<name>' (a language model), 'retrieval-agent' (the built-in agent that answers from knowledge, no model), 'first-message' (the agent's configured opening), 'fallback' (the line said when the model failed), 'voicemail' (the campaign's message left on an answering machine after the beep) or 'pipeline' (a line of the voice pipeline itself: asking whether the contact is still there, the goodbye at the call's time limit or when the line failed).",
    }),
  ),
  tool: Type.Optional(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      arguments: Type.Unknown({ description: 'The arguments as the model gave them.' }),
      ok: Type.Boolean({ description: 'False when the tool refused the arguments or failed; the model was told why.' }),
    }),
  ),
  sources: Type.Optional(Type.Array(KnowledgeSource, { description: 'Knowledge passages the turn used.' })),
  failover: Type.Optional(
    Type.Object(
      {
        component: StringEnum(['llm', 'stt', 'tts']),
        from: Type.String({ description: "What failed: 'model:<name>', or the speech provider's name." }),
        to: Type.String({ description: "The agent's backup that took over from this turn on, in the same terms." }),
        reason: Type.String({ description: 'How it failed or stalled.' }),
      },
      {
        description:
          "The agent's backup took over mid-call from this turn on: the model wrote it, the recogniser heard it, or the voice spoke it (the agent's backup, docs/voice.md § Mid-call failover).",
      },
    ),
  ),
  interrupted: Type.Optional(
    Type.Boolean({ description: 'The contact spoke over the agent: `text` is what they heard before the agent stopped.' }),
  ),
  latency: Type.Optional(
    Type.Object({
      firstTokenMs: Nullable(Type.Integer({ description: "The model's time to its first token." })),
      totalMs: Type.Integer({ description: "From the contact's words to the end of the reply, tools included." }),
      voice: Type.Optional(
        Type.Object(
          {
            callerStoppedMs: Type.Integer({
              description: "Milliseconds of the line from its start to the end of the contact's last sound before this answer.",
            }),
            endOfTurnMs: Type.Integer({ description: "Turn detection decided the contact's turn was over." }),
            sttFinalMs: Nullable(
              Type.Integer({ description: "The recogniser's last final words of the turn (null: they came before the last sound)." }),
            ),
            firstTokenMs: Type.Integer({ description: "The reply's first words: the model's first token, or a line spoken whole." }),
            heardMs: Type.Integer({
              description: "The reply's first audio handed to the line: caller stops → agent heard (the recording shows the same gap).",
            }),
          },
          {
            description:
              "On a call's audio line, the answer's latency at the contact's ear: each field but callerStoppedMs in milliseconds after the contact's last sound, on the line's clock. See docs/voice.md § Latency at the caller's ear.",
          },
        ),
      ),
    }),
  ),
});
export type TranscriptTurn = Static<typeof TranscriptTurn>;

/** What a call's tools recorded: an appointment booked, a payment promised, a transfer. */
export const CallOutcomeRecord = Type.Object({
  type: StringEnum(['appointment', 'payment_promise', 'transfer', 'opt_out']),
  toolCallId: Nullable(Type.String()),
  at: Timestamp,
  data: Type.Record(Type.String(), Type.Unknown()),
});
export type CallOutcomeRecord = Static<typeof CallOutcomeRecord>;

export const END_REASONS = [
  'agent_ended',
  'contact_hung_up',
  'opted_out',
  'transferred',
  'llm_error',
  'hung_up_by_user',
  'silence',
  'max_duration',
  'provider_error',
  'voicemail_left',
  'answering_machine',
] as const;
export type EndReason = (typeof END_REASONS)[number];

export const CallUsage = Type.Object({
  sttSeconds: Type.Number(),
  ttsCharacters: Type.Integer(),
  llmTokens: Type.Integer({ description: 'Input and output tokens together, as the model server reported them.' }),
  llmInputTokens: Type.Integer(),
  llmOutputTokens: Type.Integer(),
  llmInputAudioTokens: Type.Integer({
    description: "Of the input tokens, the caller's audio a speech-to-speech model heard (0 for a text model).",
  }),
  llmOutputAudioTokens: Type.Integer({
    description: 'Of the output tokens, the audio a speech-to-speech model spoke (0 for a text model).',
  }),
  llmModel: Nullable(Type.String({ description: 'The model whose tokens these are; null when no model ran.' })),
  llmProvider: Nullable(Type.String({ description: 'The provider of the model; null when no model ran.' })),
  sttProvider: Nullable(Type.String({ description: 'The speech-to-text provider that listened; null when none ran.' })),
  ttsProvider: Nullable(Type.String({ description: 'The text-to-speech provider that spoke; null when none ran.' })),
  telephonyProvider: Nullable(Type.String({ description: 'The provider that carried the line; null when no line was connected.' })),
  telephonySeconds: Type.Number(),
  backup: Type.Optional(
    Nullable(
      Type.Object(
        {
          llmInputTokens: Type.Integer(),
          llmOutputTokens: Type.Integer(),
          llmModel: Nullable(Type.String()),
          llmProvider: Nullable(Type.String()),
          sttSeconds: Type.Number(),
          sttProvider: Nullable(Type.String()),
          ttsCharacters: Type.Integer(),
          ttsProvider: Nullable(Type.String()),
        },
        {
          description:
            "Of the figures above, what the agent's backup ran once the call failed over to it, priced at its own rates; absent or null: it did not.",
        },
      ),
    ),
  ),
});

export const CallCost = Type.Object({
  stt: MoneyString,
  tts: MoneyString,
  llm: MoneyString,
  telephony: MoneyString,
  platformFee: MoneyString,
  total: MoneyString,
});

export const Call = Type.Object({
  id: Uuid,
  agentId: Nullable(Uuid),
  agentVersion: Type.Optional(
    Type.Union([Type.Integer(), Type.Null()], {
      description:
        "The agent's version the call ran (its campaign pinned it, or its arm of the campaign's experiment); null: the agent as it was then, live.",
    }),
  ),
  campaignId: Nullable(Uuid),
  contactId: Nullable(Uuid),
  voiceNumberId: Nullable(Uuid),
  direction: Type.Union([Type.Literal('OUTGOING'), Type.Literal('INCOMING')]),
  fromNumber: Type.String(),
  toNumber: Type.String(),
  attempt: Type.Integer(),
  status: StringEnum(['QUEUED', 'RINGING', 'IN_PROGRESS', 'ENDED']),
  outcome: Nullable(Outcome),
  failureReason: Nullable(Type.String()),
  startedAt: Timestamp,
  answeredAt: Nullable(Timestamp),
  endedAt: Nullable(Timestamp),
  durationSec: Nullable(Type.Integer()),
  endReason: Nullable(
    StringEnum(END_REASONS, {
      description:
        "Why an answered call ended, when known: 'voicemail_left' when the campaign's voicemail was left on an answering machine, 'answering_machine' when a machine or fax answered and the call was hung up.",
    }),
  ),
  answeredBy: Nullable(
    StringEnum(ANSWERED_BY, {
      description:
        "Who answered: 'human', 'machine' (an answering machine: the provider's detection, or the voicemail's beep heard on the call), 'fax', 'unknown' (no clear verdict; talked to as a person), 'call_screening' (a call-screening assistant such as iOS Live Voicemail or Pixel Call Screen, heard in its words; 'human' once the person comes on) or 'phone_menu' (a phone menu, 'press 1 for…'; 'human' once a person speaks). Null when no detection ran or no verdict came.",
    }),
  ),
  transcript: Type.Array(TranscriptTurn),
  outcomes: Type.Array(CallOutcomeRecord),
  recordingUrl: Nullable(Type.String()),
  usage: Nullable(CallUsage),
  cost: Nullable(CallCost),
  createdAt: Timestamp,
});
export type Call = Static<typeof Call>;

export const CallQuery = Type.Object({
  ...PageQuery.properties,
  agentId: Type.Optional(Uuid),
  campaignId: Type.Optional(Uuid),
  contactId: Type.Optional(Uuid),
  direction: Type.Optional(StringEnum(['OUTGOING', 'INCOMING'])),
  outcome: Type.Optional(Outcome),
  from: Type.Optional(InstantOrDate('Calls created at or after this instant; a bare date is that day from its start (UTC).')),
  to: Type.Optional(InstantOrDate('Calls created before this instant; a bare date is that day to its end (UTC).')),
});
export type CallQuery = Static<typeof CallQuery>;

export const InboundCallBody = Type.Object(
  { voiceNumberId: Uuid, fromNumber: Type.String({ minLength: 1, maxLength: 32, description: 'The caller, E.164.' }) },
  { additionalProperties: false },
);
export type InboundCallBody = Static<typeof InboundCallBody>;
