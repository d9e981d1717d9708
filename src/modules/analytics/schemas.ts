import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { InstantOrDate, MoneyString, Nullable, PATTERN_MESSAGE, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';
import { CallCostSchema } from '../calls/service.ts';

export const MAX_BINDING_FIELDS = 50;
export const BINDING_TYPES = ['string', 'number', 'boolean', 'enum', 'date'] as const;

const BindingFieldSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$',
      [PATTERN_MESSAGE]: 'a letter, then letters, digits or underscores (at most 64 in all)',
      description: 'A letter, then letters, digits or underscores (at most 64).',
    }),
    type: StringEnum(BINDING_TYPES),
    description: Type.Optional(Type.String({ maxLength: 500, description: 'What to extract; the extraction model reads it.' })),
    enumValues: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'The allowed values; required for, and only for, type enum.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type BindingField = Static<typeof BindingFieldSchema>;

export const PutBindingsBody = Type.Object(
  { fields: Type.Array(BindingFieldSchema, { maxItems: MAX_BINDING_FIELDS }) },
  { additionalProperties: false },
);
export type PutBindingsBody = Static<typeof PutBindingsBody>;
export const Bindings = Type.Object({
  agentId: Uuid,
  fields: Type.Array(BindingFieldSchema),
  updatedAt: Type.Union([Timestamp, Type.Null()]),
});
export type Bindings = Static<typeof Bindings>;
export const AgentParams = Type.Object({ agentId: Uuid });

export const RangeQuery = Type.Object({
  from: Type.Optional(InstantOrDate('Start (inclusive); a bare date is that day from its start (UTC); default 30 days before `to`.')),
  to: Type.Optional(InstantOrDate('End (exclusive); a bare date is that day to its end (UTC); default now.')),
  agentId: Type.Optional(Uuid),
});
export const DetailQuery = Type.Object({
  ...RangeQuery.properties,
  summary: Type.Optional(Type.Boolean({ description: 'true: totals only.' })),
});
export type DetailQuery = Static<typeof DetailQuery>;
export const TrendsQuery = Type.Object({
  ...RangeQuery.properties,
  interval: Type.Optional(StringEnum(['day', 'hour'], { description: "Bucket size in the tenant's time zone; default day." })),
});
export type TrendsQuery = Static<typeof TrendsQuery>;

// The components of a call's cost, summed.
const Totals = CallCostSchema;
export type Totals = Static<typeof Totals>;

export const Detail = Type.Object({
  from: Timestamp,
  to: Timestamp,
  currency: Type.String(),
  totals: Totals,
  calls: Type.Optional(Type.Integer()),
  minutes: Type.Optional(Type.Number({ description: 'Connected minutes, 2 decimals.' })),
  byAgent: Type.Optional(
    Type.Array(
      Type.Object({
        agentId: Type.Union([Uuid, Type.Null()]),
        agentName: Type.Union([Type.String(), Type.Null()]),
        calls: Type.Integer(),
        minutes: Type.Number(),
        totals: Totals,
      }),
    ),
  ),
});
export type Detail = Static<typeof Detail>;

export const Trends = Type.Object({
  interval: Type.String(),
  timezone: Type.String(),
  series: Type.Array(
    Type.Object({ bucket: Timestamp, calls: Type.Integer(), answered: Type.Integer(), minutes: Type.Number(), spend: MoneyString }),
  ),
});
export type Trends = Static<typeof Trends>;

export const LatencyQuery = Type.Object({
  ...RangeQuery.properties,
  campaignId: Type.Optional(Uuid),
});
export type LatencyQuery = Static<typeof LatencyQuery>;

const LatencyFigures = {
  answers: Type.Integer({ description: "The agent's answers timed at the contact's ear (on a call's audio line)." }),
  p50Ms: Nullable(
    Type.Integer({ description: "Median milliseconds from the contact's last sound to the answer's first audio; null without answers." }),
  ),
  p95Ms: Nullable(Type.Integer({ description: '95th percentile of the same; null without answers.' })),
};
export const Latency = Type.Object({
  from: Timestamp,
  to: Timestamp,
  ...LatencyFigures,
  byAgent: Type.Array(Type.Object({ agentId: Nullable(Uuid), agentName: Nullable(Type.String()), ...LatencyFigures })),
  byCampaign: Type.Array(
    Type.Object({
      campaignId: Nullable(Uuid, { description: 'null: calls of no campaign (test calls, inbound calls).' }),
      campaignName: Nullable(Type.String()),
      agentId: Nullable(Uuid),
      agentName: Nullable(Type.String()),
      ...LatencyFigures,
    }),
  ),
});
export type Latency = Static<typeof Latency>;

export const ResultsQuery = Type.Object(
  {
    ...PageQuery.properties,
    agent_id: Type.Optional(Type.String({ maxLength: 64 })),
    session_id: Type.Optional(Type.String({ maxLength: 64, description: 'The call id.' })),
  },
  { additionalProperties: true, description: 'Other filters are accepted and ignored.' },
);
export type ResultsQuery = Static<typeof ResultsQuery>;
export const Result = Type.Object({
  id: Uuid,
  sessionId: Uuid,
  agentId: Type.Union([Uuid, Type.Null()]),
  agentVersion: Type.Optional(
    Type.Union([Type.Integer(), Type.Null()], { description: "The agent's version the call ran; null: the agent as it was, live." }),
  ),
  campaignId: Type.Union([Uuid, Type.Null()]),
  contactId: Type.Union([Uuid, Type.Null()]),
  fields: Type.Record(Type.String(), Type.Unknown()),
  status: Type.String({
    description:
      "'extracted' when the model filled the record; otherwise why it is empty, such as 'skipped: no model configured', 'skipped: no conversation' or 'failed: <reason>'.",
  }),
  summary: Type.Union([Type.String(), Type.Null()], { description: "The model's summary of the call; null when no model read it." }),
  outcome: Type.String({
    description:
      'What the call came to, from what happened (not a model): completed, appointment_booked, payment_promised, transferred, opted_out, llm_error, unanswered, busy or failed.',
  }),
  extractedAt: Timestamp,
});

export const Tool = Type.Object({
  name: Type.String(),
  description: Type.String(),
  parameters: Type.Record(Type.String(), Type.Unknown(), { description: 'The JSON Schema of its arguments, as the model is given it.' }),
  alwaysOffered: Type.Optional(
    Type.Boolean({ description: "Offered to every agent's model whatever its tools say (opt_out: a person's right to stop the calls)." }),
  ),
});
export type Tool = Static<typeof Tool>;

/** What may count as an experiment's success: an answered call, or an outcome a tool recorded. */
export const SUCCESS_KINDS = ['answered', 'appointment', 'payment_promise', 'transfer'] as const;
export type SuccessKind = (typeof SUCCESS_KINDS)[number];
const SUCCESS_LIST = `(${SUCCESS_KINDS.join('|')})`;

export const CampaignParams = Type.Object({ campaignId: Uuid });
export const ExperimentQuery = Type.Object(
  {
    success: Type.Optional(
      Type.String({
        pattern: `^${SUCCESS_LIST}(,${SUCCESS_LIST})*$`,
        [PATTERN_MESSAGE]: `a comma-separated list of ${SUCCESS_KINDS.join(', ')}`,
        maxLength: 200,
        description:
          "What counts as a contact's success, comma-separated: answered (a call answered), appointment, payment_promise, transfer (a call whose tools recorded it). Default appointment,payment_promise.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ExperimentQuery = Static<typeof ExperimentQuery>;

const Count = Type.Integer({ minimum: 0 });
const Rate = Type.Union([Type.Number(), Type.Null()]);
export const ExperimentArm = Type.Object({
  version: Type.Union([Type.Integer(), Type.Null()], {
    description: "The agent's version of the arm; null: the agent as it is (no version pinned).",
  }),
  weight: Type.Union([Type.Integer(), Type.Null()], {
    description: "The arm's weight in the experiment; null for a campaign without one.",
  }),
  contacts: Type.Integer({ description: 'Contacts in the arm (all of the campaign when it has no experiment), called or not yet.' }),
  contactsCalled: Type.Integer({ description: 'Contacts with at least one ended call: the denominator of successRate.' }),
  calls: Type.Integer({ description: 'Ended calls.' }),
  answered: Count,
  outcomes: Type.Object({ ANSWERED: Count, UNANSWERED: Count, BUSY: Count, FAILED: Count }, { description: 'Ended calls per outcome.' }),
  toolOutcomes: Type.Object(
    { appointment: Count, payment_promise: Count, opt_out: Count, transfer: Count },
    {
      description:
        'Ended calls whose tools recorded each kind of outcome (an appointment booked, a payment promised, an opt-out, a transfer).',
    },
  ),
  successes: Type.Integer({ description: 'Contacts called who succeeded at least once (see `success`).' }),
  successRate: Type.Union([Type.Number(), Type.Null()], {
    description: 'successes / contactsCalled, 0 to 1 (4 decimals); null before a contact is called.',
  }),
  durationSec: Type.Object(
    { mean: Rate, median: Rate },
    { description: 'Seconds of the answered calls: their mean (1 decimal) and median; null when none was answered.' },
  ),
  cost: MoneyString,
  costPerSuccess: Type.Union([MoneyString, Type.Null()], { description: 'cost / successes; null without a success.' }),
});
export const ExperimentComparison = Type.Object({
  version: Type.Integer({ description: 'The arm compared.' }),
  against: Type.Integer({ description: 'The control: the first arm of the experiment.' }),
  difference: Type.Union([Type.Number(), Type.Null()], {
    description: "The arm's successRate minus the control's (4 decimals); null when either has no contact called.",
  }),
  pValue: Type.Union([Type.Number(), Type.Null()], {
    description: 'Two-sided p-value of the difference of success rates (4 significant digits); null when not comparable yet.',
  }),
  test: Type.Union([StringEnum(['two-proportion-z', 'fisher-exact']), Type.Null()], {
    description: "two-proportion-z (pooled) when each cell of the 2×2 table is expected to hold at least 5, else Fisher's exact test.",
  }),
  significant: Type.Boolean({ description: 'pValue < alpha: the difference is unlikely to be chance. false until then.' }),
  message: Type.String({ description: 'The verdict in a sentence, such as "Not yet significant: …; keep calling."' }),
});
export const ExperimentReport = Type.Object({
  campaignId: Uuid,
  agentId: Type.Union([Uuid, Type.Null()]),
  currency: Type.String(),
  success: Type.Array(StringEnum(SUCCESS_KINDS), { description: "What counted as a contact's success." }),
  alpha: Type.Number({
    description: 'The significance level of each comparison: 0.05, divided by the number of comparisons (Bonferroni).',
  }),
  arms: Type.Array(ExperimentArm, { description: "The experiment's arms in its order; a campaign without one has one arm." }),
  comparisons: Type.Array(ExperimentComparison, {
    description: 'Each arm after the first against the first; empty without an experiment.',
  }),
});
export type ExperimentReport = Static<typeof ExperimentReport>;
export type ExperimentArm = Static<typeof ExperimentArm>;
