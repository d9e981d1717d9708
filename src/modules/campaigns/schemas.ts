import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { Nullable, PATTERN_MESSAGE, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const CONTACT_STATUSES = ['PENDING', 'IN_PROGRESS', 'ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED', 'SKIPPED'] as const;
/**
 * Why the dialer did not dial a SKIPPED contact, for good: dnc (on the tenant's do-not-call list), no_consent (the campaign or a
 * calling rule needs a valid consent for voice and there is none), unknown_timezone (the contact's local time is needed and neither
 * the contact nor its number tells its zone), outside_window (the call windows that hold for the contact never overlap),
 * pre_dial_skip (the campaign's pre-dial webhook said skip).
 */
export const SKIP_REASONS = ['dnc', 'no_consent', 'unknown_timezone', 'outside_window', 'pre_dial_skip'] as const;
/** Why a RUNNING campaign cannot dial anyone right now (its `waiting`). */
export const WAITING_REASONS = ['outside_window', 'frequency_cap', 'in_call', 'redial_delay'] as const;
export const WINDOW_TIME_ZONES = ['CAMPAIGN', 'CONTACT'] as const;

const Metadata = Type.Record(Type.String(), Type.Unknown());
const HhMm = Type.String({
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
  [PATTERN_MESSAGE]: 'a time as HH:mm, such as 09:00',
  description: 'HH:mm, 24-hour local time of the campaign timezone.',
});

export const MACHINE_ACTIONS = ['HANG_UP_AND_RETRY', 'LEAVE_VOICEMAIL'] as const;
/** What the campaign does about answering machines (Twilio's and the simulator's numbers can tell). */
export const AnsweringMachine = Type.Object(
  {
    detect: Type.Boolean({
      description:
        "Ask the provider who answers each call ('human', 'machine', 'fax' or 'unknown': the call's answeredBy) and apply onMachine to a machine, the voicemail's beep heard on the call included. A call on a media stream hears who answered itself either way (the beep, a call-screening assistant, a phone menu).",
    }),
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

/** When an outcome is tried again: after some minutes, at the next day's window opening, or never. */
const RetryRule = Type.Union(
  [
    Type.Object({ afterMinutes: Type.Integer({ minimum: 1, maximum: 10080 }) }, { additionalProperties: false }),
    Type.Object({ nextDay: Type.Literal(true) }, { additionalProperties: false }),
    Type.Object({ never: Type.Literal(true) }, { additionalProperties: false }),
  ],
  { description: '{afterMinutes: 1..10080}, {nextDay: true} (the first window opening on a later local day) or {never: true}.' },
);
export type RetryRule = Static<typeof RetryRule>;
export const RETRY_OUTCOMES = ['BUSY', 'UNANSWERED', 'VOICEMAIL', 'FAILED'] as const;
export type RetryOutcome = (typeof RETRY_OUTCOMES)[number];
export const RetryRules = Type.Object(
  {
    BUSY: Type.Optional(RetryRule),
    UNANSWERED: Type.Optional(RetryRule),
    VOICEMAIL: Type.Optional(RetryRule),
    FAILED: Type.Optional(RetryRule),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'When each outcome is dialled again, replacing redialDelayMin for the outcomes named (VOICEMAIL: a machine answered and was hung up on); an outcome not named waits redialDelayMin. Never more than maxAttempts; a retry outside the call window moves to its next opening. null (the default): redialDelayMin for all.',
  },
);
export type RetryRules = Static<typeof RetryRules>;

export const POST_CALL_MESSAGES = ['EVERY_ATTEMPT', 'FINAL_OUTCOME'] as const;
export type PostCallMessages = (typeof POST_CALL_MESSAGES)[number];

export const PRE_DIAL_ON_ERROR = ['CALL', 'SKIP'] as const;
export const PreDialWebhookInput = Type.Object(
  {
    url: Type.String({
      format: 'uri',
      maxLength: 2000,
      description:
        "https URL of your server, asked before each contact is dialled; signed like the agent's custom tools, with its tool signing secret.",
    }),
    timeoutMs: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 10000, description: 'How long to wait for the answer (default 2000 ms).' }),
    ),
    onError: Type.Optional(
      StringEnum(PRE_DIAL_ON_ERROR, { description: 'What a timeout, an error or an unreadable answer means: CALL (default) or SKIP.' }),
    ),
  },
  { additionalProperties: false },
);
export type PreDialWebhookInput = Static<typeof PreDialWebhookInput>;
export const PreDialWebhook = Type.Object({
  url: Type.String(),
  timeoutMs: Type.Integer(),
  onError: StringEnum(PRE_DIAL_ON_ERROR),
});
export type PreDialWebhook = Static<typeof PreDialWebhook>;

export const MAX_EXPERIMENT_ARMS = 10;
export const MAX_ARM_WEIGHT = 1000;
/** A split of the campaign's contacts between versions of its agent (issue 41). */
export const Experiment = Type.Object(
  {
    arms: Type.Array(
      Type.Object(
        {
          version: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'A published version of the campaign agent.' }),
          weight: Type.Integer({
            minimum: 1,
            maximum: MAX_ARM_WEIGHT,
            description: `The arm's share of the contacts, relative to the other arms' weights: 1 to ${MAX_ARM_WEIGHT}.`,
          }),
        },
        { additionalProperties: false },
      ),
      { minItems: 2, maxItems: MAX_EXPERIMENT_ARMS, description: `2 to ${MAX_EXPERIMENT_ARMS} arms, each a different version.` },
    ),
  },
  {
    additionalProperties: false,
    description:
      "Splits the contacts between versions of the agent: each contact's arm is drawn from a hash of the campaign and contact ids, weighted, when the campaign starts, and every attempt of the contact runs that arm's version. GET /analytics/campaigns/{id}/experiment compares the arms. null (the default): no experiment.",
  },
);
export type Experiment = Static<typeof Experiment>;

/** Seed §2.4 fields (all settable on create and, while DRAFT, by PATCH) plus maxConcurrentCalls. */
const campaignFields = {
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Unique within the tenant.' }),
  agentId: Type.Union([Uuid, Type.Null()]),
  voiceNumberId: Type.Union([Uuid, Type.Null()]),
  contactListId: Type.Union([Uuid, Type.Null()], { description: 'The list must have at least 2 contacts.' }),
  description: Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]),
  scheduledAt: Type.String({ format: 'date-time', description: 'Sets the scheduled start; the status becomes SCHEDULED.' }),
  timezone: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'IANA time zone, e.g. America/New_York, or a city that names exactly one zone (Berlin is stored as Europe/Berlin).',
  }),
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
      "What each simulated contact says, line by line, when its own metadata.simulate.say has no script (SIMULATOR numbers only); null: a default persona. A line 'words => reply' is a reaction: said once, when the agent's last words hold one of the words or phrases (| between them, any case), before the next plain line.",
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
      "Apply the statutory calling rules (hours, holidays, call caps and consent in the person's local time, by country and US state) and the tenant's own. Default: the tenant's compliance settings (true until changed). false declares that the campaign makes no telephone solicitation or advertising (reminders, service calls), the only calls the statutes govern.",
  }),
  requireConsent: Type.Boolean({
    description: "Dial only contacts with a valid consent for voice. Default: the tenant's compliance settings (false until changed).",
  }),
  retryRules: Type.Union([RetryRules, Type.Null()]),
  postCallMessages: StringEnum(POST_CALL_MESSAGES, {
    description:
      "FINAL_OUTCOME (default): only the call that settles the contact (answered, a permanent failure, a voicemail left or the last attempt) sends the agent's post-call WhatsApp and SMS, so a contact gets one follow-up from this campaign; EVERY_ATTEMPT: each ended call may send them.",
  }),
  preDialWebhook: Type.Union([PreDialWebhookInput, Type.Null()], {
    description: 'A server asked before each contact is dialled whether to call and with which variables; null (the default): none.',
  }),
  voiceNumberIds: Type.Union([Type.Array(Uuid, { minItems: 1, maxItems: 50, uniqueItems: true }), Type.Null()], {
    description:
      'Caller-ID pool: the numbers the campaign dials from (voiceNumberId is the first; it is added when missing). Each contact gets a number of its country, then of its area code, when the pool has one, else the next in turn.',
  }),
  callerIdDailyCap: Type.Union([Type.Integer({ minimum: 1, maximum: 100000 }), Type.Null()], {
    description: "At most this many dials per pool number per day (the campaign's time zone); null: no cap.",
  }),
  agentVersion: Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()], {
    description:
      'The published version of the agent every call of the campaign runs (POST /agents/{id}/versions publishes one); null (the default): the agent as it is when each call is made. Not with experiment.',
  }),
  experiment: Type.Union([Experiment, Type.Null()]),
};

const { name, ...rest } = campaignFields;
export const CreateCampaignBody = Type.Object({ name, ...Type.Partial(Type.Object(rest)).properties }, { additionalProperties: false });
export type CreateCampaignBody = Static<typeof CreateCampaignBody>;
export const UpdateCampaignBody = Type.Partial(Type.Object(campaignFields, { additionalProperties: false }));
export type UpdateCampaignBody = Static<typeof UpdateCampaignBody>;

export const CampaignStats = Type.Object({
  total: Type.Integer(),
  pending: Type.Integer({
    description: 'Contacts without a final result and not in a call: not called yet, or waiting to be called again.',
  }),
  retrying: Type.Integer({
    description:
      'Of pending, the contacts already called (their last outcome, UNANSWERED, BUSY or FAILED, is not final) waiting for their next attempt. answered, unanswered, busy and failed count final results only.',
  }),
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
  retryRules: Type.Optional(Type.Union([RetryRules, Type.Null()])),
  postCallMessages: Type.Optional(StringEnum(POST_CALL_MESSAGES)),
  preDialWebhook: Type.Optional(Type.Union([PreDialWebhook, Type.Null()])),
  voiceNumberIds: Type.Optional(Type.Array(Uuid)),
  callerIdDailyCap: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  agentVersion: Type.Optional(
    Type.Union([Type.Integer(), Type.Null()], { description: "The agent's version the calls run; null: the agent as it is." }),
  ),
  experiment: Type.Optional(Type.Union([Experiment, Type.Null()])),
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
    description:
      "dnc, no_consent, unknown_timezone, outside_window (the windows that hold for the contact never overlap), or pre_dial_skip (the campaign's pre-dial webhook said skip).",
  }),
  waitReason: Type.Optional(
    Type.Union([StringEnum(['outside_window', 'frequency_cap', 'in_call'] as const), Type.Null()], {
      description:
        'For a PENDING contact the dialer put off: outside its call window, over a frequency cap, or on another call of the account (in_call); nextAttemptAt says until when.',
    }),
  ),
  attempts: Type.Integer(),
  lastOutcome: Type.Union([Type.String(), Type.Null()]),
  lastCallId: Type.Union([Uuid, Type.Null()]),
  nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
  agentVersion: Type.Optional(
    Type.Integer({
      description:
        "The agent's version the contact is called with (its arm of the experiment, or the pinned version), fixed when the campaign starts; absent: the agent as it is.",
    }),
  ),
});
export type CampaignContact = Static<typeof CampaignContact>;

export const CallerIdStats = Type.Object({
  voiceNumberId: Uuid,
  phoneNumber: Type.String(),
  primary: Type.Boolean({ description: 'The campaign voiceNumberId.' }),
  attempts: Type.Integer({ description: 'Calls this campaign placed from the number.' }),
  answered: Type.Integer(),
  answerRate: Type.Union([Type.Number(), Type.Null()], {
    description: 'answered / attempts, 0 to 1; null before the first call. A falling rate shows a burnt number.',
  }),
  dialledToday: Type.Integer({ description: "Dials from the number today (the campaign's time zone), counted against callerIdDailyCap." }),
  dailyCap: Type.Union([Type.Integer(), Type.Null()]),
});
export type CallerIdStats = Static<typeof CallerIdStats>;
