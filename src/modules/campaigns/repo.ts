import { insertValues, updateSet, type Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';
import type { AnsweringMachine, CampaignStatus, Experiment, PostCallMessages, PreDialWebhook, RetryRules } from './schemas.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['campaigns', 'campaign_contacts', 'dial_pace', 'dial_counts'] as const;

export interface CampaignRow {
  tenant_id: string;
  id: string;
  name: string;
  description: string | null;
  agent_id: string | null;
  voice_number_id: string | null;
  contact_list_id: string | null;
  status: CampaignStatus;
  status_reason: string | null;
  scheduled_at: Date | null;
  timezone: string;
  call_window_start: string;
  call_window_end: string;
  call_days: number[];
  dial_timeout: number;
  max_attempts: number;
  redial_delay_min: number;
  max_concurrent_calls: number;
  simulator_script: string[] | null;
  answering_machine: AnsweringMachine | null;
  window_time_zone: 'CAMPAIGN' | 'CONTACT';
  calling_rules: boolean;
  require_consent: boolean;
  metadata: Record<string, unknown>;
  retry_rules: RetryRules | null;
  post_call_messages: PostCallMessages;
  pre_dial_webhook: PreDialWebhook | null;
  voice_number_ids: string[] | null;
  caller_id_daily_cap: number | null;
  agent_version: number | null;
  experiment: Experiment | null;
  started_at: Date | null;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Writable columns, by the API's field names. */
export const COLUMNS = {
  name: 'name',
  description: 'description',
  agentId: 'agent_id',
  voiceNumberId: 'voice_number_id',
  contactListId: 'contact_list_id',
  scheduledAt: 'scheduled_at',
  timezone: 'timezone',
  callWindowStart: 'call_window_start',
  callWindowEnd: 'call_window_end',
  callDays: 'call_days',
  dialTimeout: 'dial_timeout',
  maxAttempts: 'max_attempts',
  redialDelayMin: 'redial_delay_min',
  maxConcurrentCalls: 'max_concurrent_calls',
  simulatorScript: 'simulator_script',
  answeringMachine: 'answering_machine',
  metadata: 'metadata',
  retryRules: 'retry_rules',
  postCallMessages: 'post_call_messages',
  preDialWebhook: 'pre_dial_webhook',
  voiceNumberIds: 'voice_number_ids',
  callerIdDailyCap: 'caller_id_daily_cap',
  agentVersion: 'agent_version',
  experiment: 'experiment',
  status: 'status',
  windowTimeZone: 'window_time_zone',
  callingRules: 'calling_rules',
  requireConsent: 'require_consent',
} as const;
export type CampaignValues = Partial<Record<keyof typeof COLUMNS, unknown>>;

export const UNFINISHED: CampaignStatus[] = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED'];

// By column name; metadata (a plain object) is jsonb, call days an SQL array.
const toColumns = (values: CampaignValues) =>
  Object.fromEntries(
    (Object.entries(values) as [keyof typeof COLUMNS, unknown][]).map(([key, value]) => [
      COLUMNS[key],
      value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) ? JSON.stringify(value) : value,
    ]),
  );

export async function insertCampaign(db: Queryable, tenantId: string, id: string, values: CampaignValues): Promise<CampaignRow> {
  const { columns, placeholders, params } = insertValues({ tenant_id: tenantId, id, ...toColumns(values) });
  const { rows } = await db.query<CampaignRow>(`INSERT INTO campaigns (${columns}) VALUES (${placeholders}) RETURNING *`, params);
  return rows[0]!;
}

/** Updates the given fields of a campaign still in one of `inStatuses`; undefined when it was not. */
export async function updateCampaign(
  db: Queryable,
  tenantId: string,
  id: string,
  values: CampaignValues,
  inStatuses: CampaignStatus[],
): Promise<CampaignRow | undefined> {
  const { set, params } = updateSet(toColumns(values), 3);
  const { rows } = await db.query<CampaignRow>(
    `UPDATE campaigns SET ${set} WHERE tenant_id = $1 AND id = $2 AND status = ANY($3::text[]) RETURNING *`,
    [tenantId, id, inStatuses, ...params],
  );
  return rows[0];
}

export async function findCampaign(db: Queryable, tenantId: string, id: string, forUpdate = false): Promise<CampaignRow | undefined> {
  const { rows } = await db.query<CampaignRow>(
    `SELECT * FROM campaigns WHERE tenant_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
  );
  return rows[0];
}

export async function listCampaigns(
  db: Queryable,
  tenantId: string,
  filter: { status?: string; agentId?: string },
  page: Page,
): Promise<{ rows: CampaignRow[]; total: number }> {
  const where = 'tenant_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::uuid IS NULL OR agent_id = $3)';
  const params = [tenantId, filter.status ?? null, filter.agentId ?? null];
  return selectPage<CampaignRow>(
    db,
    {
      rows: `SELECT * FROM campaigns WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM campaigns WHERE ${where}`,
      params,
    },
    page,
  );
}

export async function deleteCampaign(db: Queryable, tenantId: string, id: string, inStatuses: CampaignStatus[]): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM campaigns WHERE tenant_id = $1 AND id = $2 AND status = ANY($3::text[])', [
    tenantId,
    id,
    inStatuses,
  ]);
  return rowCount === 1;
}

export async function campaignNamesById(db: Queryable, tenantId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM campaigns WHERE tenant_id = $1 AND id = ANY ($2::uuid[])',
    [tenantId, ids],
  );
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** Whether an unfinished campaign of the tenant points at this agent, number or list. */
export async function unfinishedCampaignUses(
  db: Queryable,
  tenantId: string,
  column: 'agent_id' | 'voice_number_id' | 'contact_list_id',
  id: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM campaigns WHERE tenant_id = $1 AND ${column} = $2 AND status = ANY($3::text[]) LIMIT 1`,
    [tenantId, id, UNFINISHED],
  );
  return rowCount > 0;
}

/** Contacts per status of each campaign in `ids`, in one statement (a list page's campaigns). */
export async function campaignStats(db: Queryable, tenantId: string, ids: string[]): Promise<Map<string, Record<string, number>>> {
  // A PENDING contact already called is counted apart as RETRYING: it waits for its next attempt.
  const { rows } = await db.query<{ campaign_id: string; status: string; n: number }>(
    `SELECT campaign_id, CASE WHEN status = 'PENDING' AND attempts > 0 THEN 'RETRYING' ELSE status END AS status, count(*)::int AS n
       FROM campaign_contacts WHERE tenant_id = $1 AND campaign_id = ANY ($2::uuid[]) GROUP BY 1, 2`,
    [tenantId, ids],
  );
  const counts = new Map<string, Record<string, number>>(ids.map((id) => [id, {}]));
  for (const row of rows) counts.get(row.campaign_id)![row.status] = row.n;
  return counts;
}

export interface CampaignContactRow {
  contact_id: string;
  phone_number: string;
  name: string | null;
  status: string;
  skip_reason: string | null;
  wait_reason: string | null;
  attempts: number;
  last_outcome: string | null;
  last_call_id: string | null;
  next_attempt_at: Date | null;
  agent_version: number | null;
}

export async function listCampaignContacts(
  db: Queryable,
  tenantId: string,
  id: string,
  page: Page,
): Promise<{ rows: CampaignContactRow[]; total: number }> {
  return selectPage<CampaignContactRow>(
    db,
    {
      rows: `SELECT contact_id, phone_number, name, status, skip_reason, wait_reason, attempts, last_outcome, last_call_id, next_attempt_at, agent_version
       FROM campaign_contacts WHERE tenant_id = $1 AND campaign_id = $2 ORDER BY position`,
      total: 'SELECT count(*)::int AS n FROM campaign_contacts WHERE tenant_id = $1 AND campaign_id = $2',
      params: [tenantId, id],
    },
    page,
  );
}

/** The campaign's copy of a contact, as it was dialled. */
export async function campaignContact(db: Queryable, tenantId: string, campaignId: string, contactId: string) {
  const { rows } = await db.query<{
    phone_number: string;
    name: string | null;
    email: string | null;
    metadata: Record<string, unknown>;
    pre_dial_variables: Record<string, string> | null;
  }>(
    'SELECT phone_number, name, email, metadata, pre_dial_variables FROM campaign_contacts WHERE tenant_id = $1 AND campaign_id = $2 AND contact_id = $3',
    [tenantId, campaignId, contactId],
  );
  return rows[0];
}

/** A contact copied into a campaign; `position` is its place in the list's order (1 first). */
export interface SnapshotContact {
  contactId: string;
  position: number;
  phoneNumber: string;
  name: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  /** The contact's own IANA zone, when it has one. */
  timezone: string | null;
  /** The agent's version it is called with (its arm); null: the agent as it is. */
  agentVersion: number | null;
}

/** Adds a batch of the list's contacts to the campaign, each due now; returns how many. */
export async function insertCampaignContacts(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  contacts: SnapshotContact[],
  now: Date,
): Promise<number> {
  // One JSON parameter: a whole batch in one statement, the same on pg and PGlite.
  const { rowCount } = await db.query(
    `INSERT INTO campaign_contacts (tenant_id, campaign_id, contact_id, position, phone_number, name, email, metadata, timezone, next_attempt_at, agent_version)
     SELECT $1, $2, c."contactId", c.position, c."phoneNumber", c.name, c.email, c.metadata, c.timezone, $3, c."agentVersion"
     FROM jsonb_to_recordset($4::jsonb) AS c("contactId" uuid, position integer, "phoneNumber" text, name text, email text, metadata jsonb, timezone text,
       "agentVersion" integer)
     ON CONFLICT DO NOTHING`,
    [tenantId, campaignId, now, JSON.stringify(contacts)],
  );
  return rowCount;
}

export async function setStatus(
  db: Queryable,
  tenantId: string,
  id: string,
  from: CampaignStatus[],
  to: CampaignStatus,
  extra: { reason?: string | null; now: Date },
): Promise<CampaignRow | undefined> {
  const { rows } = await db.query<CampaignRow>(
    `UPDATE campaigns SET status = $4, status_reason = $5, updated_at = now(),
       started_at = CASE WHEN $4 = 'RUNNING' THEN coalesce(started_at, $6) ELSE started_at END,
       completed_at = CASE WHEN $4 IN ('COMPLETED', 'CANCELLED') THEN $6 ELSE completed_at END
     WHERE tenant_id = $1 AND id = $2 AND status = ANY($3::text[]) RETURNING *`,
    [tenantId, id, from, to, extra.reason ?? null, extra.now],
  );
  return rows[0];
}

// ---------------------------------------------------------------------------------------------
// The dialer's statements.

export async function lockDueScheduled(db: Queryable, now: Date, limit: number): Promise<CampaignRow[]> {
  const { rows } = await db.query<CampaignRow>(
    `SELECT * FROM campaigns WHERE status = 'SCHEDULED' AND scheduled_at <= $1 ORDER BY scheduled_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

export async function setStatusReason(db: Queryable, tenantId: string, id: string, reason: string | null): Promise<void> {
  await db.query(
    'UPDATE campaigns SET status_reason = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 AND status_reason IS DISTINCT FROM $3',
    [tenantId, id, reason],
  );
}

/** The RUNNING campaigns, each saying whether it has a pre-dial webhook to ask before dialling. */
export async function runningCampaigns(db: Queryable): Promise<{ tenant_id: string; id: string; asks_pre_dial: boolean }[]> {
  const { rows } = await db.query<{ tenant_id: string; id: string; asks_pre_dial: boolean }>(
    "SELECT tenant_id, id, pre_dial_webhook IS NOT NULL AS asks_pre_dial FROM campaigns WHERE status = 'RUNNING'",
  );
  return rows;
}

/** The campaign row, locked so one worker at a time claims its contacts; undefined when another holds it. */
export async function lockRunningCampaign(db: Queryable, tenantId: string, id: string): Promise<CampaignRow | undefined> {
  const { rows } = await db.query<CampaignRow>(
    `SELECT * FROM campaigns WHERE tenant_id = $1 AND id = $2 AND status = 'RUNNING' FOR UPDATE SKIP LOCKED`,
    [tenantId, id],
  );
  return rows[0];
}

export async function liveContactCount(db: Queryable, tenantId: string, campaignId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM campaign_contacts WHERE tenant_id = $1 AND campaign_id = $2 AND status = 'IN_PROGRESS'",
    [tenantId, campaignId],
  );
  return rows[0]!.n;
}

export interface DueContact {
  contact_id: string;
  phone_number: string;
  name: string | null;
  metadata: Record<string, unknown> | null;
  attempts: number;
  timezone: string | null;
  wait_reason: string | null;
  agent_version: number | null;
}

/** Due contacts, locked; with `preDialAnswered`, only those whose pre-dial webhook answered call for the attempt to come. */
export async function dueContacts(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  now: Date,
  limit: number,
  preDialAnswered = false,
): Promise<DueContact[]> {
  const { rows } = await db.query<DueContact>(
    `SELECT contact_id, phone_number, name, metadata, attempts, timezone, wait_reason, agent_version FROM campaign_contacts
     WHERE campaign_id = $2 AND status = 'PENDING' AND next_attempt_at <= $3 AND tenant_id = $1
       AND (NOT $5 OR pre_dial_attempt = attempts + 1)
     ORDER BY next_attempt_at, position LIMIT $4 FOR UPDATE SKIP LOCKED`,
    [tenantId, campaignId, now, limit, preDialAnswered],
  );
  return rows;
}

export interface PreDialCandidate {
  contact_id: string;
  phone_number: string;
  name: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  attempts: number;
}

/** Due contacts whose pre-dial webhook has not answered for their next attempt (read without locks: asking twice is harmless). */
export async function awaitingPreDial(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  now: Date,
  limit: number,
): Promise<PreDialCandidate[]> {
  const { rows } = await db.query<PreDialCandidate>(
    `SELECT contact_id, phone_number, name, email, metadata, attempts FROM campaign_contacts
     WHERE campaign_id = $2 AND status = 'PENDING' AND next_attempt_at <= $3 AND tenant_id = $1
       AND pre_dial_attempt IS DISTINCT FROM attempts + 1
     ORDER BY next_attempt_at, position LIMIT $4`,
    [tenantId, campaignId, now, limit],
  );
  return rows;
}

/** The webhook said call for this attempt, with these variables; nothing when the contact moved on meanwhile. */
export async function recordPreDialCall(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  contactId: string,
  attempt: number,
  variables: Record<string, string>,
): Promise<void> {
  await db.query(
    `UPDATE campaign_contacts SET pre_dial_attempt = $4, pre_dial_variables = $5, updated_at = now()
     WHERE tenant_id = $1 AND campaign_id = $2 AND contact_id = $3 AND status = 'PENDING' AND attempts + 1 = $4`,
    [tenantId, campaignId, contactId, attempt, JSON.stringify(variables)],
  );
}

/** Due contacts the dialer will not dial, with why: they end SKIPPED, never dialled by this campaign. */
export async function skipContacts(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  contactIds: string[],
  reason: string,
): Promise<void> {
  await db.query(
    `UPDATE campaign_contacts SET status = 'SKIPPED', skip_reason = $4, next_attempt_at = NULL, updated_at = now()
     WHERE tenant_id = $1 AND campaign_id = $2 AND contact_id = ANY ($3::uuid[]) AND status = 'PENDING'`,
    [tenantId, campaignId, contactIds, reason],
  );
}

/** Due contacts the dialer put off: each waits, PENDING, until the moment it may be dialled, and says why. */
export async function postponeContacts(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  postponed: { contactId: string; until: Date; reason: string }[],
): Promise<void> {
  if (postponed.length === 0) return;
  await db.query(
    `UPDATE campaign_contacts cc SET next_attempt_at = p.until, wait_reason = p.reason, updated_at = now()
     FROM unnest($3::uuid[], $4::timestamptz[], $5::text[]) AS p(contact_id, until, reason)
     WHERE cc.tenant_id = $1 AND cc.campaign_id = $2 AND cc.contact_id = p.contact_id AND cc.status = 'PENDING'`,
    [tenantId, campaignId, postponed.map((p) => p.contactId), postponed.map((p) => p.until), postponed.map((p) => p.reason)],
  );
}

/** The campaign's PENDING contacts by why they wait (null: due, or waiting for a redial), with the earliest next attempt of each. */
export async function pendingByWaitReason(
  db: Queryable,
  tenantId: string,
  campaignId: string,
): Promise<{ wait_reason: string | null; n: number; first: Date | null }[]> {
  const { rows } = await db.query<{ wait_reason: string | null; n: number; first: Date | null }>(
    `SELECT wait_reason, count(*)::int AS n, min(next_attempt_at) AS first FROM campaign_contacts
     WHERE tenant_id = $1 AND campaign_id = $2 AND status = 'PENDING' GROUP BY wait_reason`,
    [tenantId, campaignId],
  );
  return rows;
}

/** Counts the attempt before anything is dialled: a crash after this can lose an attempt, never repeat one. */
export async function markDialling(
  db: Queryable,
  tenantId: string,
  campaignId: string,
  claims: { contact_id: string; call_id: string }[],
  maxAttempts: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE campaign_contacts cc SET status = 'IN_PROGRESS', attempts = cc.attempts + 1, last_call_id = c.call_id, wait_reason = NULL, updated_at = now()
     FROM unnest($3::uuid[], $4::uuid[]) AS c(contact_id, call_id)
     WHERE cc.tenant_id = $1 AND cc.campaign_id = $2 AND cc.contact_id = c.contact_id AND cc.status = 'PENDING' AND cc.attempts < $5`,
    [tenantId, campaignId, claims.map((c) => c.contact_id), claims.map((c) => c.call_id), maxAttempts],
  );
  return rowCount;
}

/** A contact's state after one of its attempts ended. */
export interface AttemptResult {
  campaignId: string;
  contactId: string;
  callId: string;
  status: string;
  outcome: string;
  nextAttemptAt: Date | null;
}

/** Records ended attempts on their contacts, in one statement; only the attempt a contact is waiting for counts. */
export async function recordAttempts(db: Queryable, tenantId: string, results: AttemptResult[]): Promise<void> {
  if (results.length === 0) return;
  await db.query(
    `UPDATE campaign_contacts cc SET status = r.status, last_outcome = r.outcome, next_attempt_at = r.next_attempt_at, updated_at = now()
     FROM jsonb_to_recordset($2::jsonb) AS r (campaign_id uuid, contact_id uuid, call_id uuid, status text, outcome text, next_attempt_at timestamptz)
     WHERE cc.tenant_id = $1 AND cc.campaign_id = r.campaign_id AND cc.contact_id = r.contact_id AND cc.last_call_id = r.call_id
       AND cc.status = 'IN_PROGRESS'`,
    [
      tenantId,
      JSON.stringify(
        results.map((result) => ({
          campaign_id: result.campaignId,
          contact_id: result.contactId,
          call_id: result.callId,
          status: result.status,
          outcome: result.outcome,
          next_attempt_at: result.nextAttemptAt,
        })),
      ),
    ],
  );
}

export interface FollowUpFacts {
  post_call_messages: string | null;
  /** The call settled its contact: its last attempt, with a final status. */
  settled: boolean;
  contact: Awaited<ReturnType<typeof campaignContact>>;
}

/** For each campaign call (in order): its campaign's postCallMessages, whether it settled its contact, and the contact. */
export async function followUpFacts(
  db: Queryable,
  tenantId: string,
  calls: { id: string; campaign_id: string; contact_id: string }[],
): Promise<FollowUpFacts[]> {
  const { rows } = await db.query<{
    call_id: string;
    post_call_messages: string | null;
    settled: boolean;
    phone_number: string | null;
    name: string | null;
    email: string | null;
    metadata: Record<string, unknown> | null;
    pre_dial_variables: Record<string, string> | null;
  }>(
    `SELECT x.call_id, c.post_call_messages, coalesce(cc.last_call_id = x.call_id AND cc.status NOT IN ('PENDING', 'IN_PROGRESS'), false) AS settled,
            cc.phone_number, cc.name, cc.email, cc.metadata, cc.pre_dial_variables
     FROM unnest($2::uuid[], $3::uuid[], $4::uuid[]) AS x (call_id, campaign_id, contact_id)
     LEFT JOIN campaigns c ON c.tenant_id = $1 AND c.id = x.campaign_id
     LEFT JOIN campaign_contacts cc ON cc.tenant_id = $1 AND cc.campaign_id = x.campaign_id AND cc.contact_id = x.contact_id`,
    [tenantId, calls.map((call) => call.id), calls.map((call) => call.campaign_id), calls.map((call) => call.contact_id)],
  );
  const byCall = new Map(rows.map((row) => [row.call_id, row]));
  return calls.map((call) => {
    const row = byCall.get(call.id);
    const { phone_number, name, email, metadata, pre_dial_variables } = row ?? {};
    return {
      post_call_messages: row?.post_call_messages ?? null,
      settled: row?.settled ?? false,
      contact: phone_number
        ? {
            phone_number,
            name: name ?? null,
            email: email ?? null,
            metadata: metadata ?? {},
            pre_dial_variables: pre_dial_variables ?? null,
          }
        : undefined,
    };
  });
}

export async function completeFinishedCampaigns(db: Queryable, now: Date): Promise<CampaignRow[]> {
  const { rows } = await db.query<CampaignRow>(
    // Two NOT EXISTS, one per partial index (due, live): never a scan of the campaign's contacts.
    `UPDATE campaigns c SET status = 'COMPLETED', completed_at = $1, status_reason = NULL, updated_at = now()
     WHERE c.status = 'RUNNING'
       AND NOT EXISTS (SELECT 1 FROM campaign_contacts cc WHERE cc.campaign_id = c.id AND cc.status = 'PENDING')
       AND NOT EXISTS (SELECT 1 FROM campaign_contacts cc WHERE cc.campaign_id = c.id AND cc.status = 'IN_PROGRESS')
     RETURNING c.*`,
    [now],
  );
  return rows;
}

export async function pauseRunning(db: Queryable, tenantId: string, reason: string): Promise<CampaignRow[]> {
  const { rows } = await db.query<CampaignRow>(
    "UPDATE campaigns SET status = 'PAUSED', status_reason = $2, updated_at = now() WHERE tenant_id = $1 AND status = 'RUNNING' RETURNING *",
    [tenantId, reason],
  );
  return rows;
}

/**
 * Takes up to `wanted` dials of a voice number and counts them on its local `day`: within its pace,
 * `perSecond` (a virtual-time bucket shared by every worker: at most one second of burst), and
 * `dailyCap` (Infinity: none). Returns how many were granted. The pace row is locked first, and
 * every dial from the number passes here: the day's count read under that lock holds every other
 * claim's dials, so two campaigns sharing the number never pass its cap together.
 */
export async function takeDials(
  db: Queryable,
  tenantId: string,
  numberId: string,
  wanted: number,
  { now, perSecond, day, dailyCap }: { now: Date; perSecond: number; day: string; dailyCap: number },
): Promise<number> {
  const { rows } = await db.query<{ next_dial_at: Date }>(
    `INSERT INTO dial_pace (tenant_id, voice_number_id, next_dial_at) VALUES ($1, $2, $3::timestamptz - interval '1 second')
     ON CONFLICT (tenant_id, voice_number_id) DO UPDATE SET next_dial_at = greatest(dial_pace.next_dial_at, $3::timestamptz - interval '1 second')
     RETURNING next_dial_at`,
    [tenantId, numberId, now],
  );
  const from = rows[0]!.next_dial_at.getTime();
  const paced = Math.min(wanted, Math.max(0, Math.floor(((now.getTime() - from) * perSecond) / 1000)));
  const dialledToday =
    paced > 0 && dailyCap !== Number.POSITIVE_INFINITY ? ((await dialsOnDay(db, tenantId, [numberId], day)).get(numberId) ?? 0) : 0;
  const granted = Math.min(paced, Math.max(0, dailyCap - dialledToday));
  if (granted > 0) {
    await db.query('UPDATE dial_pace SET next_dial_at = $3 WHERE tenant_id = $1 AND voice_number_id = $2', [
      tenantId,
      numberId,
      new Date(from + (granted * 1000) / perSecond),
    ]);
    // Counted with or without a cap, so a cap set during the day starts from that day's dials.
    await db.query(
      `INSERT INTO dial_counts (tenant_id, voice_number_id, day, dials) VALUES ($1, $2, $3::date, $4)
       ON CONFLICT (tenant_id, voice_number_id, day) DO UPDATE SET dials = dial_counts.dials + $4`,
      [tenantId, numberId, day, granted],
    );
  }
  return granted;
}

/** Dials of each number on a local day (numbers without any are absent). */
export async function dialsOnDay(db: Queryable, tenantId: string, numberIds: string[], day: string): Promise<Map<string, number>> {
  const { rows } = await db.query<{ voice_number_id: string; dials: number }>(
    'SELECT voice_number_id, dials FROM dial_counts WHERE tenant_id = $1 AND voice_number_id = ANY ($2::uuid[]) AND day = $3::date',
    [tenantId, numberIds, day],
  );
  return new Map(rows.map((row) => [row.voice_number_id, row.dials]));
}

/** The campaign's contacts per agent version (an experiment's arms; null: the agent as it is). */
export async function contactsPerVersion(db: Queryable, tenantId: string, campaignId: string): Promise<Map<number | null, number>> {
  const { rows } = await db.query<{ agent_version: number | null; n: number }>(
    'SELECT agent_version, count(*)::int AS n FROM campaign_contacts WHERE tenant_id = $1 AND campaign_id = $2 GROUP BY agent_version',
    [tenantId, campaignId],
  );
  return new Map(rows.map((row) => [row.agent_version, row.n]));
}
