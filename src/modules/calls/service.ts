import type { TenantCtx } from '../../platform/context.ts';
import { AppError, conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Page } from '../../platform/pagination.ts';
import { PermanentDialError, type CallOutcome } from '../../providers/telephony/types.ts';
import { twilioCallUpdate, verifyTwilioSignature } from '../../providers/telephony/twilio.ts';
import * as integrations from '../integrations/service.ts';
import { statusCallbackUrl, telephonyFor, TWILIO } from './telephony.ts';
export { providerProblem } from './telephony.ts';
import * as agents from '../agents/service.ts';
import * as campaigns from '../campaigns/service.ts';
import * as events from '../events/service.ts';
import * as identity from '../identity/service.ts';
import { normalizePhoneNumber } from '../contacts/contact-fields.ts';
import { conversationUsage, costOf, NO_USAGE, rateCardOf, type CallUsage } from './rate-card.ts';
import * as repo from './repo.ts';
import type { Call, CallQuery } from './schemas.ts';
import { simulatedStep, simulatedTranscript, type SimulatedCall } from './simulator.ts';
import { isoOrNull, addSeconds } from '../../platform/clock.ts';

export const CALL_ENDED = 'call.ended';
export interface CallEndedJob {
  tenantId: string;
  callId: string;
}

export const toCall = (row: repo.CallRow): Call => ({
  id: row.id,
  agentId: row.agent_id,
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
  transcript: row.transcript as Call['transcript'],
  recordingUrl: row.recording_url,
  usage: row.usage as Call['usage'],
  cost: row.cost as Call['cost'],
  createdAt: row.created_at.toISOString(),
});

export const SIMULATOR = 'SIMULATOR';
export const simulatorCallId = (callId: string) => `sim-${callId}`;

export interface CallResult {
  outcome: CallOutcome;
  endedAt: Date;
  answeredAt?: Date | null;
  durationSec?: number;
  failureReason?: string | null;
  permanent?: boolean;
  transcript?: unknown[];
  usage?: CallUsage;
}

/**
 * Ends a call in the caller's transaction: outcome, usage and cost, the wallet debit, the
 * campaign contact's next step and `call.ended`, all or nothing. A second end of the same call
 * (a repeated provider callback, a retried job) changes nothing.
 */
export async function finishCall(
  ctx: TenantCtx,
  callId: string,
  result: CallResult,
  campaignsSeen?: campaigns.CampaignsSeen,
): Promise<repo.CallRow | undefined> {
  const usage = result.usage ?? NO_USAGE;
  const { cost, total } = costOf(usage, rateCardOf(ctx.config.rates));
  const ended = await repo.endCall(ctx.db, ctx.tenantId, callId, {
    outcome: result.outcome,
    failureReason: result.failureReason ?? null,
    permanent: result.permanent ?? false,
    endedAt: result.endedAt,
    answeredAt: result.answeredAt ?? null,
    durationSec: result.durationSec ?? 0,
    transcript: result.transcript ?? [],
    usage: { ...usage },
    cost: { ...cost },
    costTotal: cost.total,
  });
  if (!ended) return undefined;
  if (total.greaterThan(0)) {
    const balance = await identity.debitWallet(ctx.db, ctx.tenantId, total, `Call ${callId}`, callId);
    const low = await identity.crossedIntoLowBalance(ctx.db, ctx.tenantId);
    if (low)
      await events.emitEvent(ctx, 'wallet.low_balance', { balance: low.balance, threshold: low.threshold, currency: low.currency }, null);
    if (!balance.greaterThan(0)) await campaigns.pauseForEmptyWallet(ctx, balance);
  }
  if (ended.campaign_id) await campaigns.recordAttemptResult(ctx, ended, campaignsSeen);
  await ctx.jobs.send<CallEndedJob>(CALL_ENDED, { tenantId: ctx.tenantId, callId }, { tx: ctx.db });
  await events.emitEvent(ctx, 'call.completed', toCall(ended), ended.agent_id);
  return ended;
}

/**
 * Moves on every live call whose deadline passed, in batches, each batch one transaction: a
 * SIMULATOR call rings, is answered or ends as its contact's `metadata.simulate` says; a call of
 * any other provider that got no final status in time is given up as FAILED. Returns how many
 * calls moved. Rows are locked with SKIP LOCKED, so workers share the work.
 */
export async function advanceDueCalls(ctx: Omit<TenantCtx, 'tenantId'>, now: Date, batch = 200): Promise<number> {
  return ctx.db.transaction(async (tx) => {
    const due = await repo.lockDueCalls(tx, now, batch);
    const campaignsSeen = new Map();
    for (const call of due) {
      const callCtx: TenantCtx = { ...ctx, db: tx, tenantId: call.tenant_id };
      if (call.provider !== SIMULATOR) {
        await finishCall(
          callCtx,
          call.id,
          {
            outcome: 'FAILED',
            endedAt: now,
            failureReason:
              call.status === 'QUEUED'
                ? 'The provider never confirmed the call; it was given up.'
                : 'The provider sent no final status in time; the call was given up.',
          },
          campaignsSeen,
        );
        continue;
      }
      const step = simulatedStep(
        {
          status: call.status as SimulatedCall['status'],
          direction: call.direction,
          attempt: call.attempt,
          dialTimeout: call.dial_timeout,
          deadlineAt: call.deadline_at!,
          answeredAt: call.answered_at,
          contactMetadata: call.contact_metadata,
        },
        now,
        ctx.config.simulator,
      );
      if (step.live) {
        await repo.updateLiveCall(tx, call.tenant_id, call.id, {
          status: step.status,
          answeredAt: step.answeredAt,
          deadlineAt: step.deadlineAt,
        });
      } else if (step.outcome === 'ANSWERED') {
        const answeredAt = step.answeredAt!;
        const seconds = Math.max(0, Math.round((step.endedAt.getTime() - answeredAt.getTime()) / 1000));
        await finishCall(
          callCtx,
          call.id,
          {
            outcome: 'ANSWERED',
            endedAt: step.endedAt,
            answeredAt,
            durationSec: seconds,
            transcript: simulatedTranscript(answeredAt, seconds, call.contact_name),
            usage: conversationUsage(seconds),
          },
          campaignsSeen,
        );
      } else {
        await finishCall(
          callCtx,
          call.id,
          {
            outcome: step.outcome,
            endedAt: step.endedAt,
            permanent: step.permanent,
            failureReason: step.permanent
              ? 'The number is not a valid, callable number.'
              : step.outcome === 'FAILED'
                ? 'The call could not be connected.'
                : null,
          },
          campaignsSeen,
        );
      }
    }
    return due.length;
  });
}

export async function listCalls(ctx: TenantCtx, query: CallQuery, page: Page) {
  const from = query.from ? new Date(query.from) : undefined;
  const to = query.to ? new Date(query.to) : undefined;
  if (from && to && from > to)
    throw new AppError(400, 'VALIDATION_FAILED', "'from' must not be after 'to'.", [{ path: '/from', message: 'after to' }]);
  const { rows, total } = await repo.listCalls(ctx.db, ctx.tenantId, { ...query, from, to }, page);
  return { data: rows.map(toCall), total };
}

/** The stored call, for modules that act after it (messaging, analytics). */
export const findCallRow = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, id: string) => repo.findCall(ctx.db, ctx.tenantId, id);

export async function getCall(ctx: TenantCtx, id: string): Promise<Call> {
  const row = await repo.findCall(ctx.db, ctx.tenantId, id);
  if (!row) throw notFound('Call');
  return toCall(row);
}

/**
 * Hangs up one live call (seed §4.7: calls are hung up one by one). A simulated call, or one its
 * provider never confirmed, ends here; a provider's call is hung up at the provider, whose final
 * status callback then ends it.
 */
export async function hangupCall(ctx: TenantCtx, id: string): Promise<void> {
  const atProvider = await ctx.db.transaction(async (tx) => {
    const txCtx = { ...ctx, db: tx };
    const call = await repo.lockCall(tx, ctx.tenantId, id);
    if (!call) throw notFound('Call');
    if (call.status === 'ENDED') throw conflict('CALL_NOT_LIVE', 'The call has already ended; only a live call can be hung up.');
    if (call.provider !== SIMULATOR && call.provider_call_id) return call;
    const now = ctx.clock.now();
    if (call.status === 'IN_PROGRESS') {
      const answeredAt = call.answered_at ?? now;
      const seconds = Math.max(0, Math.round((now.getTime() - answeredAt.getTime()) / 1000));
      await finishCall(txCtx, id, {
        outcome: 'ANSWERED',
        endedAt: now,
        answeredAt,
        durationSec: seconds,
        failureReason: 'Hung up by the user.',
        usage: conversationUsage(seconds),
      });
    } else {
      await finishCall(txCtx, id, { outcome: 'UNANSWERED', endedAt: now, failureReason: 'Hung up by the user before it was answered.' });
    }
    return undefined;
  });
  if (atProvider) {
    try {
      await (await telephonyFor(ctx, atProvider.provider)).hangup(atProvider.provider_call_id!);
    } catch (error) {
      throw new AppError(502, 'PROVIDER_ERROR', `${atProvider.provider} refused to hang up the call: ${(error as Error).message}`);
    }
  }
}

/**
 * A Twilio status callback (already verified by its signature): ringing and answering move the
 * call on; a final status ends it with its outcome, duration, usage and cost. Repeated and late
 * callbacks change nothing.
 */
export async function applyTwilioStatus(
  ctx: Omit<TenantCtx, 'tenantId'>,
  call: repo.CallRow,
  update: { status: 'QUEUED' | 'RINGING' | 'IN_PROGRESS' | 'ENDED'; outcome: CallOutcome | null; durationSec: number | null },
): Promise<void> {
  const now = ctx.clock.now();
  const callCtx: TenantCtx = { ...ctx, tenantId: call.tenant_id };
  if (call.status === 'ENDED') return;
  if (update.status !== 'ENDED') {
    if (update.status === 'QUEUED' || (update.status === 'RINGING' && call.status === 'IN_PROGRESS')) return;
    await repo.updateLiveCall(ctx.db, call.tenant_id, call.id, {
      status: update.status,
      answeredAt: update.status === 'IN_PROGRESS' ? now : null,
      deadlineAt: call.deadline_at,
    });
    return;
  }
  const seconds = update.durationSec ?? 0;
  const answered = update.outcome === 'ANSWERED';
  await finishCall(callCtx, call.id, {
    outcome: update.outcome!,
    endedAt: now,
    answeredAt: answered ? (call.answered_at ?? new Date(now.getTime() - seconds * 1000)) : null,
    durationSec: answered ? seconds : 0,
    failureReason: update.outcome === 'FAILED' ? 'Twilio could not connect the call.' : null,
    usage: answered ? conversationUsage(seconds) : NO_USAGE,
  });
}

/** Contract §11: a simulated incoming call to one of the tenant's SIMULATOR numbers. */
export async function simulateInboundCall(ctx: TenantCtx, input: { voiceNumberId: string; fromNumber: string }): Promise<Call> {
  const number = await agents.requireVoiceNumber(ctx, input.voiceNumberId);
  if (number.provider !== SIMULATOR)
    throw conflict(
      'NOT_A_SIMULATOR_NUMBER',
      `Voice number ${number.phoneNumber} uses ${number.provider}; simulated calls need a SIMULATOR number.`,
    );
  const fromNumber = normalizePhoneNumber(input.fromNumber);
  if (!fromNumber)
    throw new AppError(400, 'VALIDATION_FAILED', 'fromNumber is not a valid E.164 phone number.', [
      { path: '/fromNumber', message: 'Invalid phone number' },
    ]);
  const now = ctx.clock.now();
  const id = newId();
  await repo.insertCalls(ctx.db, ctx.tenantId, [
    {
      id,
      agent_id: number.inboundAgentId,
      campaign_id: null,
      contact_id: null,
      voice_number_id: number.id,
      direction: 'INCOMING',
      from_number: fromNumber,
      to_number: number.phoneNumber,
      attempt: 1,
      status: 'RINGING',
      provider: SIMULATOR,
      provider_call_id: simulatorCallId(id),
      dial_timeout: 30,
      deadline_at: addSeconds(now, ctx.config.simulator.ringSeconds),
      started_at: now,
    },
  ]);
  return getCall(ctx, id);
}

export const hasFinishedCall = (ctx: TenantCtx) => repo.hasEndedCall(ctx.db, ctx.tenantId);
export { insertCalls } from './repo.ts';
export type { NewCall } from './repo.ts';
type NewCall = repo.NewCall;

/**
 * Asks the call's provider to dial (after the attempt was committed). The provider's answer moves
 * the call to RINGING with a deadline for its final status; a refusal ends it as FAILED, for good
 * when the provider says the number cannot be called.
 */
export async function placeCall(ctx: TenantCtx, call: NewCall): Promise<void> {
  try {
    const provider = await telephonyFor(ctx, call.provider);
    const { providerCallId } = await provider.dial({
      callId: call.id,
      from: call.from_number,
      to: call.to_number,
      dialTimeoutSec: call.dial_timeout,
      statusCallbackUrl: statusCallbackUrl(ctx, call.provider),
    });
    const deadlineAt = addSeconds(ctx.clock.now(), call.dial_timeout + ctx.config.dialer.maxCallSeconds);
    await repo.updateLiveCall(ctx.db, ctx.tenantId, call.id, { status: 'RINGING', providerCallId, deadlineAt });
  } catch (error) {
    const permanent = error instanceof PermanentDialError;
    await ctx.db.transaction((tx) =>
      finishCall({ ...ctx, db: tx }, call.id, {
        outcome: 'FAILED',
        endedAt: ctx.clock.now(),
        permanent,
        failureReason: (error as Error).message,
      }),
    );
  }
}

/**
 * `POST /telephony/twilio/status`: finds the call by Twilio's CallSid, checks X-Twilio-Signature
 * with that tenant's Auth Token over the URL Twilio called, and applies the status.
 */
export async function receiveTwilioStatus(
  ctx: Omit<TenantCtx, 'tenantId'>,
  url: string,
  params: Record<string, string | string[]>,
  signature: string | undefined,
): Promise<void> {
  const callSid = typeof params.CallSid === 'string' ? params.CallSid : undefined;
  await ctx.db.transaction(async (tx) => {
    const call = callSid ? await repo.lockCallByProviderId(tx, TWILIO, callSid) : undefined;
    const credentials = call ? await integrations.credentialsOf({ ...ctx, db: tx, tenantId: call.tenant_id }, 'twilio') : undefined;
    if (!call || !credentials || !verifyTwilioSignature(url, params, signature, credentials.authToken!)) {
      // One answer for an unknown call and a bad signature: a caller learns nothing about our calls.
      throw new AppError(403, 'INVALID_SIGNATURE', 'The X-Twilio-Signature header does not match this request.');
    }
    const flat = Object.fromEntries(
      Object.entries(params).map(([name, value]) => [name, Array.isArray(value) ? value[value.length - 1]! : value]),
    );
    let update: ReturnType<typeof twilioCallUpdate>;
    try {
      update = twilioCallUpdate(flat, call.answered_at !== null || call.status === 'IN_PROGRESS');
    } catch {
      throw new AppError(400, 'UNKNOWN_CALL_STATUS', `CallStatus "${flat.CallStatus ?? ''}" is not a Twilio call status.`);
    }
    await applyTwilioStatus({ ...ctx, db: tx }, call, update);
  });
}

// Analytics reads call usage here: the calls table is this module's alone.
export type { CallTrendRow, CallUsageRow } from './repo.ts';
export const usageByAgent = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, range: { from: Date; to: Date; agentId?: string }) =>
  repo.usageByAgent(ctx.db, ctx.tenantId, range);
export const callTrend = (
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  range: { from: Date; to: Date; agentId?: string },
  interval: 'day' | 'hour',
  timezone: string,
) => repo.callTrend(ctx.db, ctx.tenantId, range, interval, timezone);
