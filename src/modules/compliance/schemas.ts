import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { PATTERN_MESSAGE, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';

export const DNC_SOURCES = ['api', 'import', 'call', 'sms', 'whatsapp'] as const;
export type DncSource = (typeof DNC_SOURCES)[number];

export const DncEntry = Type.Object({
  phoneNumber: Type.String({ description: 'E.164.' }),
  source: StringEnum(DNC_SOURCES, {
    description: 'api (an API client or the dashboard), import (a CSV file), call (asked on a call), sms or whatsapp (an opt-out reply).',
  }),
  reason: Type.Union([Type.String(), Type.Null()]),
  evidence: Type.Record(Type.String(), Type.Unknown(), {
    description: 'What shows the person asked: for a call, its callId and the transcript turn; for a reply, its message id.',
  }),
  createdAt: Timestamp,
});
export type DncEntry = Static<typeof DncEntry>;

export const AddDncBody = Type.Object(
  {
    phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'E.164, such as +14155550100.' }),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
export type AddDncBody = Static<typeof AddDncBody>;

export const DncParams = Type.Object({
  phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'E.164, such as +14155550100.' }),
});

export const DncQuery = Type.Object({
  ...PageQuery.properties,
  search: Type.Optional(Type.String({ maxLength: 32, description: 'A part of the number.' })),
});

export const DncImportResult = Type.Object({
  added: Type.Integer({ description: 'Numbers put on the list by this file.' }),
  alreadyListed: Type.Integer({ description: 'Numbers of the file that were on the list already (their entries are kept).' }),
  invalidRows: Type.Array(Type.Object({ row: Type.Integer(), phone: Type.String(), reason: Type.String() })),
});
export type DncImportResult = Static<typeof DncImportResult>;

// ---------------------------------------------------------------------------------------------
// Calling rules, the tenant's compliance settings, consents and the records of dial decisions.

const HhMm = Type.String({
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
  [PATTERN_MESSAGE]: 'a time as HH:mm, such as 09:00',
  description: 'HH:mm, the called person’s local time.',
});

export const CallingRule = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9-]+$', [PATTERN_MESSAGE]: 'lower-case letters, digits and hyphens' }),
    region: Type.String({
      minLength: 1,
      maxLength: 10,
      pattern: '^(\\*|[A-Z]{2}(-[A-Z]{2})?)$',
      [PATTERN_MESSAGE]: 'a country code in capitals (US), a US state (US-FL) or *',
      description: 'Where it holds: a country (ISO 3166-1, such as US or FR), a US state (US-FL), or * for every number.',
    }),
    name: Type.String({ minLength: 1, maxLength: 300 }),
    source: Type.String({ minLength: 1, maxLength: 500, description: 'The statute, regulation or policy the rule comes from.' }),
    windows: Type.Optional(
      Type.Array(
        Type.Object(
          {
            days: Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), { minItems: 1, maxItems: 7, uniqueItems: true }),
            start: HhMm,
            end: HhMm,
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 14, description: 'When a call is allowed (any one window), in the person’s local time.' },
      ),
    ),
    maxCalls: Type.Optional(
      Type.Array(
        Type.Object(
          { count: Type.Integer({ minimum: 1, maximum: 1000 }), hours: Type.Integer({ minimum: 1, maximum: 24 * 366 }) },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 5, description: 'At most `count` calls placed to the number within any `hours`.' },
      ),
    ),
    holidays: Type.Optional(
      Type.Object(
        {
          calendar: Type.String({
            pattern: '^[A-Z]{2}(-[A-Z0-9]{1,3})?$',
            [PATTERN_MESSAGE]: 'a country code in capitals (FR) or a country and region (US-LA)',
            description: 'Whose public holidays: a country (FR) or a state or region of one (US-LA).',
          }),
          extraDays: Type.Optional(
            Type.Array(
              Type.String({
                pattern: '^(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$',
                [PATTERN_MESSAGE]: 'a day as MM-DD, such as 12-25',
                description: 'MM-DD',
              }),
              {
                maxItems: 30,
                description: 'More days barred every year, MM-DD.',
              },
            ),
          ),
          weekendObserved: Type.Optional(
            Type.Boolean({
              description: 'A holiday on a Saturday also bars the Friday before, one on a Sunday the Monday after.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'No call on these days, in the person’s local calendar (needs `windows`): the calendar’s public holidays and the extra days.',
        },
      ),
    ),
    requiresConsent: Type.Optional(Type.Boolean({ description: 'Only with a valid consent for voice.' })),
  },
  { additionalProperties: false },
);
export type CallingRule = Static<typeof CallingRule>;

export const WINDOW_TIME_ZONES = ['CAMPAIGN', 'CONTACT'] as const;
export type WindowTimeZone = (typeof WINDOW_TIME_ZONES)[number];

const CallCap = Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Null()]);
const settingsFields = {
  windowTimeZone: StringEnum(WINDOW_TIME_ZONES, {
    description: 'For new campaigns: read the call window in the campaign’s time zone (CAMPAIGN) or in each contact’s own (CONTACT).',
  }),
  callingRules: Type.Boolean({
    description:
      'For new campaigns: apply the statutory calling rules and the tenant’s own (true until changed). false declares that the tenant’s campaigns make no telephone solicitation or advertising, the only calls the statutes govern.',
  }),
  requireConsent: Type.Boolean({ description: 'For new campaigns: dial only contacts with a valid consent for voice.' }),
  maxCallsPerDay: Type.Union([CallCap], {
    description: 'At most this many calls to one number in 24 hours, across all campaigns; null: no cap.',
  }),
  maxCallsPerWeek: Type.Union([CallCap], {
    description: 'At most this many calls to one number in 7 days, across all campaigns; null: no cap.',
  }),
  customRules: Type.Array(CallingRule, { maxItems: 50, description: 'The tenant’s own calling rules, applied with the statutory ones.' }),
};
export const ComplianceSettings = Type.Object({
  ...settingsFields,
  statutoryRules: Type.Array(CallingRule, { description: 'The statutory rules the service applies, with their sources (read-only).' }),
  updatedAt: Type.Union([Timestamp, Type.Null()]),
});
export type ComplianceSettings = Static<typeof ComplianceSettings>;
export const UpdateComplianceSettings = Type.Partial(Type.Object(settingsFields, { additionalProperties: false }));
export type UpdateComplianceSettings = Static<typeof UpdateComplianceSettings>;

export const CONSENT_CHANNELS = ['voice', 'sms', 'whatsapp'] as const;
export type ConsentChannel = (typeof CONSENT_CHANNELS)[number];

export const Consent = Type.Object({
  id: Uuid,
  phoneNumber: Type.String({ description: 'E.164: the person who consented.' }),
  channel: StringEnum(CONSENT_CHANNELS),
  source: Type.String({ description: 'Where the consent was given, such as web-form or call.' }),
  evidence: Type.Record(Type.String(), Type.Unknown(), {
    description: 'What shows it: a form submission id, a recording, a signed document.',
  }),
  grantedAt: Timestamp,
  expiresAt: Type.Union([Timestamp, Type.Null()]),
  revokedAt: Type.Union([Timestamp, Type.Null()]),
  valid: Type.Boolean({ description: 'Granted, not expired and not revoked now.' }),
  createdAt: Timestamp,
});
export type Consent = Static<typeof Consent>;

export const AddConsentBody = Type.Object(
  {
    phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'E.164, such as +14155550100.' }),
    channel: StringEnum(CONSENT_CHANNELS),
    source: Type.String({ minLength: 1, maxLength: 200 }),
    evidence: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    grantedAt: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now.' })),
    expiresAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type AddConsentBody = Static<typeof AddConsentBody>;

export const ConsentQuery = Type.Object({
  ...PageQuery.properties,
  phoneNumber: Type.Optional(Type.String({ maxLength: 32, description: 'Only this number’s consents.' })),
});

export const SKIP_REASONS = ['dnc', 'no_consent', 'unknown_timezone'] as const;
export const WAIT_REASONS = ['outside_window', 'frequency_cap', 'in_call'] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];
/** Who answered a dialled call (an `answered` record's reason): the call's answeredBy. */
export const ANSWERERS = ['human', 'machine', 'fax', 'unknown', 'call_screening', 'phone_menu'] as const;
export type Answerer = (typeof ANSWERERS)[number];
export const DECISION_REASONS = [...SKIP_REASONS, ...WAIT_REASONS, ...ANSWERERS] as const;
export type DecisionReason = (typeof DECISION_REASONS)[number];
export const VERDICTS = ['dial', 'skip', 'wait', 'answered'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** What the dialer checked for one decision. */
export const DecisionFacts = Type.Object({
  timeZones: Type.Array(Type.String(), {
    description: 'The zones used: the campaign’s, or the contact’s (several when its number spans them).',
  }),
  timeZoneSource: StringEnum(['campaign', 'contact', 'number', 'unknown'] as const),
  localTimes: Type.Array(Type.String(), { description: 'The local time in each zone, ISO-8601 with offset.' }),
  rules: Type.Array(Type.String(), { description: 'Ids of the calling rules checked.' }),
  doNotCall: Type.Boolean(),
  consent: StringEnum(['valid', 'none', 'not_required'] as const),
  callCounts: Type.Record(Type.String(), Type.Integer(), { description: 'Calls placed to the number in the last N hours, by N.' }),
  resumesAt: Type.Union([Timestamp, Type.Null()], { description: 'For a wait: when the contact may be dialled.' }),
});
export type DecisionFacts = Static<typeof DecisionFacts>;

/** What an `answered` record says of the call a dial placed. */
export const AnsweredFacts = Type.Object({
  callId: Uuid,
  attempt: Type.Integer(),
  detectedBy: StringEnum(['provider', 'beep', 'words'] as const, {
    description:
      "How: the provider's answering-machine detection (or the simulator's), the voicemail's beep heard on the call, or the words of an assistant, a menu or a person.",
  }),
});
export type AnsweredFacts = Static<typeof AnsweredFacts>;

export const ComplianceRecord = Type.Object({
  sequence: Type.Integer({ description: 'Place in the tenant’s chain, 1 first.' }),
  id: Uuid,
  campaignId: Uuid,
  contactId: Uuid,
  phoneNumber: Type.String(),
  decidedAt: Timestamp,
  verdict: StringEnum(VERDICTS, {
    description:
      "dial; skip (final, never dialled by this campaign); wait (not now); answered (who answered a dialled call: its reason, the call's answeredBy).",
  }),
  reason: Type.Union([StringEnum(DECISION_REASONS), Type.Null()]),
  facts: Type.Union([DecisionFacts, AnsweredFacts], {
    description: 'What was checked (dial, skip, wait), or what the call found (answered).',
  }),
  previousHash: Type.String(),
  hash: Type.String({ description: 'SHA-256 of the previous hash and this record.' }),
});
export type ComplianceRecord = Static<typeof ComplianceRecord>;

export const ChainVerification = Type.Object({
  valid: Type.Boolean(),
  records: Type.Integer({ description: 'Records checked.' }),
  firstBroken: Type.Union([Type.Object({ sequence: Type.Integer(), id: Uuid, campaignId: Uuid, problem: Type.String() }), Type.Null()]),
});
export type ChainVerification = Static<typeof ChainVerification>;
