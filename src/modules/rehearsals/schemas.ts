import { Type, type Static } from '@sinclair/typebox';
import { MoneyString, Nullable, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';
import { CallCostSchema, CallUsageSchema, END_REASONS, TranscriptTurnSchema } from '../calls/service.ts';

/** The largest sample: a rehearsal of 500 contacts converses with each, offline within minutes. */
export const MAX_SAMPLE = 500;
export const DEFAULT_SAMPLE = 50;

export const CreateRehearsalBody = Type.Object(
  {
    sample: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_SAMPLE,
        description: `How many of the list's contacts to rehearse (default ${DEFAULT_SAMPLE}); picked by a seed of the campaign, so every rehearsal of the campaign picks the same ones.`,
      }),
    ),
    from: Type.Optional(
      Type.String({ format: 'date-time', description: 'The instant the dialer is asked about (ISO-8601); default: now.' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateRehearsalBody = Static<typeof CreateRehearsalBody>;

export const RehearsalParams = Type.Object({ id: Uuid, rehearsalId: Uuid });

const Estimate = StringEnum(['measured', 'estimate'], {
  description: "measured: what ran (the conversation's model tokens); estimate: rates × units the rehearsal estimated.",
});

const Cost = Type.Object(
  {
    usage: CallUsageSchema,
    cost: CallCostSchema,
    basis: Type.Object(
      { telephony: Estimate, stt: Estimate, tts: Estimate, llm: Estimate, platformFee: Estimate },
      { description: 'Whether each part is measured or an estimate.' },
    ),
    talkSeconds: Type.Number({ description: "The call's length, estimated from the conversation's words and turns." }),
  },
  { description: "The call's forecast cost, priced with the rate card as a call's is." },
);

const Message = Type.Object({
  channel: StringEnum(['WHATSAPP', 'SMS']),
  to: Type.String(),
  sender: Nullable(Type.String()),
  body: Nullable(Type.String({ description: 'An SMS: its text, filled for the contact.' })),
  templateName: Nullable(Type.String({ description: 'A WhatsApp template: its name; its parameters follow.' })),
  languageCode: Nullable(Type.String()),
  parameters: Type.Array(Type.String()),
  segments: Nullable(Type.Integer()),
});

const FollowUp = Type.Object({
  messages: Type.Array(Message),
  none: Nullable(Type.String({ description: 'Why no message would go, when none would.' })),
});

export const RehearsedContact = Type.Object({
  contactId: Uuid,
  position: Type.Integer({ description: "Its place in the list's order (1 first)." }),
  phoneNumber: Type.String(),
  name: Nullable(Type.String()),
  verdict: StringEnum(['dial', 'wait', 'skip'], {
    description: "The dialer's verdict at `from`: dial now, wait until `firstCallAt`, or skip for good.",
  }),
  reason: Nullable(Type.String({ description: "The verdict's reason code, as the dialer records it (dnc, no_consent, outside_window…)." })),
  why: Type.String({ description: 'The reason in a sentence.' }),
  wouldBeCalled: Type.Boolean(),
  firstCallAt: Nullable(
    Type.Object({
      utc: Timestamp,
      local: Type.Array(Type.Object({ timeZone: Type.String(), time: Type.String() }), {
        description: "The same instant in each of the contact's possible zones.",
      }),
    }),
  ),
  facts: Type.Record(Type.String(), Type.Unknown(), {
    description: "The facts the verdict weighed, as the dialer's compliance record keeps them.",
  }),
  conversation: Nullable(
    Type.Object({
      persona: Type.Array(Type.String(), {
        description:
          "What the scripted contact says: its metadata.simulate.say, else the campaign's simulatorScript; empty when a model played the contact.",
      }),
      personaByModel: Nullable(
        Type.String({
          description:
            "Who the agent's model played, drawn from the contact's name and metadata: when the agent has a model and the contact no script of its own; else null.",
        }),
      ),
      transcript: Type.Array(TranscriptTurnSchema),
      endReason: Nullable(StringEnum(END_REASONS)),
      failure: Nullable(
        Type.String({
          description:
            "Why this conversation was not rehearsed, when it was not: the agent's model failed while playing the contact (its error). The transcript stops there; the contact has no cost forecast and nothing of it is billed. Null when it was rehearsed.",
        }),
      ),
    }),
  ),
  followUp: Nullable(
    Type.Object(
      { answered: FollowUp, unanswered: FollowUp },
      { description: 'What would go after an answered call and after an unanswered one.' },
    ),
  ),
  cost: Nullable(Cost),
});

export const Rehearsal = Type.Object({
  id: Uuid,
  campaignId: Uuid,
  status: StringEnum(['QUEUED', 'RUNNING', 'DONE', 'FAILED']),
  sample: Type.Integer(),
  from: Timestamp,
  failure: Nullable(Type.String()),
  brain: Nullable(
    Type.String({ description: 'Who conversed: retrieval-agent (offline, free) or model:<name> (billed like a test chat).' }),
  ),
  notes: Type.Array(Type.String(), { description: 'What the rehearsal did not do, or did differently from a call.' }),
  summary: Nullable(
    Type.Object({
      contacts: Type.Integer(),
      wouldBeCalled: Type.Integer(),
      byVerdict: Type.Record(Type.String(), Type.Integer(), { description: 'dial, wait, skip: how many.' }),
      byReason: Type.Record(Type.String(), Type.Integer(), { description: 'Each reason code: how many.' }),
    }),
  ),
  contacts: Type.Array(RehearsedContact),
  costTotal: Nullable(MoneyString),
  billed: Nullable(MoneyString, {
    description:
      'Debited from the wallet once, as the report was stored: the model tokens of the conversations in this report. Neither an earlier attempt of a retried job nor a conversation that was not rehearsed is billed.',
  }),
  createdAt: Timestamp,
  finishedAt: Nullable(Timestamp),
});
export type Rehearsal = Static<typeof Rehearsal>;

const { contacts: _contacts, ...listed } = Rehearsal.properties;
export const ListedRehearsal = Type.Object(listed, {
  description: 'A rehearsal as its campaign lists it: its summary and forecast, not its contacts (GET it for those).',
});
export type ListedRehearsal = Static<typeof ListedRehearsal>;
export type RehearsedContact = Static<typeof RehearsedContact>;
