/**
 * What the dialer asks of compliance besides the do-not-call list: the tenant's settings (caps,
 * its own rules, the defaults of new campaigns), consents, and the append-only, hash-chained
 * record of every dial decision.
 */
import { createHash } from 'node:crypto';
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { csvCell } from '../../platform/csv.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { calendarProblem } from '../../platform/holidays.ts';
import type { Page } from '../../platform/pagination.ts';
import { normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { STATUTORY_RULES } from './calling-rules.ts';
import * as repo from './repo.ts';
import type {
  AddConsentBody,
  CallingRule,
  ChainVerification,
  ComplianceRecord,
  ComplianceSettings,
  Consent,
  ConsentChannel,
  AnsweredFacts,
  Score,
  ScoredFacts,
  Answerer,
  DecisionFacts,
  DecisionReason,
  UpdateComplianceSettings,
  Verdict,
  WindowTimeZone,
} from './schemas.ts';

type Ctx = Pick<TenantCtx, 'db' | 'tenantId' | 'clock'>;

// ---------------------------------------------------------------------------------------------
// Settings

const DEFAULT_SETTINGS: Omit<repo.SettingsRow, 'updated_at'> = {
  window_time_zone: 'CAMPAIGN',
  // The law holds unless the tenant says its calls are not the solicitations it governs.
  calling_rules: true,
  require_consent: false,
  max_calls_per_day: null,
  max_calls_per_week: null,
  custom_rules: [],
};

export interface DialSettings {
  windowTimeZone: WindowTimeZone;
  callingRules: boolean;
  requireConsent: boolean;
  maxCallsPerDay: number | null;
  maxCallsPerWeek: number | null;
  customRules: CallingRule[];
}

const toSettings = (row: Omit<repo.SettingsRow, 'updated_at'>): DialSettings => ({
  windowTimeZone: row.window_time_zone as WindowTimeZone,
  callingRules: row.calling_rules,
  requireConsent: row.require_consent,
  maxCallsPerDay: row.max_calls_per_day,
  maxCallsPerWeek: row.max_calls_per_week,
  customRules: row.custom_rules as CallingRule[],
});

/** The tenant's settings as the dialer and new campaigns use them (the defaults until a compliance officer sets them). */
export async function dialSettings(ctx: Pick<TenantCtx, 'db' | 'tenantId'>): Promise<DialSettings> {
  return toSettings((await repo.findSettings(ctx.db, ctx.tenantId)) ?? DEFAULT_SETTINGS);
}

export async function getComplianceSettings(ctx: TenantCtx): Promise<ComplianceSettings> {
  const row = await repo.findSettings(ctx.db, ctx.tenantId);
  return { ...toSettings(row ?? DEFAULT_SETTINGS), statutoryRules: [...STATUTORY_RULES], updatedAt: row?.updated_at.toISOString() ?? null };
}

function refuse(problem: string, path: string): never {
  throw appError('VALIDATION_FAILED.compliance', { problem }, [{ path, message: problem }]);
}

function checkRules(rules: CallingRule[]) {
  const ids = new Set(STATUTORY_RULES.map((rule) => rule.id));
  rules.forEach((rule, index) => {
    if (ids.has(rule.id)) refuse(`customRules[${index}].id "${rule.id}" is taken: give each rule its own id.`, `/customRules/${index}/id`);
    ids.add(rule.id);
    if (rule.holidays) {
      if (!rule.windows)
        refuse(`customRules[${index}]: holidays bar days of the rule's windows; give it windows too.`, `/customRules/${index}/holidays`);
      const problem = calendarProblem(rule.holidays);
      if (problem) refuse(`customRules[${index}].holidays: ${problem}`, `/customRules/${index}/holidays`);
    }
    rule.windows?.forEach((window, w) => {
      // HH:mm strings order as the times they name.
      if (window.start >= window.end)
        refuse(
          `customRules[${index}].windows[${w}]: start (${window.start}) must be before end (${window.end}).`,
          `/customRules/${index}/windows/${w}`,
        );
    });
  });
}

/** Changes the given settings; the defaults of campaigns created from now on, and the caps at once. */
export async function updateComplianceSettings(ctx: TenantCtx, input: UpdateComplianceSettings): Promise<ComplianceSettings> {
  if (input.customRules) checkRules(input.customRules);
  await withTransaction(ctx, async (txCtx) => {
    const current = toSettings((await repo.findSettings(txCtx.db, ctx.tenantId)) ?? DEFAULT_SETTINGS);
    const next = { ...current, ...input };
    await repo.saveSettings(
      txCtx.db,
      ctx.tenantId,
      {
        window_time_zone: next.windowTimeZone,
        calling_rules: next.callingRules,
        require_consent: next.requireConsent,
        max_calls_per_day: next.maxCallsPerDay,
        max_calls_per_week: next.maxCallsPerWeek,
        custom_rules: next.customRules,
      },
      ctx.clock.now(),
    );
  });
  return getComplianceSettings(ctx);
}

// ---------------------------------------------------------------------------------------------
// Consents

const toConsent = (row: repo.ConsentRow, now: Date): Consent => ({
  id: row.id,
  phoneNumber: row.phone_number,
  channel: row.channel as ConsentChannel,
  source: row.source,
  evidence: row.evidence,
  grantedAt: row.granted_at.toISOString(),
  expiresAt: row.expires_at?.toISOString() ?? null,
  revokedAt: row.revoked_at?.toISOString() ?? null,
  valid: row.granted_at <= now && !row.revoked_at && (!row.expires_at || row.expires_at > now),
  createdAt: row.created_at.toISOString(),
});

export async function addConsent(ctx: TenantCtx, body: AddConsentBody): Promise<Consent> {
  const phoneNumber = normalizePhoneNumber(body.phoneNumber);
  if (!phoneNumber) throw appError('INVALID_PHONE_NUMBER');
  const now = ctx.clock.now();
  const grantedAt = body.grantedAt ? new Date(body.grantedAt) : now;
  const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
  if (expiresAt && expiresAt <= grantedAt)
    refuse(`expiresAt (${body.expiresAt}) must be after grantedAt (${grantedAt.toISOString()}).`, '/expiresAt');
  const row = await repo.insertConsent(ctx.db, ctx.tenantId, {
    id: newId(),
    phone_number: phoneNumber,
    channel: body.channel,
    source: body.source,
    evidence: body.evidence ?? {},
    granted_at: grantedAt,
    expires_at: expiresAt,
    created_at: now,
  });
  return toConsent(row, now);
}

export async function listConsents(ctx: TenantCtx, rawPhone: string | undefined, page: Page) {
  const phoneNumber = rawPhone === undefined ? undefined : (normalizePhoneNumber(rawPhone) ?? rawPhone);
  const { rows, total } = await repo.listConsents(ctx.db, ctx.tenantId, phoneNumber, page);
  const now = ctx.clock.now();
  return { data: rows.map((row) => toConsent(row, now)), total };
}

export async function getConsent(ctx: TenantCtx, id: string): Promise<Consent> {
  const row = await repo.findConsent(ctx.db, ctx.tenantId, id);
  if (!row) throw appError('NOT_FOUND.consent', { id });
  return toConsent(row, ctx.clock.now());
}

/** Revokes a consent: it stays listed, with when it was revoked, and no longer counts. */
export async function revokeConsent(ctx: TenantCtx, id: string): Promise<Consent> {
  const now = ctx.clock.now();
  const row = await repo.revokeConsent(ctx.db, ctx.tenantId, id, now);
  if (!row) throw appError('NOT_FOUND.consent', { id });
  return toConsent(row, now);
}

/** Which of these numbers hold a valid consent for the channel now (one statement for a batch). */
export const consentedNumbers = (ctx: Ctx, phoneNumbers: string[], channel: ConsentChannel) =>
  repo.consentedAmong(ctx.db, ctx.tenantId, phoneNumbers, channel, ctx.clock.now());

// ---------------------------------------------------------------------------------------------
// Records of dial decisions

export interface DialDecision {
  campaignId: string;
  contactId: string;
  phoneNumber: string;
  verdict: Verdict;
  reason: DecisionReason | null;
  facts: DecisionFacts | AnsweredFacts | ScoredFacts;
}

const GENESIS_HASH = '0'.repeat(64);
const RECORD_SLICE = 2_000;

/** JSON with object keys sorted at every level: what a jsonb column gives back hashes as what was written. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

function hashOf(row: Omit<repo.RecordRow, 'hash'>): string {
  const body = canonicalJson({
    sequence: Number(row.sequence),
    id: row.id,
    campaign_id: row.campaign_id,
    contact_id: row.contact_id,
    phone_number: row.phone_number,
    decided_at: row.decided_at.toISOString(),
    verdict: row.verdict,
    reason: row.reason,
    facts: row.facts,
  });
  return createHash('sha256').update(`${row.previous_hash}\n${body}`).digest('hex');
}

/**
 * Appends the decisions to the tenant's chain, in the caller's transaction (the dialer's claim):
 * each record carries the hash of the one before it, so changing, removing or reordering any
 * record breaks every hash after it.
 */
export async function recordDecisions(ctx: Ctx, decisions: DialDecision[]): Promise<void> {
  if (decisions.length === 0) return;
  const head = await repo.lockChainHead(ctx.db, ctx.tenantId, GENESIS_HASH);
  const decidedAt = ctx.clock.now();
  let previous = head.hash;
  const rows = decisions.map((decision, index): repo.RecordRow => {
    const unhashed = {
      sequence: head.sequence + index + 1,
      id: newId(),
      campaign_id: decision.campaignId,
      contact_id: decision.contactId,
      phone_number: decision.phoneNumber,
      decided_at: decidedAt,
      verdict: decision.verdict,
      reason: decision.reason,
      facts: decision.facts,
      previous_hash: previous,
    };
    previous = hashOf(unhashed);
    return { ...unhashed, hash: previous };
  });
  await repo.appendRecords(ctx.db, ctx.tenantId, rows);
}

/**
 * Who answered calls the dialer placed, appended to the tenant's chain after the dials' own records
 * (in the caller's transaction): each record's reason is its call's answeredBy.
 */
export function recordAnswers(
  ctx: Ctx,
  answers: { campaignId: string; contactId: string; phoneNumber: string; answeredBy: Answerer; facts: AnsweredFacts }[],
): Promise<void> {
  return recordDecisions(
    ctx,
    answers.map((answer) => ({
      campaignId: answer.campaignId,
      contactId: answer.contactId,
      phoneNumber: answer.phoneNumber,
      verdict: 'answered' as const,
      reason: answer.answeredBy,
      facts: answer.facts,
    })),
  );
}

/** A campaign call's scorecard, sealed into the tenant's chain (in the caller's transaction): its reason passed or failed. */
export function recordScore(
  ctx: Ctx,
  score: { campaignId: string; contactId: string; phoneNumber: string; score: Score; facts: ScoredFacts },
): Promise<void> {
  return recordDecisions(ctx, [
    {
      campaignId: score.campaignId,
      contactId: score.contactId,
      phoneNumber: score.phoneNumber,
      verdict: 'scored',
      reason: score.score,
      facts: score.facts,
    },
  ]);
}

const toRecord = (row: repo.RecordRow): ComplianceRecord => ({
  sequence: Number(row.sequence),
  id: row.id,
  campaignId: row.campaign_id,
  contactId: row.contact_id,
  phoneNumber: row.phone_number,
  decidedAt: row.decided_at.toISOString(),
  verdict: row.verdict as Verdict,
  reason: row.reason as DecisionReason | null,
  facts: row.facts as DecisionFacts | AnsweredFacts | ScoredFacts,
  previousHash: row.previous_hash,
  hash: row.hash,
});

async function* recordRows(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, campaignId: string | null): AsyncGenerator<repo.RecordRow[]> {
  for (let after = 0; ;) {
    const rows = await repo.recordsAfter(ctx.db, ctx.tenantId, campaignId, after, RECORD_SLICE);
    if (rows.length === 0) return;
    yield rows;
    after = Number(rows.at(-1)!.sequence);
  }
}

const RECORD_CSV_COLUMNS = [
  'sequence',
  'id',
  'decided_at',
  'campaign_id',
  'contact_id',
  'phone_number',
  'verdict',
  'reason',
  'time_zones',
  'local_times',
  'rules',
  'do_not_call',
  'consent',
  'call_counts',
  'resumes_at',
  'previous_hash',
  'hash',
  'call_id',
];
/** One CSV field, quoted when it holds a quote, a comma or a line break. */
/** A campaign's records in chain order, as CSV, read in slices. */
export async function* exportRecordsCsv(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, campaignId: string): AsyncGenerator<string> {
  yield RECORD_CSV_COLUMNS.join(',') + '\n';
  for await (const rows of recordRows(ctx, campaignId)) {
    yield rows
      .map((row) => {
        const r = toRecord(row);
        const facts: Partial<DecisionFacts & AnsweredFacts> = r.facts;
        return (
          [
            String(r.sequence),
            r.id,
            r.decidedAt,
            r.campaignId,
            r.contactId,
            r.phoneNumber,
            r.verdict,
            r.reason ?? '',
            facts.timeZones?.join(' ') ?? '',
            facts.localTimes?.join(' ') ?? '',
            facts.rules?.join(' ') ?? '',
            facts.doNotCall === undefined ? '' : String(facts.doNotCall),
            facts.consent ?? '',
            facts.callCounts ? JSON.stringify(facts.callCounts) : '',
            facts.resumesAt ?? '',
            r.previousHash,
            r.hash,
            facts.callId ?? '',
          ]
            .map(csvCell)
            .join(',') + '\n'
        );
      })
      .join('');
  }
}

/** A campaign's records in chain order, as one JSON array, read in slices. */
export async function* exportRecordsJson(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, campaignId: string): AsyncGenerator<string> {
  yield '[';
  let first = true;
  for await (const rows of recordRows(ctx, campaignId)) {
    for (const row of rows) {
      yield (first ? '' : ',') + JSON.stringify(toRecord(row));
      first = false;
    }
  }
  yield ']';
}

/**
 * Walks the tenant's whole chain: every record must follow the one before it (sequence and
 * previous hash) and hash to what it says; the last must be the stored head. The first record
 * that does not is named.
 */
export async function verifyRecords(ctx: Pick<TenantCtx, 'db' | 'tenantId'>): Promise<ChainVerification> {
  let expectedSequence = 1;
  let previous = GENESIS_HASH;
  let count = 0;
  let last: repo.RecordRow | undefined;
  const broken = (row: repo.RecordRow, problem: string): ChainVerification => ({
    valid: false,
    records: count,
    firstBroken: { sequence: Number(row.sequence), id: row.id, campaignId: row.campaign_id, problem },
  });
  for await (const rows of recordRows(ctx, null)) {
    for (const row of rows) {
      count += 1;
      if (Number(row.sequence) !== expectedSequence) return broken(row, `record ${expectedSequence} is missing`);
      if (row.previous_hash !== previous) return broken(row, 'its previous hash is not the hash of the record before it');
      if (hashOf(row) !== row.hash) return broken(row, 'its content does not match its hash: it was changed');
      previous = row.hash;
      expectedSequence += 1;
      last = row;
    }
  }
  const head = await repo.chainHead(ctx.db, ctx.tenantId);
  if (head && head.sequence !== (last ? Number(last.sequence) : 0)) {
    const problem = `the chain ends at record ${last ? Number(last.sequence) : 0} but ${head.sequence} were written: records after it were removed`;
    return last ? broken(last, problem) : { valid: false, records: 0, firstBroken: null };
  }
  return { valid: true, records: count, firstBroken: null };
}
