import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { MoneyString, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

const Outcome = StringEnum(['ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED']);
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const Call = Type.Object({
  id: Uuid,
  agentId: Nullable(Uuid),
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
  transcript: Type.Array(Type.Object({ role: Type.String(), text: Type.String(), at: Timestamp })),
  recordingUrl: Nullable(Type.String()),
  usage: Nullable(
    Type.Object({ sttSeconds: Type.Number(), ttsCharacters: Type.Integer(), llmTokens: Type.Integer(), telephonySeconds: Type.Number() }),
  ),
  cost: Nullable(
    Type.Object({
      stt: MoneyString,
      tts: MoneyString,
      llm: MoneyString,
      telephony: MoneyString,
      platformFee: MoneyString,
      total: MoneyString,
    }),
  ),
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
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Calls created at or after this instant.' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Calls created before this instant.' })),
});
export type CallQuery = Static<typeof CallQuery>;

export const InboundCallBody = Type.Object(
  { voiceNumberId: Uuid, fromNumber: Type.String({ minLength: 1, maxLength: 32, description: 'The caller, E.164.' }) },
  { additionalProperties: false },
);
