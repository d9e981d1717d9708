import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const CONTACT_STATUSES = ['PENDING', 'IN_PROGRESS', 'ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED', 'SKIPPED'] as const;
/**
 * Why the dialer did not dial a SKIPPED contact, for good: dnc (on the tenant's do-not-call list), no_consent (the campaign or a
 * calling rule needs a valid consent for voice and there is none), unknown_timezone (the contact's local time is needed and neither
 * the contact nor its number tells its zone), outside_window (the call windows that hold for the contact never overlap).
 */
export const SKIP_REASONS = ['dnc', 'no_consent', 'unknown_timezone', 'outside_window'] as const;
/** Why a RUNNING campaign cannot dial anyone right now (its `waiting`). */
export const WAITING_REASONS = ['outside_window', 'frequency_cap', 'redial_delay'] as const;
export const WINDOW_TIME_ZONES = ['CAMPAIGN', 'CONTACT'] as const;

const Metadata = Type.Record(Type.String(), Type.Unknown());
const HhMm = Type.String({
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
  description: 'HH:mm, 24-hour local time of the campaign timezone.',
});
const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

export const MACHINE_ACTIONS = ['HANG_UP_AND_RETRY', 'LEAVE_VOICEMAIL'] as const;
/** What the campaign does about answering machines (Twilio's and the simulator's numbers can tell). */
export const AnsweringMachine = Type.Object(
  {
    detect: Type.Boolean({ description: "Ask who answers each call: 'human', 'machine', 'fax' or 'unknown' (the call's answeredBy)." }),
    onMachine: Type.Optional(
      StringEnum(MACHINE_ACTIONS, {
        description:
          'When a machine answers: HANG_UP_AND_RETRY (default) hangs up and tries the contact again later, like an unanswered call, within maxAttempts and the call window; LEAVE_VOICEMAIL speaks voicemailMessage after the beep, hangs up, and the contact is done. A fax is hung up on and never called again; a person, or no clear verdict, is talked to.',
      }),
    ),
    voicemailMessage: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description:
          "What LEAVE_VOICEMAIL says after the beep, in the agent's language: a template with the variables of an agent's first message ({{name}}, {{metadata.plan}}, {{campaign.name}}, {{agent.name}}…). Required with LEAVE_VOICEMAIL.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type AnsweringMachine = Static<typeof AnsweringMachine>;

/** Seed §2.4 fields (all settable on create and, while DRAFT, by PATCH) plus maxConcurrentCalls. */
const campaignFields = {
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Unique within the tenant.' }),
  agentId: Type.Union([Uuid, Type.Null()]),
  voiceNumberId: Type.Union([Uuid, Type.Null()]),
  contactListId: Type.Union([Uuid, Type.Null()], { description: 'The list must have at least 2 contacts.' }),
  description: Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]),
  scheduledAt: Type.String({ format: 'date-time', description: 'Sets the scheduled start; the status becomes SCHEDULED.' }),
  timezone: Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. America/New_York.' }),
  callWindowStart: HhMm,
  callWindowEnd: HhMm,
  callDays: Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
    minItems: 1,
    maxItems: 7,
    uniqueItems: true,
    description: '1 = Monday … 7 = Sunday.',
  }),
  dialTimeout: Type.Integer({ minimum: 10, maximum: 300, description: 'Seconds the phone rings, 10 to 300.' }),
  maxAttempts: Type.Integer({ minimum: 1, maximum: 10, description: 'Attempts per contact, 1 to 10.' }),
  redialDelayMin: Type.Integer({ minimum: 1, maximum: 10080, description: 'Minutes between attempts, at least 1.' }),
  maxConcurrentCalls: Type.Integer({ minimum: 1, maximum: 50, description: 'Live calls of this campaign at once, 1 to 50.' }),
  simulatorScript: Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 50 }), Type.Null()], {
    description:
      'What each simulated contact says, line by line, when its own metadata.simulate.say has no script (SIMULATOR numbers only); null: a default persona.',
  }),
  answeringMachine: Type.Union([AnsweringMachine, Type.Null()], {
    description: 'Answering-machine detection and what a machine gets; null (the default): no detection, whoever answers is talked to.',
  }),
  metadata: Metadata,
  windowTimeZone: StringEnum(WINDOW_TIME_ZONES, {
    description:
      "Whose local time the call window is read in: CAMPAIGN (the campaign's timezone) or CONTACT (each contact's own zone: its timezone, else its number's). Default: the tenant's compliance settings (CAMPAIGN until changed).",
  }),
  callingRules: Type.Boolean({
    description:
      "Apply the statutory calling rules (hours and call caps in the person's local time, by country and US state) and the tenant's own. Default: the tenant's compliance settings (false until changed).",
  }),
  requireConsent: Type.Boolean({
    description: "Dial only contacts with a valid consent for voice. Default: the tenant's compliance settings (false until changed).",
  }),
};

const { name, ...rest } = campaignFields;
export const CreateCampaignBody = Type.Object({ name, ...Type.Partial(Type.Object(rest)).properties }, { additionalProperties: false });
export type CreateCampaignBody = Static<typeof CreateCampaignBody>;
export const UpdateCampaignBody = Type.Partial(Type.Object(campaignFields, { additionalProperties: false }));
export type UpdateCampaignBody = Static<typeof UpdateCampaignBody>;

export const CampaignStats = Type.Object({
  total: Type.Integer(),
  pending: Type.Integer(),
  inProgress: Type.Integer(),
  answered: Type.Integer(),
  unanswered: Type.Integer(),
  busy: Type.Integer(),
  failed: Type.Integer(),
  skipped: Type.Integer({ description: 'Contacts not dialled, each with its skipReason (such as dnc: on the do-not-call list).' }),
});
export type CampaignStats = Static<typeof CampaignStats>;

export const Campaign = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  agentId: Type.Union([Uuid, Type.Null()]),
  voiceNumberId: Type.Union([Uuid, Type.Null()]),
  contactListId: Type.Union([Uuid, Type.Null()]),
  status: StringEnum(CAMPAIGN_STATUSES),
  statusReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the campaign paused itself, when it did.' }),
  scheduledAt: Type.Union([Timestamp, Type.Null()]),
  timezone: Type.String(),
  callWindowStart: Type.String(),
  callWindowEnd: Type.String(),
  callDays: Type.Array(Type.Integer()),
  dialTimeout: Type.Integer(),
  maxAttempts: Type.Integer(),
  redialDelayMin: Type.Integer(),
  maxConcurrentCalls: Type.Integer(),
  simulatorScript: Type.Union([Type.Array(Type.String()), Type.Null()]),
  answeringMachine: Type.Union([AnsweringMachine, Type.Null()]),
  metadata: Metadata,
  startedAt: Type.Union([Timestamp, Type.Null()]),
  completedAt: Type.Union([Timestamp, Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  stats: Type.Optional(CampaignStats),
  windowTimeZone: Type.Optional(StringEnum(WINDOW_TIME_ZONES)),
  callingRules: Type.Optional(Type.Boolean()),
  requireConsent: Type.Optional(Type.Boolean()),
  waiting: Type.Optional(
    Type.Union(
      [
        Type.Object({
          reason: StringEnum(WAITING_REASONS),
          message: Type.String({ description: 'Such as "waiting for the call window: opens 09:00 America/Chicago for 120 contacts".' }),
          resumesAt: Type.Union([Timestamp, Type.Null()]),
          contacts: Type.Integer({ description: 'Contacts waiting for that moment.' }),
        }),
        Type.Null(),
      ],
      { description: 'For a RUNNING campaign that cannot dial anyone right now: why, and until when; null otherwise.' },
    ),
  ),
});
export type Campaign = Static<typeof Campaign>;
export type CampaignWaiting = NonNullable<Campaign['waiting']>;

export const CampaignQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(StringEnum(CAMPAIGN_STATUSES)),
  agentId: Type.Optional(Uuid),
});

export const CampaignContact = Type.Object({
  contactId: Uuid,
  phoneNumber: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  status: StringEnum(CONTACT_STATUSES, {
    description: 'PENDING (waiting for its next attempt), IN_PROGRESS, the final outcome, or SKIPPED (not dialled; skipReason says why).',
  }),
  skipReason: Type.Union([StringEnum(SKIP_REASONS), Type.Null()], {
    description: 'dnc, no_consent, unknown_timezone or outside_window (the windows that hold for the contact never overlap).',
  }),
  waitReason: Type.Optional(
    Type.Union([StringEnum(['outside_window', 'frequency_cap'] as const), Type.Null()], {
      description:
        'For a PENDING contact the dialer put off: outside its call window, or over a frequency cap; nextAttemptAt says until when.',
    }),
  ),
  attempts: Type.Integer(),
  lastOutcome: Type.Union([Type.String(), Type.Null()]),
  lastCallId: Type.Union([Uuid, Type.Null()]),
  nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
});
export type CampaignContact = Static<typeof CampaignContact>;
