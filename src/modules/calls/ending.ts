/**
 * Ending a call, once: its outcome, usage and cost, the wallet's debit, the modules listening to
 * call ends, `call.ended` and the `call.completed` webhook, all in the transaction that ends it.
 * A user's hang-up ends a call here too.
 */
import type { Decimal } from 'decimal.js';
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { CallOutcome } from '../../providers/types.ts';
import * as events from '../events/service.ts';
import * as identity from '../identity/service.ts';
import { costOf, NO_USAGE, rateCardOf, type CallUsage } from './rate-card.ts';
import * as repo from './repo.ts';
import type { EndReason } from './schemas.ts';
import { connect } from './provider-line.ts';
import { toCall } from './queries.ts';

/** What usage costs on the service's rate card, per component (a test chat is priced as a call is). */
export const priceUsage = (ctx: Pick<TenantCtx, 'config'>, usage: CallUsage) => costOf(usage, rateCardOf(ctx.config.rates));

export const CALL_ENDED = 'call.ended';
export interface CallEndedJob {
  tenantId: string;
  callId: string;
  /** How the call ended, for the operator's log line (absent from a job sent without it). */
  summary?: { outcome: string | null; durationSec: number | null; endReason: string | null; cost: string };
}

/** One readable line of the log for a call that ended: "Call … ended ANSWERED after 42 s (contact_hung_up), cost 0.0014". */
export function endedCallLine(job: CallEndedJob): string {
  const { callId, summary } = job;
  if (!summary) return `Call ${callId} ended`;
  const after = summary.outcome === 'ANSWERED' ? ` after ${summary.durationSec} s` : '';
  const why = summary.endReason ? ` (${summary.endReason})` : '';
  return `Call ${callId} ended ${summary.outcome ?? 'without an outcome'}${after}${why}, cost ${summary.cost}`;
}

export interface CallResult {
  outcome: CallOutcome;
  endedAt: Date;
  answeredAt?: Date | null;
  durationSec?: number;
  failureReason?: string | null;
  permanent?: boolean;
  endReason?: EndReason | null;
  usage?: CallUsage;
}

/** What a module listening to call ends is told, inside the transaction that ends the calls. */
export interface EndedCall {
  call: repo.CallRow;
  /** The wallet's balance after this call's debit when it left nothing to spend; otherwise null. */
  walletEmptied: Decimal | null;
}

/**
 * A listener hears of a tenant's calls ended by one statement all at once, so that its own writes
 * can be one statement too. `cache` is shared by the calls ended in one transaction, so a listener
 * reads what they have in common (a campaign's settings) once, not once per call.
 */
export type CallEndedListener = (ctx: TenantCtx, ended: EndedCall[], cache: Map<string, unknown>) => Promise<void>;

const callEndedListeners = new Set<CallEndedListener>();

/**
 * Another module acts inside the transaction that ends each call (the campaigns module records the
 * attempt's result there). Registered once by the composition root (src/runtime.ts); a listener
 * registered twice runs once.
 */
export function onCallEnded(listener: CallEndedListener): void {
  callEndedListeners.add(listener);
}

/**
 * What the calls moved on in one transaction share (advanceDueCalls): what listeners and events
 * read once for all of them (a campaign's settings, a tenant's webhook subscribers), and the jobs
 * they enqueue, sent in one statement before the transaction commits (sendBatchJobs).
 */
export interface CallBatch {
  cache: Map<string, unknown>;
  jobs: { name: string; data: object }[];
}

export const newCallBatch = (): CallBatch => ({ cache: new Map(), jobs: [] });
export const sendBatchJobs = (txCtx: Pick<TenantCtx, 'db' | 'jobs'>, batch: CallBatch) => txCtx.jobs.sendMany(batch.jobs, { tx: txCtx.db });

export interface Finish {
  tenantId: string;
  callId: string;
  result: CallResult;
}

/**
 * Ends calls in the caller's transaction, any tenant's, in one statement: outcome, usage and cost,
 * each call's wallet debit, the listeners (once per tenant) and `call.ended` (sent with the batch's
 * jobs), all or nothing. A second end of the same call (a repeated provider callback, a retried
 * job) changes nothing.
 */
export async function finishCalls(ctx: Omit<TenantCtx, 'tenantId'>, finishes: Finish[], batch: CallBatch): Promise<void> {
  const priced = new Map(
    finishes.map(({ callId, result }) => {
      const usage = result.usage ?? NO_USAGE;
      return [callId, { usage, ...priceUsage(ctx, usage) }];
    }),
  );
  const endedRows = await repo.endCalls(
    ctx.db,
    finishes.map(({ tenantId, callId, result }) => {
      const { usage, cost } = priced.get(callId)!;
      return {
        tenantId,
        id: callId,
        outcome: result.outcome,
        failureReason: result.failureReason ?? null,
        permanent: result.permanent ?? false,
        endedAt: result.endedAt,
        answeredAt: result.answeredAt ?? null,
        durationSec: result.durationSec ?? 0,
        endReason: result.endReason ?? null,
        usage: { ...usage },
        cost: { ...cost },
        costTotal: cost.total,
      };
    }),
  );
  const tenants = new Map<string, repo.CallRow[]>();
  for (const row of endedRows) {
    const rows = tenants.get(row.tenant_id);
    if (rows) rows.push(row);
    else tenants.set(row.tenant_id, [row]);
  }
  for (const [tenantId, rows] of tenants) {
    const callCtx: TenantCtx = { ...ctx, tenantId };
    const ended: EndedCall[] = [];
    for (const call of rows) {
      const { total } = priced.get(call.id)!;
      let walletEmptied: Decimal | null = null;
      if (total.greaterThan(0)) {
        const balance = await identity.debitWallet(ctx.db, tenantId, total, `Call ${call.id}`, call.id);
        const low = await identity.crossedIntoLowBalance(ctx.db, tenantId);
        if (low) {
          await events.emitEvent(
            callCtx,
            'wallet.low_balance',
            { balance: low.balance, threshold: low.threshold, currency: low.currency },
            null,
          );
        }
        if (!balance.greaterThan(0)) walletEmptied = balance;
      }
      ended.push({ call, walletEmptied });
    }
    for (const listener of callEndedListeners) await listener(callCtx, ended, batch.cache);
    for (const { call } of ended) {
      const summary = {
        outcome: call.outcome,
        durationSec: call.duration_sec,
        endReason: call.end_reason,
        cost: priced.get(call.id)!.total.toFixed(4),
      };
      batch.jobs.push({ name: CALL_ENDED, data: { tenantId, callId: call.id, summary } satisfies CallEndedJob });
      await events.emitEvent(callCtx, 'call.completed', toCall(call), call.agent_id, batch.cache);
    }
  }
}

/** Ends one call in the caller's transaction (finishCalls); with a batch, its jobs go when the batch's do. */
export async function finishCall(ctx: TenantCtx, callId: string, result: CallResult, batch?: CallBatch): Promise<void> {
  const own = batch ?? newCallBatch();
  await finishCalls(ctx, [{ tenantId: ctx.tenantId, callId, result }], own);
  if (!batch) await sendBatchJobs(ctx, own);
}

/**
 * What an answered call used: what its conversation recorded as it ran (tokens, characters, seconds
 * of speech) and the line's seconds; nothing is estimated from the call's length.
 */
export const usageOf = (call: repo.CallRow, telephonySeconds: number): CallUsage => ({
  ...NO_USAGE,
  ...call.usage,
  telephonySeconds,
  telephonyProvider: telephonySeconds > 0 ? call.provider : null,
});

/** An answered call that ends now, talked from its answer until `endedAt`. */
export function answeredUntil(call: repo.CallRow, endedAt: Date, extra: Partial<CallResult> = {}): CallResult {
  const answeredAt = call.answered_at ?? endedAt;
  const seconds = Math.max(0, Math.round((endedAt.getTime() - answeredAt.getTime()) / 1000));
  const outcome = answeredByNoOne(call.answered_by) ? 'UNANSWERED' : 'ANSWERED';
  return { outcome, endedAt, answeredAt, durationSec: seconds, usage: usageOf(call, seconds), ...extra };
}

/**
 * Whether a line answered by this did not reach the contact (billed for the line all the same, and
 * tried again by the campaign's rules): a machine, a fax, or a call-screening assistant or a phone
 * menu no person ever came on after.
 */
export const answeredByNoOne = (answeredBy: string | null) =>
  answeredBy === 'machine' || answeredBy === 'fax' || answeredBy === 'call_screening' || answeredBy === 'phone_menu';

// ---------------------------------------------------------------------------------------------
// Hanging up

/**
 * Hangs up one live call (calls are hung up one by one). A call its provider drives itself, or one
 * its provider never confirmed, ends here; a provider's call is hung up at the provider, whose
 * final status callback then ends it.
 */
export async function hangupCall(ctx: TenantCtx, id: string): Promise<void> {
  const atProvider = await withTransaction(ctx, async (txCtx) => {
    const call = await repo.lockCall(txCtx.db, ctx.tenantId, id);
    if (!call) throw appError('NOT_FOUND', { what: 'Call' });
    if (call.status === 'ENDED') throw appError('CALL_NOT_LIVE');
    if (!telephonyProvider(call.provider).telephony.advance && call.provider_call_id) return call;
    const now = ctx.clock.now();
    if (call.status === 'IN_PROGRESS') {
      await finishCall(txCtx, id, answeredUntil(call, now, { failureReason: 'Hung up by the user.', endReason: 'hung_up_by_user' }));
    } else {
      await finishCall(txCtx, id, { outcome: 'UNANSWERED', endedAt: now, failureReason: 'Hung up by the user before it was answered.' });
    }
    return undefined;
  });
  if (!atProvider) return;
  try {
    await (await connect(ctx, atProvider.provider)).hangup(atProvider.provider_call_id!);
  } catch (error) {
    throw appError('PROVIDER_ERROR', { provider: atProvider.provider, reason: (error as Error).message });
  }
}
