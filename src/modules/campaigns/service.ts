import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { onUniqueViolation } from '../../platform/db.ts';
import { AppError, appError } from '../../platform/errors.ts';
import { refusePrivateUrl } from '../../platform/safe-fetch.ts';
import { newId } from '../../platform/ids.ts';
import type { Page } from '../../platform/pagination.ts';
import * as agents from '../agents/service.ts';
import type * as calls from '../calls/service.ts';
import * as callsOf from '../calls/service.ts';
import { callerIdPool, localDay } from './caller-ids.ts';
import { armOf } from './experiment.ts';
import * as contacts from '../contacts/service.ts';
import * as events from '../events/service.ts';
import * as identity from '../identity/service.ts';
import { DateTime } from 'luxon';
import * as compliance from '../compliance/service.ts';
import {
  isInsideCallWindow,
  minutesOfDay,
  nextAttemptAt as nextAttemptAfter,
  nextWindowOpening,
  startOfNextLocalDay,
  windowOf,
} from './call-window.ts';
import * as repo from './repo.ts';
import { rehearseDialling as rehearseContacts } from './rehearsal.ts';
import { resolveTimeZone, unknownTimeZone } from '../../platform/time-zones.ts';
import { telephonyProvider, VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
import type {
  AnsweringMachine,
  Campaign,
  CampaignContact,
  CampaignStats,
  CallerIdStats,
  CampaignStatus,
  CampaignWaiting,
  CreateCampaignBody,
  Experiment,
  RetryOutcome,
  UpdateCampaignBody,
} from './schemas.ts';
import { RETRY_OUTCOMES } from './schemas.ts';
import { isoOrNull } from '../../platform/clock.ts';

export const DEFAULTS = {
  callWindowStart: '09:00',
  callWindowEnd: '18:00',
  callDays: [1, 2, 3, 4, 5],
  dialTimeout: 30,
  maxAttempts: 3,
  redialDelayMin: 60,
  maxConcurrentCalls: 5,
  // One follow-up per contact: the call that settles it, not every attempt.
  postCallMessages: 'FINAL_OUTCOME',
} as const;
export const MIN_LIST_CONTACTS = 2;
const DELETABLE: CampaignStatus[] = ['DRAFT', 'COMPLETED', 'CANCELLED'];

/** The campaign as the seed shapes it (what the update answers with). */
export const toCampaign = (row: repo.CampaignRow): Campaign => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  description: row.description,
  agentId: row.agent_id,
  voiceNumberId: row.voice_number_id,
  contactListId: row.contact_list_id,
  status: row.status,
  statusReason: row.status_reason,
  scheduledAt: isoOrNull(row.scheduled_at),
  timezone: row.timezone,
  callWindowStart: row.call_window_start,
  callWindowEnd: row.call_window_end,
  callDays: row.call_days,
  dialTimeout: row.dial_timeout,
  maxAttempts: row.max_attempts,
  redialDelayMin: row.redial_delay_min,
  maxConcurrentCalls: row.max_concurrent_calls,
  simulatorScript: row.simulator_script,
  answeringMachine: row.answering_machine,
  metadata: row.metadata,
  retryRules: row.retry_rules,
  postCallMessages: row.post_call_messages,
  preDialWebhook: row.pre_dial_webhook,
  voiceNumberIds: callerIdPool(row),
  callerIdDailyCap: row.caller_id_daily_cap,
  agentVersion: row.agent_version ?? null,
  experiment: row.experiment ?? null,
  startedAt: isoOrNull(row.started_at),
  completedAt: isoOrNull(row.completed_at),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** The fields the seed fixes for an update's answer; the rest of the record is shown by GET. */
const OUTREACH_FIELDS = [
  'retryRules',
  'postCallMessages',
  'preDialWebhook',
  'voiceNumberIds',
  'callerIdDailyCap',
  'agentVersion',
  'experiment',
] as const;
const withoutOutreachFields = (campaign: Campaign): Campaign => {
  const shown = { ...campaign };
  for (const field of OUTREACH_FIELDS) delete shown[field];
  return shown;
};

const campaignNotFound = () => appError('NOT_FOUND', { what: 'Campaign' });
const nameTaken = (name: string) => appError('CAMPAIGN_NAME_TAKEN', { name });

/** The rules of seed §2.4 and §8 that a schema cannot say, on the campaign as it would be after the change. */
async function checkReferences(
  ctx: TenantCtx,
  merged: {
    callWindowStart: string;
    callWindowEnd: string;
    voiceNumberId?: string | null;
    answeringMachine?: AnsweringMachine | null;
    agentId?: string | null;
    agentVersion?: number | null;
    experiment?: Experiment | null;
  },
  input: UpdateCampaignBody,
) {
  const { callWindowStart: start, callWindowEnd: end } = merged;
  if (minutesOfDay(start) >= minutesOfDay(end)) {
    const message = `callWindowStart (${start}) must be before callWindowEnd (${end})`;
    throw appError('VALIDATION_FAILED.callWindow', { start, end }, [{ path: '/callWindowStart', message }]);
  }
  if (input.agentId) await agents.requireAgent(ctx, input.agentId);
  if (input.voiceNumberId) await agents.requireVoiceNumber(ctx, input.voiceNumberId);
  for (const numberId of input.voiceNumberIds ?? []) await agents.requireVoiceNumber(ctx, numberId);
  if (input.preDialWebhook) await checkPreDialUrl(ctx, input.preDialWebhook.url);
  if (input.contactListId) await requireDiallableList(ctx, input.contactListId);
  if (merged.answeringMachine) await checkAnsweringMachine(ctx, merged.answeringMachine, merged.voiceNumberId);
  if (input.agentId !== undefined || input.agentVersion !== undefined || input.experiment !== undefined) await checkVersions(ctx, merged);
}

/**
 * A pinned version, or an experiment's arms, are published versions of the campaign's agent:
 * one or the other, each arm a different version (docs/decisions/0058-agent-versions.md).
 */
async function checkVersions(
  ctx: TenantCtx,
  { agentId, agentVersion, experiment }: { agentId?: string | null; agentVersion?: number | null; experiment?: Experiment | null },
) {
  const refuse = (problem: string, path: string) => {
    throw appError('VALIDATION_FAILED.experiment', { problem }, [{ path, message: problem }]);
  };
  if (agentVersion != null && experiment)
    refuse('A campaign pins one agentVersion or runs an experiment between versions, not both; set the other to null.', '/experiment');
  const field = experiment ? '/experiment' : '/agentVersion';
  if ((agentVersion != null || experiment) && !agentId) refuse('A version is a version of the campaign agent: set agentId too.', field);
  if (!agentId) return;
  const versions = experiment ? experiment.arms.map((arm) => arm.version) : agentVersion != null ? [agentVersion] : [];
  const repeated = versions.findIndex((version, index) => versions.indexOf(version) !== index);
  if (repeated !== -1)
    refuse(
      `Each arm of an experiment is a different version; version ${versions[repeated]} is in two arms.`,
      `/experiment/arms/${repeated}/version`,
    );
  await agents.assertVersionsExist(ctx, agentId, versions, (index) => (experiment ? `/experiment/arms/${index}/version` : '/agentVersion'));
}

/** A pre-dial webhook is https (http only where private URLs are allowed, for local testing) and never a private address. */
async function checkPreDialUrl(ctx: TenantCtx, url: string) {
  const allowPrivate = ctx.config.allowPrivateUrls;
  const protocol = new URL(url).protocol;
  if (protocol !== 'https:' && !(allowPrivate && protocol === 'http:')) {
    const message = 'preDialWebhook.url must be an https URL';
    throw appError('VALIDATION_FAILED', { subject: 'preDialWebhook.url', problem: 'must be an https URL' }, [
      { path: '/preDialWebhook/url', message },
    ]);
  }
  await refusePrivateUrl(url, 'preDialWebhook/url', { allowPrivate });
}

/** The outreach settings as stored: the pre-dial webhook with its defaults, the pool's first number the primary when none was named. */
function outreachValues(input: UpdateCampaignBody, currentPrimary: string | null | undefined) {
  return {
    ...(input.preDialWebhook
      ? {
          preDialWebhook: {
            url: input.preDialWebhook.url,
            timeoutMs: input.preDialWebhook.timeoutMs ?? 2000,
            onError: input.preDialWebhook.onError ?? 'CALL',
          },
        }
      : {}),
    ...(input.voiceNumberIds && input.voiceNumberId === undefined && !currentPrimary ? { voiceNumberId: input.voiceNumberIds[0] } : {}),
  };
}

/** A voicemail needs its message, and only a voicemail takes one; detection needs a provider that can tell. */
async function checkAnsweringMachine(ctx: TenantCtx, setting: AnsweringMachine, voiceNumberId: string | null | undefined) {
  const refuse = (problem: string, field: string) => {
    throw appError('VALIDATION_FAILED.answeringMachine', { problem }, [{ path: `/answeringMachine/${field}`, message: problem }]);
  };
  const onMachine = setting.onMachine ?? 'HANG_UP_AND_RETRY';
  if (onMachine === 'LEAVE_VOICEMAIL' && !setting.voicemailMessage?.trim()) {
    refuse('answeringMachine.voicemailMessage is required with LEAVE_VOICEMAIL: write what to say after the beep.', 'voicemailMessage');
  }
  if (onMachine !== 'LEAVE_VOICEMAIL' && setting.voicemailMessage !== undefined) {
    refuse(
      'answeringMachine.voicemailMessage is left only with onMachine LEAVE_VOICEMAIL; set that, or remove the message.',
      'voicemailMessage',
    );
  }
  agents.checkSpokenTemplate('answeringMachine.voicemailMessage', setting.voicemailMessage, '/answeringMachine/voicemailMessage');
  const number = setting.detect && voiceNumberId ? await agents.findVoiceNumber(ctx, voiceNumberId) : undefined;
  if (number && !telephonyProvider(number.provider).telephony.answeringMachineDetection) {
    const able = VOICE_PROVIDER_NAMES.filter((name) => telephonyProvider(name).telephony.answeringMachineDetection).join(', ');
    refuse(`${number.provider} numbers cannot tell who answers; answering-machine detection needs a number of ${able}.`, 'detect');
  }
}

/** The setting as stored: a machine is hung up on unless the campaign says otherwise. */
const withMachineDefaults = (setting: AnsweringMachine | null | undefined) =>
  setting && { ...setting, onMachine: setting.onMachine ?? 'HANG_UP_AND_RETRY' };

async function requireDiallableList(ctx: TenantCtx, listId: string) {
  const list = await contacts.getList(ctx, listId);
  if (list.contactCount < MIN_LIST_CONTACTS) {
    throw appError('LIST_TOO_SMALL', { min: MIN_LIST_CONTACTS, list: list.name, count: list.contactCount }, [
      { path: '/contactListId', message: `at least ${MIN_LIST_CONTACTS} contacts needed` },
    ]);
  }
}

/** The campaign with its compliance choices, as reading it shows it. */
const withCompliance = (row: repo.CampaignRow): Campaign => ({
  ...toCampaign(row),
  windowTimeZone: row.window_time_zone,
  callingRules: row.calling_rules,
  requireConsent: row.require_consent,
});

/** The IANA name of the zone given, also when a city named it; a name that names no one zone is refused. */
function zoneOrRefuse(typed: string): string {
  const zone = resolveTimeZone(typed);
  if (!zone) throw unknownTimeZone(typed);
  return zone;
}

export async function createCampaign(ctx: TenantCtx, input: CreateCampaignBody): Promise<Campaign> {
  const timezone = zoneOrRefuse(input.timezone ?? (await identity.tenantTimezone(ctx)) ?? 'UTC');
  // A compliance officer's settings are the defaults of every new campaign.
  const settings = await compliance.dialSettings(ctx);
  const values = {
    ...DEFAULTS,
    windowTimeZone: settings.windowTimeZone,
    callingRules: settings.callingRules,
    requireConsent: settings.requireConsent,
    ...input,
    ...outreachValues(input, input.voiceNumberId),
    timezone,
    answeringMachine: withMachineDefaults(input.answeringMachine),
  };
  await checkReferences(ctx, values, input);
  const status = input.scheduledAt ? 'SCHEDULED' : 'DRAFT';
  const row = await onUniqueViolation(repo.insertCampaign(ctx.db, ctx.tenantId, newId(), { ...values, status }), () =>
    nameTaken(input.name),
  );
  return toCampaign(row);
}

/** Seed §4.3: only a DRAFT campaign may be changed; setting scheduledAt moves it to SCHEDULED. */
export async function updateCampaign(ctx: TenantCtx, id: string, input: UpdateCampaignBody): Promise<Campaign> {
  const current = await repo.findCampaign(ctx.db, ctx.tenantId, id);
  if (!current) throw campaignNotFound();
  if (current.status !== 'DRAFT') {
    throw appError('CAMPAIGN_NOT_DRAFT', { status: current.status });
  }
  const timezone = input.timezone === undefined ? current.timezone : zoneOrRefuse(input.timezone);
  await checkReferences(
    ctx,
    {
      callWindowStart: input.callWindowStart ?? current.call_window_start,
      callWindowEnd: input.callWindowEnd ?? current.call_window_end,
      voiceNumberId: input.voiceNumberId === undefined ? current.voice_number_id : input.voiceNumberId,
      answeringMachine: input.answeringMachine === undefined ? current.answering_machine : input.answeringMachine,
      agentId: input.agentId === undefined ? current.agent_id : input.agentId,
      agentVersion: input.agentVersion === undefined ? current.agent_version : input.agentVersion,
      experiment: input.experiment === undefined ? current.experiment : input.experiment,
    },
    input,
  );
  const change = {
    ...input,
    ...(input.timezone === undefined ? {} : { timezone }),
    ...(input.answeringMachine !== undefined ? { answeringMachine: withMachineDefaults(input.answeringMachine) } : {}),
    ...outreachValues(input, current.voice_number_id),
    ...(input.scheduledAt ? { status: 'SCHEDULED' as const } : {}),
  };
  const row = await onUniqueViolation(repo.updateCampaign(ctx.db, ctx.tenantId, id, change, ['DRAFT']), () => nameTaken(input.name ?? ''));
  if (!row) throw appError('CAMPAIGN_NOT_DRAFT.changed');
  return withoutOutreachFields(toCampaign(row));
}

export async function getCampaign(ctx: TenantCtx, id: string): Promise<Campaign> {
  const row = await repo.findCampaign(ctx.db, ctx.tenantId, id);
  if (!row) throw campaignNotFound();
  const stats = await campaignStats(ctx, id);
  return { ...withCompliance(row), stats, waiting: await waitingOf(ctx, row, stats) };
}

const hhmmIn = (at: Date, zone: string) => DateTime.fromJSDate(at, { zone }).toFormat('HH:mm');

const contactCount = (n: number) => (n === 1 ? '1 contact' : `${n} contacts`);

/**
 * Why a RUNNING campaign cannot dial anyone right now, or null: its window is closed, or every
 * contact left waits (for its own window, a frequency cap, or its redial delay), none live.
 */
async function waitingOf(ctx: TenantCtx, row: repo.CampaignRow, stats: CampaignStats): Promise<CampaignWaiting | null> {
  if (row.status !== 'RUNNING' || stats.inProgress > 0 || stats.pending === 0) return null;
  const now = ctx.clock.now();
  const zone = row.timezone;
  if (row.window_time_zone === 'CAMPAIGN' && !isInsideCallWindow(now, windowOf(row))) {
    const opens = nextWindowOpening(now, windowOf(row));
    return {
      reason: 'outside_window',
      message: `waiting for the call window: opens ${opens ? `${hhmmIn(opens, zone)} ${zone}` : 'never'} for ${contactCount(stats.pending)}`,
      resumesAt: isoOrNull(opens),
      contacts: stats.pending,
    };
  }
  const groups = await repo.pendingByWaitReason(ctx.db, ctx.tenantId, row.id);
  // None pending any more: the dialer claimed them between the counts and this read.
  if (groups.length === 0 || groups.some((group) => !group.first || group.first <= now)) return null;
  const next = groups.reduce((a, b) => (a.first! <= b.first! ? a : b));
  const reason = (next.wait_reason ?? 'redial_delay') as CampaignWaiting['reason'];
  const at = `${hhmmIn(next.first!, zone)} ${zone}`;
  const what = {
    outside_window: `waiting for the contacts' call windows: the next opens ${at}`,
    frequency_cap: `waiting for the frequency cap: the next call is allowed at ${at}`,
    in_call: `waiting for another call to the same person to end: checked again at ${at}`,
    redial_delay: `waiting for the redial delay: the next attempt is at ${at}`,
  }[reason];
  return { reason, message: `${what} for ${contactCount(next.n)}`, resumesAt: next.first!.toISOString(), contacts: next.n };
}

export async function campaignStats(ctx: TenantCtx, id: string): Promise<CampaignStats> {
  return toStats((await repo.campaignStats(ctx.db, ctx.tenantId, [id])).get(id)!);
}

function toStats(counts: Record<string, number>): CampaignStats {
  const n = (status: string) => counts[status] ?? 0;
  return {
    total: Object.values(counts).reduce((sum, count) => sum + count, 0),
    pending: n('PENDING') + n('RETRYING'),
    retrying: n('RETRYING'),
    inProgress: n('IN_PROGRESS'),
    answered: n('ANSWERED'),
    unanswered: n('UNANSWERED'),
    busy: n('BUSY'),
    failed: n('FAILED'),
    skipped: n('SKIPPED'),
  };
}

export async function listCampaigns(ctx: TenantCtx, filter: { status?: string; agentId?: string }, page: Page) {
  const { rows, total } = await repo.listCampaigns(ctx.db, ctx.tenantId, filter, page);
  const stats = await repo.campaignStats(
    ctx.db,
    ctx.tenantId,
    rows.map((row) => row.id),
  );
  return { data: rows.map((row) => ({ ...withCompliance(row), stats: toStats(stats.get(row.id)!) })), total };
}

export async function listCampaignContacts(ctx: TenantCtx, id: string, page: Page): Promise<{ data: CampaignContact[]; total: number }> {
  if (!(await repo.findCampaign(ctx.db, ctx.tenantId, id))) throw campaignNotFound();
  const { rows, total } = await repo.listCampaignContacts(ctx.db, ctx.tenantId, id, page);
  const data = rows.map((row) => ({
    contactId: row.contact_id,
    phoneNumber: row.phone_number,
    name: row.name,
    status: row.status as CampaignContact['status'],
    skipReason: row.skip_reason as CampaignContact['skipReason'],
    ...(row.status === 'PENDING' && row.wait_reason ? { waitReason: row.wait_reason as CampaignContact['waitReason'] } : {}),
    attempts: row.attempts,
    lastOutcome: row.last_outcome,
    lastCallId: row.last_call_id,
    nextAttemptAt: row.status === 'PENDING' ? isoOrNull(row.next_attempt_at) : null,
    // Shown for a campaign that pins a version or runs an experiment; the shape of the others' contacts is as it was.
    ...(row.agent_version === null ? {} : { agentVersion: row.agent_version }),
  }));
  return { data, total };
}

/** The records of the campaign's dial decisions, in chain order, as CSV or one JSON array (streamed). */
export const { ComplianceRecordList } = compliance;

export async function complianceRecords(ctx: TenantCtx, id: string, format: 'csv' | 'json'): Promise<AsyncGenerator<string>> {
  if (!(await repo.findCampaign(ctx.db, ctx.tenantId, id))) throw campaignNotFound();
  return format === 'csv' ? compliance.exportRecordsCsv(ctx, id) : compliance.exportRecordsJson(ctx, id);
}

export async function deleteCampaign(ctx: TenantCtx, id: string): Promise<void> {
  const row = await repo.findCampaign(ctx.db, ctx.tenantId, id);
  if (!row) throw campaignNotFound();
  if (!(await repo.deleteCampaign(ctx.db, ctx.tenantId, id, DELETABLE))) {
    throw appError('CAMPAIGN_NOT_DELETABLE', { status: row.status });
  }
}

/** Why a campaign cannot start now, as one sentence, or null when it can. */
export async function startProblem(ctx: TenantCtx, row: repo.CampaignRow): Promise<AppError | null> {
  const missing = (what: string, field: string) => appError('CAMPAIGN_NOT_READY', { what, field });
  if (!row.agent_id || !(await agents.agentExists(ctx, row.agent_id))) return missing('agent', 'agentId');
  if (!row.voice_number_id || !(await agents.voiceNumberExists(ctx, row.voice_number_id))) return missing('voice number', 'voiceNumberId');
  if (!row.contact_list_id) return missing('contact list', 'contactListId');
  try {
    await requireDiallableList(ctx, row.contact_list_id);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  const balance = await identity.walletBalance(ctx);
  if (!balance.amount.greaterThan(0)) {
    return appError('WALLET_EMPTY', { balance: balance.amount.toFixed(4), currency: balance.currency });
  }
  return null;
}

/** DRAFT or SCHEDULED → RUNNING: checks readiness and copies the list's contacts, in one transaction. */
export async function startCampaign(ctx: TenantCtx, id: string): Promise<void> {
  await withTransaction(ctx, async (txCtx) => {
    const row = await repo.findCampaign(txCtx.db, ctx.tenantId, id, true);
    if (!row) throw campaignNotFound();
    if (row.status !== 'DRAFT' && row.status !== 'SCHEDULED') throw appError('CAMPAIGN_NOT_STARTABLE', { status: row.status });
    const problem = await startProblem(txCtx, row);
    if (problem) throw problem;
    await beginDialling(txCtx, row);
  });
}

/** Copies the contacts and sets RUNNING; the caller holds the campaign row locked and checked it. */
export async function beginDialling(ctx: TenantCtx, row: repo.CampaignRow): Promise<void> {
  const now = ctx.clock.now();
  let position = 0;
  for await (const batch of contacts.contactsOfList(ctx, row.contact_list_id!)) {
    const snapshot = batch.map(({ id, phoneNumber, name, email, metadata, timezone }) => ({
      contactId: id,
      position: ++position,
      phoneNumber,
      name,
      email,
      metadata,
      timezone,
      // Each contact's version is fixed now, for all its attempts: its arm, or the pinned version.
      agentVersion: row.experiment ? armOf(row.experiment, row.id, id) : row.agent_version,
    }));
    await repo.insertCampaignContacts(ctx.db, ctx.tenantId, row.id, snapshot, now);
  }
  await changeStatus(ctx, row.id, [row.status], 'RUNNING');
}

/** Contract §9: `campaign.status_changed`, in the transaction of the change. */
export async function announceStatus(ctx: TenantCtx, row: repo.CampaignRow): Promise<void> {
  await events.emitEvent(
    ctx,
    'campaign.status_changed',
    { campaignId: row.id, name: row.name, status: row.status, statusReason: row.status_reason, changedAt: row.updated_at.toISOString() },
    row.agent_id,
  );
}

/** Moves a campaign still in one of `from` to `to` and announces it; undefined when it was not in `from`. Call inside a transaction. */
export async function changeStatus(
  ctx: TenantCtx,
  id: string,
  from: CampaignStatus[],
  to: CampaignStatus,
  reason?: string,
): Promise<repo.CampaignRow | undefined> {
  const row = await repo.setStatus(ctx.db, ctx.tenantId, id, from, to, { now: ctx.clock.now(), reason });
  if (row) await announceStatus(ctx, row);
  return row;
}

export async function pauseCampaign(ctx: TenantCtx, id: string): Promise<void> {
  await transition(ctx, id, ['RUNNING'], 'PAUSED', (status) => appError('CAMPAIGN_NOT_RUNNING', { status }));
}

export async function resumeCampaign(ctx: TenantCtx, id: string): Promise<void> {
  await withTransaction(ctx, async (txCtx) => {
    const row = await repo.findCampaign(txCtx.db, ctx.tenantId, id, true);
    if (!row) throw campaignNotFound();
    if (row.status !== 'PAUSED') throw appError('CAMPAIGN_NOT_PAUSED', { status: row.status });
    const balance = await identity.walletBalance(txCtx);
    if (!balance.amount.greaterThan(0)) {
      throw appError('WALLET_EMPTY.resume', { balance: balance.amount.toFixed(4), currency: balance.currency });
    }
    await changeStatus(txCtx, id, ['PAUSED'], 'RUNNING');
  });
}

export async function cancelCampaign(ctx: TenantCtx, id: string): Promise<void> {
  await transition(ctx, id, repo.UNFINISHED, 'CANCELLED', (status) => appError('CAMPAIGN_FINISHED', { status }));
}

async function transition(
  ctx: TenantCtx,
  id: string,
  from: CampaignStatus[],
  to: CampaignStatus,
  refusal: (status: CampaignStatus) => AppError,
) {
  await withTransaction(ctx, async (txCtx) => {
    if (await changeStatus(txCtx, id, from, to)) return;
    const current = await repo.findCampaign(txCtx.db, ctx.tenantId, id);
    if (!current) throw campaignNotFound();
    throw refusal(current.status);
  });
}

/** The campaign's settings without its stats (what a call of it needs), or undefined. */
export async function findCampaign(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, id: string): Promise<Campaign | undefined> {
  const row = await repo.findCampaign(ctx.db, ctx.tenantId, id);
  return row && toCampaign(row);
}

/**
 * Who a call was with: for a campaign's call, the contact it dialled as the campaign copied it; for
 * an incoming call linked to a contact, that contact as it is now. Undefined for neither (or a
 * contact deleted since).
 */
export async function contactOfCall(
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  call: Pick<calls.CallRow, 'campaign_id' | 'contact_id'>,
): Promise<
  { name: string | null; email: string | null; metadata: Record<string, unknown>; variables?: Record<string, string> } | undefined
> {
  if (!call.contact_id) return undefined;
  if (call.campaign_id) {
    return withVariables(await repo.campaignContact(ctx.db, ctx.tenantId, call.campaign_id, call.contact_id));
  }
  return contacts.findContactById(ctx, call.contact_id);
}

/** A campaign's copy of a contact, with the variables its pre-dial webhook gave the call. */
const withVariables = (contact: Awaited<ReturnType<typeof repo.campaignContact>>) =>
  contact && { ...contact, variables: contact.pre_dial_variables ?? {} };

type CallContact = NonNullable<Awaited<ReturnType<typeof contactOfCall>>>;

/**
 * What following up calls needs from their campaigns, for several calls at once (one statement for
 * the campaign calls): whether each call's post-call messages go out under its campaign's
 * postCallMessages (always for a call outside a campaign and under EVERY_ATTEMPT; under
 * FINAL_OUTCOME only for the call that settled its contact: its last attempt, with a final status),
 * and its contact.
 */
export async function followUpsOf(
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  calls: Pick<calls.CallRow, 'id' | 'campaign_id' | 'contact_id'>[],
): Promise<{ sends: boolean; contact: CallContact | undefined }[]> {
  const inCampaigns = calls.flatMap((call) =>
    call.campaign_id && call.contact_id ? [{ id: call.id, campaign_id: call.campaign_id, contact_id: call.contact_id }] : [],
  );
  const facts = new Map((await repo.followUpFacts(ctx.db, ctx.tenantId, inCampaigns)).map((fact, index) => [inCampaigns[index]!.id, fact]));
  return Promise.all(
    calls.map(async (call) => {
      const fact = facts.get(call.id);
      // Outside a campaign (an inbound or a test call): the contact the call names, if any.
      if (!fact) return { sends: true, contact: await contactOfCall(ctx, call) };
      return { sends: fact.post_call_messages !== 'FINAL_OUTCOME' || fact.settled, contact: withVariables(fact.contact) };
    }),
  );
}

/** Each number of the campaign's pool with its calls, answer rate and today's dials. */
export async function callerIdStats(ctx: TenantCtx, id: string): Promise<CallerIdStats[]> {
  const row = await repo.findCampaign(ctx.db, ctx.tenantId, id);
  if (!row) throw campaignNotFound();
  const pool = callerIdPool(row);
  const [placed, today, numbers] = await Promise.all([
    callsOf.callsPerNumber(ctx, id),
    repo.dialsOnDay(ctx.db, ctx.tenantId, pool, localDay(ctx.clock.now(), row.timezone)),
    Promise.all(pool.map((numberId) => agents.findVoiceNumber(ctx, numberId))),
  ]);
  return pool.flatMap((numberId, index) => {
    const number = numbers[index];
    if (!number) return [];
    const { attempts = 0, answered = 0 } = placed.get(numberId) ?? {};
    return [
      {
        voiceNumberId: numberId,
        phoneNumber: number.phoneNumber,
        primary: numberId === row.voice_number_id,
        attempts,
        answered,
        answerRate: attempts === 0 ? null : Math.round((answered / attempts) * 10000) / 10000,
        dialledToday: today.get(numberId) ?? 0,
        dailyCap: row.caller_id_daily_cap,
      },
    ];
  });
}

/** The campaign's contacts per agent version it calls them with (its experiment's arms), for analytics. */
export const contactsPerVersion = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, id: string) =>
  repo.contactsPerVersion(ctx.db, ctx.tenantId, id);

/** Seed §4.4: a list assigned to an unfinished campaign cannot be deleted (wired into contacts). */
export const campaignNames = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, ids: string[]) => repo.campaignNamesById(ctx.db, ctx.tenantId, ids);
export const listInUse = (ctx: TenantCtx, listId: string) => repo.unfinishedCampaignUses(ctx.db, ctx.tenantId, 'contact_list_id', listId);
export const agentInUse = (ctx: TenantCtx, agentId: string) => repo.unfinishedCampaignUses(ctx.db, ctx.tenantId, 'agent_id', agentId);
export const voiceNumberInUse = (ctx: TenantCtx, numberId: string) =>
  repo.unfinishedCampaignUses(ctx.db, ctx.tenantId, 'voice_number_id', numberId);

/**
 * After a tenant's calls ended (inside the transaction that ends them), each campaign attempt's
 * result, all in one statement: ANSWERED, a permanent failure (a fax among them), a voicemail left
 * or the last allowed attempt is final; otherwise the contact waits `redialDelayMin` from the end
 * of this attempt, moved to the next window opening when that falls outside the window. A wallet
 * a call emptied pauses the tenant's running campaigns.
 */
export async function afterCallsEnded(ctx: TenantCtx, ended: calls.EndedCall[], cache: Map<string, unknown>): Promise<void> {
  for (const { walletEmptied } of ended) if (walletEmptied) await pauseForEmptyWallet(ctx, walletEmptied);
  const results: repo.AttemptResult[] = [];
  for (const { call } of ended) {
    if (!call.campaign_id || !call.contact_id || !call.outcome) continue;
    // The calls ended in one transaction read each campaign's settings once, not once per call.
    const key = `campaign:${call.campaign_id}`;
    const campaign = cache.has(key)
      ? (cache.get(key) as repo.CampaignRow | undefined)
      : await repo.findCampaign(ctx.db, ctx.tenantId, call.campaign_id);
    cache.set(key, campaign);
    if (!campaign) continue;
    // A voicemail left reached the contact as far as a machine lets one: done, though not answered.
    const final =
      call.outcome === 'ANSWERED' ||
      call.permanent_failure ||
      call.end_reason === 'voicemail_left' ||
      call.attempt >= campaign.max_attempts;
    const nextAttemptAt = final ? null : retryAt(campaign, call, call.ended_at ?? ctx.clock.now());
    results.push({
      campaignId: call.campaign_id,
      contactId: call.contact_id,
      callId: call.id,
      status: final || !nextAttemptAt ? call.outcome : 'PENDING',
      outcome: call.outcome,
      nextAttemptAt,
    });
  }
  await repo.recordAttempts(ctx.db, ctx.tenantId, results);
}

/** Which retry rule an ended attempt falls under: a machine hung up on is VOICEMAIL, else its outcome. */
const retryOutcomeOf = (call: Pick<calls.CallRow, 'outcome' | 'end_reason'>): RetryOutcome | undefined =>
  call.end_reason === 'answering_machine'
    ? 'VOICEMAIL'
    : (RETRY_OUTCOMES as readonly string[]).includes(call.outcome ?? '')
      ? (call.outcome as RetryOutcome)
      : undefined;

/**
 * When a contact whose attempt ended at `endedAt` may be dialled again, moved to the window's next
 * opening; null: never (a `never` rule, or a window that does not open again). The campaign's
 * retryRules decide for the outcomes they name, redialDelayMin for the rest.
 */
export function retryAt(
  campaign: Pick<repo.CampaignRow, 'retry_rules' | 'redial_delay_min' | 'timezone' | 'call_window_start' | 'call_window_end' | 'call_days'>,
  call: Pick<calls.CallRow, 'outcome' | 'end_reason'>,
  endedAt: Date,
): Date | null {
  const outcome = retryOutcomeOf(call);
  const rule = outcome && campaign.retry_rules?.[outcome];
  const window = windowOf(campaign);
  if (!rule) return nextAttemptAfter(endedAt, campaign.redial_delay_min, window);
  if ('never' in rule) return null;
  if ('afterMinutes' in rule) return nextAttemptAfter(endedAt, rule.afterMinutes, window);
  return nextWindowOpening(startOfNextLocalDay(endedAt, campaign.timezone), window);
}

/** A wallet that ran dry pauses the tenant's running campaigns and says why. */
async function pauseForEmptyWallet(ctx: TenantCtx, balance: { toFixed(digits: number): string }): Promise<void> {
  const paused = await repo.pauseRunning(
    ctx.db,
    ctx.tenantId,
    `Paused: the wallet balance is ${balance.toFixed(4)}; credit the wallet, then resume the campaign.`,
  );
  for (const row of paused) await announceStatus(ctx, row);
}

export { VERDICT_SENTENCES, type RehearsedContact } from './rehearsal.ts';

/**
 * A rehearsal's campaign, any status (a rehearsal reads only): 404 for another tenant's, 409 without a list to rehearse over.
 */
export async function rehearsableCampaign(ctx: TenantCtx, id: string): Promise<repo.CampaignRow> {
  const row = await repo.findCampaign(ctx.db, ctx.tenantId, id);
  if (!row) throw campaignNotFound();
  if (!row.contact_list_id) throw appError('CAMPAIGN_NOT_READY', { what: 'contact list', field: 'contactListId' });
  return row;
}

/** The dialer's verdicts on a seeded sample of the campaign's list at `at`, nothing claimed or written. */
export async function rehearseDialling(ctx: TenantCtx, id: string, sample: number, at: Date) {
  const row = await rehearsableCampaign(ctx, id);
  return { campaign: toCampaign(row), contacts: await rehearseContacts(ctx, row, sample, at) };
}
