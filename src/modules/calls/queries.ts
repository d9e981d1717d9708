/**
 * What is read of calls: a call as the API shows it, the call log and a live view of one call, and
 * what other modules ask of the calls table (analytics' usage, campaigns' caps and answer rates).
 */
import { oncePer, perTurn } from '../../platform/batches.ts';
import { isoOrNull } from '../../platform/clock.ts';
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import type { Page } from '../../platform/pagination.ts';
import { dayEnd, dayStart } from '../../platform/schemas.ts';
import type { AnsweredBy } from '../../providers/types.ts';
import { NO_USAGE } from './rate-card.ts';
import * as repo from './repo.ts';
import type { Call, CallQuery, EndReason, TranscriptTurn } from './schemas.ts';

export type CallRow = repo.CallRow;

export const toCall = (row: repo.CallRow): Call => ({
  id: row.id,
  agentId: row.agent_id,
  agentVersion: row.agent_version ?? null,
  campaignId: row.campaign_id,
  contactId: row.contact_id,
  voiceNumberId: row.voice_number_id,
  direction: row.direction,
  fromNumber: row.from_number,
  toNumber: row.to_number,
  attempt: row.attempt,
  status: row.status,
  outcome: row.outcome as Call['outcome'],
  failureReason: row.failure_reason,
  startedAt: row.started_at.toISOString(),
  answeredAt: isoOrNull(row.answered_at),
  endedAt: isoOrNull(row.ended_at),
  durationSec: row.duration_sec,
  endReason: row.end_reason as EndReason | null,
  answeredBy: row.answered_by as AnsweredBy | null,
  transcript: row.transcript as Call['transcript'],
  outcomes: row.outcomes as Call['outcomes'],
  recordingUrl: row.recording_url,
  // Calls ended before tokens were counted by direction have the older, shorter usage.
  usage: row.usage && ({ ...NO_USAGE, ...row.usage } as Call['usage']),
  cost: row.cost as Call['cost'],
  createdAt: row.created_at.toISOString(),
});

export async function listCalls(ctx: TenantCtx, query: CallQuery, page: Page) {
  const from = query.from ? dayStart(query.from) : undefined;
  const to = query.to ? dayEnd(query.to) : undefined;
  if (from && to && from > to) throw appError('VALIDATION_FAILED.fromAfterTo', {}, [{ path: '/from', message: 'after to' }]);
  const { rows, total } = await repo.listCalls(ctx.db, ctx.tenantId, { ...query, from, to }, page);
  return { data: rows.map(toCall), total };
}

/** The stored call, for modules that act after it (messaging, analytics). */
export const findCallRow = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, id: string) => repo.findCall(ctx.db, ctx.tenantId, id);
/**
 * An ended call's row for the modules that follow it up (messaging, analytics, scorecards): one
 * statement for every call asked in the same turn, by whichever of them asks (a batch of call.ended
 * jobs runs them all at once).
 */
export const endedCallRow = oncePer((deps: Deps) => perTurn((tenantId, ids: string[]) => repo.findCalls(deps.db, tenantId, ids)));

/** How often a live view looks for new turns: a conversation's pace, at one light query per viewer. */
const LIVE_POLL_MS = 400;

export type LiveEvent =
  { type: 'turn'; turn: TranscriptTurn } | { type: 'status'; status: string; endReason: EndReason | null } | { type: 'ended'; call: Call };

/**
 * A call as it happens: every turn already said, then each new one, the status as it changes, and
 * the whole call once it has ended. Ends when the call does or `signal` aborts (the viewer left).
 * Works from any API process: it reads the call, whichever worker converses on it.
 */
export async function* followCall(ctx: TenantCtx, id: string, signal: AbortSignal): AsyncGenerator<LiveEvent> {
  let seen = 0;
  let status: string | undefined;
  while (!signal.aborted) {
    const state = await repo.liveState(ctx.db, ctx.tenantId, id, seen);
    if (!state) throw appError('NOT_FOUND', { what: 'Call' });
    for (const turn of state.new_turns) yield { type: 'turn', turn: turn as TranscriptTurn };
    seen = state.turns;
    if (state.status !== status) {
      status = state.status;
      yield { type: 'status', status, endReason: state.end_reason as EndReason | null };
    }
    if (status === 'ENDED') {
      yield { type: 'ended', call: await getCall(ctx, id) };
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, LIVE_POLL_MS);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}

export async function getCall(ctx: TenantCtx, id: string): Promise<Call> {
  const row = await repo.findCall(ctx.db, ctx.tenantId, id);
  if (!row) throw appError('NOT_FOUND', { what: 'Call' });
  return toCall(row);
}

/** A live call of any tenant by its provider's id: the media stream names only that, before it is verified. */
export const findCallByProviderId = (ctx: Omit<TenantCtx, 'tenantId'>, providerName: string, providerCallId: string) =>
  repo.findCallByProviderId(ctx.db, providerName, providerCallId);

/** Onboarding's "has tested a call", as an SQL condition on the tenant `$1`. */
export const hasFinishedCallCondition = repo.tenantHasEndedCall;

// Analytics reads call usage here: the calls table is this module's alone.
export type { AnswerLatencyRow, CallTrendRow, CallUsageRow } from './repo.ts';
export const usageByAgent = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, range: { from: Date; to: Date; agentId?: string }) =>
  repo.usageByAgent(ctx.db, ctx.tenantId, range);
export const answerLatency = (
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  range: { from: Date; to: Date; agentId?: string; campaignId?: string },
) => repo.answerLatency(ctx.db, ctx.tenantId, range);
export const callTrend = (
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  range: { from: Date; to: Date; agentId?: string },
  interval: 'day' | 'hour',
  timezone: string,
) => repo.callTrend(ctx.db, ctx.tenantId, range, interval, timezone);

/**
 * Holds `phoneNumbers` for this transaction's claim: call before reading `placedCalls`, so two
 * campaigns dialling the same person at once count each other's calls (its caps, one call at a time).
 */
export const lockCalledNumbers = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, phoneNumbers: string[]) =>
  repo.lockCalledNumbers(ctx.db, ctx.tenantId, phoneNumbers);

/**
 * The calls placed (or being placed) to these numbers since `since`, across the tenant's campaigns:
 * when each started (the frequency caps count these), and the numbers with a call not yet ended.
 */
export async function placedCalls(
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  phoneNumbers: string[],
  since: Date,
): Promise<{ times: Map<string, Date[]>; onCall: Set<string> }> {
  const times = new Map<string, Date[]>();
  const onCall = new Set<string>();
  for (const row of await repo.placedCallsSince(ctx.db, ctx.tenantId, phoneNumbers, since)) {
    const list = times.get(row.to_number) ?? [];
    list.push(row.started_at);
    times.set(row.to_number, list);
    if (row.live) onCall.add(row.to_number);
  }
  return { times, onCall };
}

export type { VersionTally } from './repo.ts';
/** A campaign's ended calls per agent version, for its experiment's arms (analytics). */
export const versionTallies = (
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  campaignId: string,
  success: { answered: boolean; types: string[] },
) => repo.versionTallies(ctx.db, ctx.tenantId, campaignId, success);

/** A campaign's calls per caller ID (placed, answered), for its pool's answer rates. */
export const callsPerNumber = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, campaignId: string) =>
  repo.callsPerNumber(ctx.db, ctx.tenantId, campaignId);
