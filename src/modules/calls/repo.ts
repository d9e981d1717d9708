import type { Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['calls', 'call_recordings', 'call_recording_chunks'] as const;

export type CallStatus = 'QUEUED' | 'RINGING' | 'IN_PROGRESS' | 'ENDED';

export interface CallRow {
  tenant_id: string;
  id: string;
  agent_id: string | null;
  /** The agent's version the call runs; null: the agent as it is (live). */
  agent_version: number | null;
  campaign_id: string | null;
  contact_id: string | null;
  /** The contact as it was when the call was placed. */
  contact_name: string | null;
  contact_metadata: Record<string, unknown> | null;
  voice_number_id: string | null;
  direction: 'OUTGOING' | 'INCOMING';
  from_number: string;
  to_number: string;
  attempt: number;
  status: CallStatus;
  outcome: string | null;
  failure_reason: string | null;
  permanent_failure: boolean;
  provider: string;
  provider_call_id: string | null;
  dial_timeout: number;
  deadline_at: Date | null;
  started_at: Date;
  answered_at: Date | null;
  ended_at: Date | null;
  duration_sec: number | null;
  transcript: unknown[];
  end_reason: string | null;
  outcomes: unknown[];
  conversation_started_at: Date | null;
  recording_url: string | null;
  /** Whether the dial asked who answers (answering-machine detection). */
  machine_detection: boolean;
  /** The detection's verdict: human, machine, fax or unknown; null while none came. */
  answered_by: string | null;
  usage: Record<string, unknown> | null;
  cost: Record<string, string> | null;
  cost_total: string | null;
  created_at: Date;
}

export type NewCall = Pick<
  CallRow,
  | 'id'
  | 'agent_id'
  | 'agent_version'
  | 'campaign_id'
  | 'contact_id'
  | 'contact_name'
  | 'contact_metadata'
  | 'voice_number_id'
  | 'direction'
  | 'from_number'
  | 'to_number'
  | 'attempt'
  | 'status'
  | 'provider'
  | 'provider_call_id'
  | 'dial_timeout'
  | 'machine_detection'
  | 'started_at'
> & { deadline_at: Date };

/**
 * Records calls; with `skipRecorded`, a call whose provider call id is already recorded is skipped
 * (a provider's retried webhook). The ids recorded.
 */
export async function insertCalls(db: Queryable, tenantId: string, calls: NewCall[], { skipRecorded = false } = {}): Promise<string[]> {
  if (calls.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO calls (tenant_id, id, agent_id, agent_version, campaign_id, contact_id, contact_name, contact_metadata, voice_number_id, direction,
                        from_number, to_number, attempt, status, provider, provider_call_id, dial_timeout, machine_detection, deadline_at, started_at, created_at)
     SELECT $1, c.id, c.agent_id, c.agent_version, c.campaign_id, c.contact_id, c.contact_name, c.contact_metadata, c.voice_number_id, c.direction,
            c.from_number, c.to_number, c.attempt, c.status, c.provider, c.provider_call_id, c.dial_timeout, c.machine_detection, c.deadline_at,
            c.started_at, c.started_at
     FROM jsonb_to_recordset($2::jsonb) AS c(id uuid, agent_id uuid, agent_version int, campaign_id uuid, contact_id uuid, contact_name text, contact_metadata jsonb,
       voice_number_id uuid, direction text, from_number text, to_number text, attempt int, status text, provider text, provider_call_id text,
       dial_timeout int, machine_detection boolean, deadline_at timestamptz, started_at timestamptz)
     ${skipRecorded ? 'ON CONFLICT (provider, provider_call_id) DO NOTHING' : ''}
     RETURNING id`,
    [tenantId, JSON.stringify(calls)],
  );
  return rows.map((row) => row.id);
}

/** Live calls whose deadline passed, locked for this worker; other workers skip them. */
export async function lockDueCalls(db: Queryable, now: Date, limit: number): Promise<CallRow[]> {
  const { rows } = await db.query<CallRow>(
    `SELECT * FROM calls WHERE status <> 'ENDED' AND deadline_at <= $1
     ORDER BY deadline_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

export async function lockCall(db: Queryable, tenantId: string, id: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [tenantId, id]);
  return rows[0];
}

/** A provider's callback names its own call id; it leads to the tenant's call. */
export async function lockCallByProviderId(db: Queryable, provider: string, providerCallId: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE provider = $1 AND provider_call_id = $2 FOR UPDATE', [
    provider,
    providerCallId,
  ]);
  return rows[0];
}

export async function findCallByProviderId(db: Queryable, provider: string, providerCallId: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE provider = $1 AND provider_call_id = $2', [provider, providerCallId]);
  return rows[0];
}

export async function updateLiveCall(
  db: Queryable,
  tenantId: string,
  id: string,
  change: { status: CallStatus; providerCallId?: string; answeredAt?: Date | null; deadlineAt: Date | null },
): Promise<void> {
  await db.query(
    `UPDATE calls SET status = $3, provider_call_id = coalesce($4, provider_call_id), answered_at = coalesce($5, answered_at), deadline_at = $6
     WHERE tenant_id = $1 AND id = $2 AND status <> 'ENDED'`,
    [tenantId, id, change.status, change.providerCallId ?? null, change.answeredAt ?? null, change.deadlineAt],
  );
}

export interface CallEnd {
  outcome: string;
  failureReason: string | null;
  permanent: boolean;
  endedAt: Date;
  answeredAt: Date | null;
  durationSec: number;
  endReason: string | null;
  usage: Record<string, unknown>;
  cost: Record<string, string>;
  costTotal: string;
}

/**
 * Ends live calls, any tenant's, in one statement; the rows of those that ended now (one that had
 * already ended, by a repeated callback, is left out). An end reason the live call already carries
 * (a voicemail left) stays when the end gives none.
 */
export async function endCalls(db: Queryable, ends: (CallEnd & { tenantId: string; id: string })[]): Promise<CallRow[]> {
  if (ends.length === 0) return [];
  const { rows } = await db.query<CallRow>(
    `UPDATE calls c SET status = 'ENDED', outcome = e.outcome, failure_reason = e.failure_reason, permanent_failure = e.permanent,
       ended_at = e.ended_at, answered_at = coalesce(c.answered_at, e.answered_at), duration_sec = e.duration_sec,
       end_reason = coalesce(e.end_reason, c.end_reason), usage = e.usage, cost = e.cost, cost_total = e.cost_total, deadline_at = NULL
     FROM jsonb_to_recordset($1::jsonb) AS e (tenant_id uuid, id uuid, outcome text, failure_reason text, permanent boolean,
       ended_at timestamptz, answered_at timestamptz, duration_sec int, end_reason text, usage jsonb, cost jsonb, cost_total numeric)
     WHERE c.tenant_id = e.tenant_id AND c.id = e.id AND c.status <> 'ENDED' RETURNING c.*`,
    [
      JSON.stringify(
        ends.map((end) => ({
          tenant_id: end.tenantId,
          id: end.id,
          outcome: end.outcome,
          failure_reason: end.failureReason,
          permanent: end.permanent,
          ended_at: end.endedAt,
          answered_at: end.answeredAt,
          duration_sec: end.durationSec,
          end_reason: end.endReason,
          usage: end.usage,
          cost: end.cost,
          cost_total: end.costTotal,
        })),
      ),
    ],
  );
  return rows;
}

/**
 * Takes an answered call for its conversation, once: a retried or repeated job finds it taken.
 * Undefined when the call is not live and answered, or a conversation already has it.
 */
export async function claimConversation(db: Queryable, tenantId: string, id: string, now: Date): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>(
    `UPDATE calls SET conversation_started_at = $3
     WHERE tenant_id = $1 AND id = $2 AND status = 'IN_PROGRESS' AND conversation_started_at IS NULL RETURNING *`,
    [tenantId, id, now],
  );
  return rows[0];
}

/**
 * A provider's media stream started for a live call: the call is answered (the stream is the proof,
 * its status callback may come later) and its conversation is claimed. Undefined when the call is
 * over or a conversation already has it (a replayed stream).
 */
export async function claimStreamedConversation(db: Queryable, tenantId: string, id: string, now: Date): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>(
    `UPDATE calls SET status = 'IN_PROGRESS', answered_at = coalesce(answered_at, $3), conversation_started_at = $3
     WHERE tenant_id = $1 AND id = $2 AND status <> 'ENDED' AND conversation_started_at IS NULL RETURNING *`,
    [tenantId, id, now],
  );
  return rows[0];
}

/** Notes why a live call is ending, before its provider confirms the end; the first reason noted stays. */
export async function noteEndReason(db: Queryable, tenantId: string, id: string, endReason: string): Promise<void> {
  await db.query(`UPDATE calls SET end_reason = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'IN_PROGRESS' AND end_reason IS NULL`, [
    tenantId,
    id,
    endReason,
  ]);
}

/**
 * Stores who answered a live call, once: false when a verdict was already stored or the call is
 * over. `over`: verdicts a later one may replace (an assistant or a menu, once a person speaks).
 */
export async function setAnsweredBy(
  db: Queryable,
  tenantId: string,
  id: string,
  answeredBy: string,
  over: string[] = [],
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE calls SET answered_by = $3
      WHERE tenant_id = $1 AND id = $2 AND (answered_by IS NULL OR answered_by = ANY($4::text[])) AND status <> 'ENDED'`,
    [tenantId, id, answeredBy, over],
  );
  return rowCount === 1;
}

/**
 * Sets who answered live calls, each only over no verdict or one of `over`: the calls changed, as
 * they are now (one statement for a turn's verdicts; each call named once).
 */
export async function setAnsweredByOnLiveCalls(
  db: Queryable,
  tenantId: string,
  verdicts: { id: string; answeredBy: string; over: string[] }[],
): Promise<CallRow[]> {
  if (verdicts.length === 0) return [];
  const { rows } = await db.query<CallRow>(
    `UPDATE calls SET answered_by = q.answered_by
       FROM unnest($2::uuid[], $3::text[], $4::text[]) AS q (id, answered_by, over)
      WHERE calls.tenant_id = $1 AND calls.id = q.id AND calls.status = 'IN_PROGRESS'
        AND (calls.answered_by IS NULL OR calls.answered_by = ANY (string_to_array(q.over, ',')))
      RETURNING calls.*`,
    [
      tenantId,
      verdicts.map((verdict) => verdict.id),
      verdicts.map((verdict) => verdict.answeredBy),
      verdicts.map((verdict) => verdict.over.join(',')),
    ],
  );
  return rows;
}

/**
 * Records the voicemail left on a call: its turn, and why the call ends. Also on a call whose final
 * status came first: the message was spoken either way.
 */
export async function addVoicemailTurn(db: Queryable, tenantId: string, id: string, turn: object): Promise<void> {
  await db.query(
    `UPDATE calls SET transcript = transcript || $3::jsonb, end_reason = coalesce(end_reason, 'voicemail_left') WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, JSON.stringify([turn])],
  );
}

/** Adds turns to a live call's transcript with the conversation's usage so far; false once the call has ended. */
export async function appendTurns(db: Queryable, tenantId: string, id: string, turns: unknown[], usage: object): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE calls SET transcript = transcript || $3::jsonb, usage = $4::jsonb WHERE tenant_id = $1 AND id = $2 AND status = 'IN_PROGRESS'`,
    [tenantId, id, JSON.stringify(turns), JSON.stringify(usage)],
  );
  return rowCount === 1;
}

/** Records a tool's outcome once per tool call (a retried step adds nothing); false when it was already there. */
export async function addOutcome(db: Queryable, tenantId: string, id: string, outcome: { toolCallId: string | null }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE calls SET outcomes = outcomes || $3::jsonb
     WHERE tenant_id = $1 AND id = $2 AND ($4::text IS NULL OR NOT outcomes @> jsonb_build_array(jsonb_build_object('toolCallId', $4::text)))`,
    [tenantId, id, JSON.stringify([outcome]), outcome.toolCallId],
  );
  return rowCount === 1;
}

/** What a live view needs: the call's state and the turns after the first `seen`. */
export async function liveState(
  db: Queryable,
  tenantId: string,
  id: string,
  seen: number,
): Promise<{ status: CallStatus; end_reason: string | null; turns: number; new_turns: unknown[] } | undefined> {
  const { rows } = await db.query<{ status: CallStatus; end_reason: string | null; turns: number; new_turns: unknown[] }>(
    `SELECT status, end_reason, jsonb_array_length(transcript) AS turns,
            coalesce((SELECT jsonb_agg(turn ORDER BY i) FROM jsonb_array_elements(transcript) WITH ORDINALITY AS x(turn, i) WHERE i > $3), '[]') AS new_turns
     FROM calls WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, seen],
  );
  return rows[0];
}

export async function findCall(db: Queryable, tenantId: string, id: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

/** Several calls in one statement; each id's row in order (undefined: not this tenant's call). */
export async function findCalls(db: Queryable, tenantId: string, ids: string[]): Promise<(CallRow | undefined)[]> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [tenantId, ids]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id));
}

export interface CallFilter {
  agentId?: string;
  campaignId?: string;
  contactId?: string;
  direction?: string;
  outcome?: string;
  from?: Date;
  to?: Date;
}

export async function listCalls(
  db: Queryable,
  tenantId: string,
  filter: CallFilter,
  page: Page,
): Promise<{ rows: CallRow[]; total: number }> {
  const where = `tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2) AND ($3::uuid IS NULL OR campaign_id = $3) AND ($4::uuid IS NULL OR contact_id = $4)
    AND ($5::text IS NULL OR direction = $5) AND ($6::text IS NULL OR outcome = $6) AND ($7::timestamptz IS NULL OR created_at >= $7) AND ($8::timestamptz IS NULL OR created_at < $8)`;
  const params = [
    tenantId,
    filter.agentId ?? null,
    filter.campaignId ?? null,
    filter.contactId ?? null,
    filter.direction ?? null,
    filter.outcome ?? null,
    filter.from ?? null,
    filter.to ?? null,
  ];
  return selectPage<CallRow>(
    db,
    {
      rows: `SELECT * FROM calls WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM calls WHERE ${where}`,
      params,
    },
    page,
  );
}

/** Whether the tenant whose id is the SQL expression `tenant` has a finished call: a condition for a statement that asks several modules at once. */
export const tenantHasEndedCall = (tenant: string) =>
  `EXISTS (SELECT 1 FROM calls WHERE tenant_id = ${tenant} AND status = 'ENDED' AND outcome IS NOT NULL)`;

// Sums over ended calls for the analytics module, which asks through calls/service.ts.

/** One agent's ended calls of a range, each cost component summed exactly (decimal text). */
export interface CallUsageRow {
  agent_id: string | null;
  calls: number;
  seconds: number;
  stt: string;
  tts: string;
  llm: string;
  telephony: string;
  platform_fee: string;
  total: string;
}

const COST_COMPONENT = (key: string) => `coalesce(sum((c.cost ->> '${key}')::numeric), 0)::text`;

/** Ended calls of the range per agent, most spent first. */
export async function usageByAgent(
  db: Queryable,
  tenantId: string,
  range: { from: Date; to: Date; agentId?: string },
): Promise<CallUsageRow[]> {
  const { rows } = await db.query<CallUsageRow>(
    `SELECT c.agent_id, count(*)::int AS calls, coalesce(sum(c.duration_sec), 0)::int AS seconds,
            ${COST_COMPONENT('stt')} AS stt, ${COST_COMPONENT('tts')} AS tts, ${COST_COMPONENT('llm')} AS llm,
            ${COST_COMPONENT('telephony')} AS telephony, ${COST_COMPONENT('platformFee')} AS platform_fee,
            coalesce(sum(c.cost_total), 0)::text AS total
     FROM calls c
     WHERE c.tenant_id = $1 AND c.status = 'ENDED' AND c.ended_at >= $2 AND c.ended_at < $3 AND ($4::uuid IS NULL OR c.agent_id = $4)
     GROUP BY c.agent_id ORDER BY total DESC, c.agent_id`,
    [tenantId, range.from, range.to, range.agentId ?? null],
  );
  return rows;
}

/** Answers at the caller's ear of ended calls: p50/p95 of "caller stops → agent heard" per campaign and agent, per agent, and in all. */
export interface AnswerLatencyRow {
  /** null with `by` 'agent' or 'all', or for calls of no campaign. */
  campaign_id: string | null;
  agent_id: string | null;
  by: 'campaign' | 'agent' | 'all';
  answers: number;
  p50: number | null;
  p95: number | null;
}

export async function answerLatency(
  db: Queryable,
  tenantId: string,
  range: { from: Date; to: Date; agentId?: string; campaignId?: string },
): Promise<AnswerLatencyRow[]> {
  // The answers timed on an audio line (latency.voice of an agent turn, voice-call's latency meter).
  const { rows } = await db.query<AnswerLatencyRow>(
    `SELECT c.campaign_id, c.agent_id,
            CASE WHEN grouping(c.campaign_id) = 0 THEN 'campaign' WHEN grouping(c.agent_id) = 0 THEN 'agent' ELSE 'all' END AS by,
            count(answer.heard)::int AS answers,
            round(percentile_cont(0.5) WITHIN GROUP (ORDER BY answer.heard)::numeric)::int AS p50,
            round(percentile_cont(0.95) WITHIN GROUP (ORDER BY answer.heard)::numeric)::int AS p95
     FROM calls c
     CROSS JOIN LATERAL (
       SELECT (turn -> 'latency' -> 'voice' ->> 'heardMs')::int AS heard
       FROM jsonb_array_elements(c.transcript) AS turn
       WHERE turn -> 'latency' -> 'voice' IS NOT NULL
     ) answer
     WHERE c.tenant_id = $1 AND c.status = 'ENDED' AND c.ended_at >= $2 AND c.ended_at < $3
       AND ($4::uuid IS NULL OR c.agent_id = $4) AND ($5::uuid IS NULL OR c.campaign_id = $5)
     GROUP BY GROUPING SETS ((c.campaign_id, c.agent_id), (c.agent_id), ())
     ORDER BY by, answers DESC, c.campaign_id, c.agent_id`,
    [tenantId, range.from, range.to, range.agentId ?? null, range.campaignId ?? null],
  );
  return rows;
}

export interface CallTrendRow {
  bucket: Date; // the instant the local day or hour starts
  calls: number;
  answered: number;
  seconds: number;
  spend: string;
}

/** Ended calls per local day or hour of `timezone`. */
export async function callTrend(
  db: Queryable,
  tenantId: string,
  range: { from: Date; to: Date; agentId?: string },
  interval: 'day' | 'hour',
  timezone: string,
): Promise<CallTrendRow[]> {
  const { rows } = await db.query<CallTrendRow>(
    // date_trunc in the zone keeps the two 01:00 hours of a fall-back night apart.
    `SELECT date_trunc($5, c.ended_at, $6) AS bucket, count(*)::int AS calls,
            count(*) FILTER (WHERE c.outcome = 'ANSWERED')::int AS answered, coalesce(sum(c.duration_sec), 0)::int AS seconds,
            coalesce(sum(c.cost_total), 0)::text AS spend
     FROM calls c
     WHERE c.tenant_id = $1 AND c.status = 'ENDED' AND c.ended_at >= $2 AND c.ended_at < $3 AND ($4::uuid IS NULL OR c.agent_id = $4)
     GROUP BY 1 ORDER BY 1`,
    [tenantId, range.from, range.to, range.agentId ?? null, interval, timezone],
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Recordings

export interface RecordingRow {
  tenant_id: string;
  call_id: string;
  encoding: 'mulaw' | 'pcm16';
  sample_rate: number;
  /** Frames (one sample of each channel) in its chunks so far. */
  frames: number;
  created_at: Date;
  expires_at: Date;
}

/** Stores a chunk of a call's recording; the first chunk creates the recording with its format and expiry. */
export async function appendRecordingChunk(
  db: Queryable,
  tenantId: string,
  callId: string,
  recording: Pick<RecordingRow, 'encoding' | 'sample_rate' | 'created_at' | 'expires_at'>,
  chunk: { seq: number; audio: Buffer; frames: number },
): Promise<void> {
  await db.query(
    `INSERT INTO call_recordings (tenant_id, call_id, encoding, sample_rate, frames, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (tenant_id, call_id) DO UPDATE SET frames = call_recordings.frames + EXCLUDED.frames`,
    [tenantId, callId, recording.encoding, recording.sample_rate, chunk.frames, recording.created_at, recording.expires_at],
  );
  await db.query('INSERT INTO call_recording_chunks (tenant_id, call_id, seq, audio) VALUES ($1, $2, $3, $4)', [
    tenantId,
    callId,
    chunk.seq,
    chunk.audio,
  ]);
}

export async function setRecordingUrl(db: Queryable, tenantId: string, callId: string, url: string): Promise<void> {
  await db.query('UPDATE calls SET recording_url = $3 WHERE tenant_id = $1 AND id = $2', [tenantId, callId, url]);
}

export async function findRecording(db: Queryable, tenantId: string, callId: string): Promise<RecordingRow | undefined> {
  const { rows } = await db.query<RecordingRow>('SELECT * FROM call_recordings WHERE tenant_id = $1 AND call_id = $2', [tenantId, callId]);
  return rows[0];
}

/** The recording's first chunk after `seq` (-1: its first), so a reader holds one chunk at a time. */
export async function recordingChunkAfter(
  db: Queryable,
  tenantId: string,
  callId: string,
  seq: number,
): Promise<{ seq: number; audio: Uint8Array } | undefined> {
  const { rows } = await db.query<{ seq: number; audio: Uint8Array }>(
    'SELECT seq, audio FROM call_recording_chunks WHERE tenant_id = $1 AND call_id = $2 AND seq > $3 ORDER BY seq LIMIT 1',
    [tenantId, callId, seq],
  );
  return rows[0];
}

/**
 * Deletes up to `limit` recordings (their chunks with them) that expired by `now`, across tenants,
 * and takes their calls' recordingUrl away in the same statement. How many were deleted.
 */
export async function deleteExpiredRecordings(db: Queryable, now: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `WITH expired AS (
       DELETE FROM call_recordings WHERE (tenant_id, call_id) IN (
         SELECT tenant_id, call_id FROM call_recordings WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING tenant_id, call_id)
     UPDATE calls SET recording_url = NULL FROM expired WHERE calls.tenant_id = expired.tenant_id AND calls.id = expired.call_id`,
    [now, limit],
  );
  return rowCount;
}

/** The key space of the called-number locks (the two-key advisory locks, apart from the one-key ones). */
const CALLED_NUMBER_LOCK = 0x63665f6e; // 'cf_n'

/**
 * Locks `phoneNumbers` of the tenant for dialling until the transaction ends, in the order of their
 * keys (claims that share numbers wait, never deadlock): a claim that reads the calls placed to its
 * numbers after this sees every other claim's calls to them, committed while it waited.
 */
export async function lockCalledNumbers(db: Queryable, tenantId: string, phoneNumbers: string[]): Promise<void> {
  if (phoneNumbers.length === 0) return;
  await db.query(
    `SELECT pg_advisory_xact_lock($1, key) FROM (
       SELECT DISTINCT hashtext($2 || ':' || phone_number) AS key FROM unnest($3::text[]) AS phone_number ORDER BY key) AS keys`,
    [CALLED_NUMBER_LOCK, tenantId, phoneNumbers],
  );
}

/**
 * When each call placed (or being placed) to one of `phoneNumbers` since `since` started, across all
 * the tenant's campaigns: a call that ended without reaching its provider does not count.
 */
export async function placedCallsSince(
  db: Queryable,
  tenantId: string,
  phoneNumbers: string[],
  since: Date,
): Promise<{ to_number: string; started_at: Date; live: boolean }[]> {
  if (phoneNumbers.length === 0) return [];
  const { rows } = await db.query<{ to_number: string; started_at: Date; live: boolean }>(
    `SELECT to_number, started_at, status <> 'ENDED' AS live FROM calls
     WHERE tenant_id = $1 AND direction = 'OUTGOING' AND to_number = ANY ($2::text[]) AND started_at > $3
       AND (provider_call_id IS NOT NULL OR status <> 'ENDED')`,
    [tenantId, phoneNumbers, since],
  );
  return rows;
}

/** A campaign's calls per caller ID: how many were placed and how many answered. */
export async function callsPerNumber(db: Queryable, tenantId: string, campaignId: string) {
  const { rows } = await db.query<{ voice_number_id: string; attempts: number; answered: number }>(
    `SELECT voice_number_id, count(*)::int AS attempts, count(*) FILTER (WHERE outcome = 'ANSWERED')::int AS answered
     FROM calls WHERE tenant_id = $1 AND campaign_id = $2 AND voice_number_id IS NOT NULL GROUP BY voice_number_id`,
    [tenantId, campaignId],
  );
  return new Map(rows.map((row) => [row.voice_number_id, row]));
}

/** A campaign's ended calls summed per agent version (an experiment's arms). */
export interface VersionTally {
  version: number | null;
  calls: number;
  answered: number;
  unanswered: number;
  busy: number;
  failed: number;
  appointment: number;
  payment_promise: number;
  opt_out: number;
  transfer: number;
  contacts_called: number;
  successes: number;
  mean_duration: number | null;
  median_duration: number | null;
  cost: string;
}

/**
 * Per version, a campaign's ended calls: their outcomes, the calls whose tools recorded each kind of
 * outcome, the contacts called and those who succeeded (a call answered, when `answered` counts, or
 * a tool outcome of `successTypes`), durations of answered calls, and cost.
 */
export async function versionTallies(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  success: { answered: boolean; types: string[] },
): Promise<VersionTally[]> {
  const has = (type: string) => `outcomes @> '[{"type": "${type}"}]'`;
  const { rows } = await db.query<VersionTally>(
    `WITH ended AS (
       SELECT agent_version, contact_id, outcome, duration_sec, cost_total,
              ${has('appointment')} AS appointment, ${has('payment_promise')} AS payment_promise,
              ${has('opt_out')} AS opt_out, ${has('transfer')} AS transfer,
              ($3 AND outcome = 'ANSWERED') OR EXISTS (SELECT 1 FROM jsonb_array_elements(outcomes) o WHERE o ->> 'type' = ANY ($4::text[])) AS success
       FROM calls WHERE tenant_id = $1 AND campaign_id = $2 AND status = 'ENDED')
     SELECT agent_version AS version, count(*)::int AS calls,
            count(*) FILTER (WHERE outcome = 'ANSWERED')::int AS answered, count(*) FILTER (WHERE outcome = 'UNANSWERED')::int AS unanswered,
            count(*) FILTER (WHERE outcome = 'BUSY')::int AS busy, count(*) FILTER (WHERE outcome = 'FAILED')::int AS failed,
            count(*) FILTER (WHERE appointment)::int AS appointment, count(*) FILTER (WHERE payment_promise)::int AS payment_promise,
            count(*) FILTER (WHERE opt_out)::int AS opt_out, count(*) FILTER (WHERE transfer)::int AS transfer,
            count(DISTINCT contact_id)::int AS contacts_called, count(DISTINCT contact_id) FILTER (WHERE success)::int AS successes,
            (avg(duration_sec) FILTER (WHERE outcome = 'ANSWERED'))::float8 AS mean_duration,
            (percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_sec) FILTER (WHERE outcome = 'ANSWERED'))::float8 AS median_duration,
            coalesce(sum(cost_total), 0)::text AS cost
     FROM ended GROUP BY agent_version`,
    [tenantId, campaignId, success.answered, success.types],
  );
  return rows;
}
