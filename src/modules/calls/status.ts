/**
 * Moving live calls on: a provider's status callbacks (ringing, answered, ended), and the calls
 * whose deadline passed (the simulator's next steps, or a provider's call given up).
 */
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { storableValue } from '../../platform/input.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { CallUpdate, ProviderWebhook } from '../../providers/types.ts';
import * as repo from './repo.ts';
import { lockVerifiedCall } from './provider-line.ts';
import { answeredByNoOne, answeredUntil, finishCall, finishCalls, newCallBatch, sendBatchJobs, usageOf, type Finish } from './ending.ts';
import { CONVERSE, decideOnAnswerer, recordDecision } from './answering-machines.ts';

/**
 * Sent in the transaction that answers a call its provider drives itself (the simulator) and that
 * has an agent: the conversation module converses on it.
 */
export const CALL_ANSWERED = 'call.answered';
export interface CallAnsweredJob {
  tenantId: string;
  callId: string;
}

/**
 * Moves on every live call whose deadline passed, in batches, each batch one transaction: a call
 * of a provider that drives its own calls (the simulator) takes its next steps; a call of any other
 * provider that got no final status in time is given up as FAILED. Returns how many calls moved.
 * Rows are locked with SKIP LOCKED, so workers share the work.
 */
export async function advanceDueCalls(ctx: Omit<TenantCtx, 'tenantId'>, now: Date, batchSize = 200): Promise<number> {
  return withTransaction(ctx, async (txCtx) => {
    const due = await repo.lockDueCalls(txCtx.db, now, batchSize);
    const batch = newCallBatch();
    // The calls that end here end together (finishCalls), after the loop.
    const finishes: Finish[] = [];
    for (const call of due) {
      const callCtx: TenantCtx = { ...txCtx, tenantId: call.tenant_id };
      const { telephony } = telephonyProvider(call.provider);
      if (!telephony.advance) {
        const failureReason =
          call.status === 'QUEUED'
            ? 'The provider never confirmed the call; it was given up.'
            : 'The provider sent no final status in time; the call was given up.';
        finishes.push({ tenantId: call.tenant_id, callId: call.id, result: { outcome: 'FAILED', endedAt: now, failureReason } });
        continue;
      }
      const step = telephony.advance(
        {
          status: call.status as 'QUEUED' | 'RINGING' | 'IN_PROGRESS',
          direction: call.direction,
          attempt: call.attempt,
          dialTimeout: call.dial_timeout,
          deadlineAt: call.deadline_at!,
          answeredAt: call.answered_at,
          contactName: call.contact_name,
          contactMetadata: call.contact_metadata,
          detectsAnsweringMachine: call.machine_detection,
        },
        now,
        ctx.config.providerSettings,
      );
      if (step.live) {
        await repo.updateLiveCall(txCtx.db, call.tenant_id, call.id, {
          status: step.status,
          answeredAt: step.answeredAt,
          deadlineAt: step.deadlineAt,
        });
        const answered = { ...call, status: step.status, answered_at: step.answeredAt };
        // The simulator's verdict goes the way a provider's detection callback goes, and is recorded at once.
        const decision = (step.answeredBy && (await decideOnAnswerer(callCtx, answered, step.answeredBy))) || CONVERSE;
        if (decision.act !== 'converse') await recordDecision(callCtx, answered, decision, batch);
        else if (step.status === 'IN_PROGRESS' && call.status !== 'IN_PROGRESS' && call.agent_id)
          batch.jobs.push({ name: CALL_ANSWERED, data: { tenantId: call.tenant_id, callId: call.id } satisfies CallAnsweredJob });
      } else if (step.outcome === 'ANSWERED') {
        // The simulated contact's time on the line is up: they hang up, whatever was being said.
        const answered = { ...call, answered_at: step.answeredAt };
        finishes.push({
          tenantId: call.tenant_id,
          callId: call.id,
          result: answeredUntil(answered, step.endedAt, { endReason: 'contact_hung_up' }),
        });
      } else {
        const { outcome, endedAt, permanent, failureReason } = step;
        finishes.push({ tenantId: call.tenant_id, callId: call.id, result: { outcome, endedAt, permanent, failureReason } });
      }
    }
    await finishCalls(txCtx, finishes, batch);
    await sendBatchJobs(txCtx, batch);
    return due.length;
  });
}

/**
 * A provider's status callback (`POST /telephony/{provider}/status`): finds the call by the
 * provider's call id, checks the provider's signature with that tenant's credentials, and applies
 * the update. Ringing and answering move the call on; a final status ends it with its outcome,
 * duration, usage and cost. Repeated and late callbacks change nothing.
 */
export async function receiveStatusCallback(
  ctx: Omit<TenantCtx, 'tenantId'>,
  providerSlug: string,
  webhook: ProviderWebhook,
): Promise<void> {
  const provider = telephonyProvider(providerSlug.toUpperCase());
  const callbacks = provider.telephony.callbacks!;
  await withTransaction(ctx, async (txCtx) => {
    const { call, callCtx } = await lockVerifiedCall(txCtx, provider, webhook);
    let update: CallUpdate | null;
    try {
      update = storableValue(callbacks.read(webhook, call.answered_at !== null || call.status === 'IN_PROGRESS'));
    } catch (error) {
      throw appError('UNKNOWN_CALL_STATUS', { reason: (error as Error).message });
    }
    if (update) await applyUpdate(callCtx, call, update);
  });
}

async function applyUpdate(ctx: TenantCtx, call: repo.CallRow, update: CallUpdate): Promise<void> {
  if (call.status === 'ENDED') return;
  const now = ctx.clock.now();
  if (update.status !== 'ENDED') {
    if (update.status === 'QUEUED' || (update.status === 'RINGING' && call.status === 'IN_PROGRESS')) return;
    await repo.updateLiveCall(ctx.db, call.tenant_id, call.id, {
      status: update.status,
      answeredAt: update.status === 'IN_PROGRESS' ? now : null,
      deadlineAt: call.deadline_at,
    });
    return;
  }
  if (update.outcome !== 'ANSWERED') {
    await finishCall(ctx, call.id, { outcome: update.outcome, endedAt: now, failureReason: update.failureReason ?? null });
    return;
  }
  // A line a machine (or an assistant, a menu) answered did not reach the contact (billed for the line all the same).
  const outcome = answeredByNoOne(call.answered_by) ? 'UNANSWERED' : 'ANSWERED';
  // A provider that does not say how long was talked (Telnyx) is timed from the answer we saw.
  if (update.durationSec === null && call.answered_at) {
    await finishCall(ctx, call.id, answeredUntil(call, now, { outcome }));
    return;
  }
  // The provider's duration is the talk time billed; without an answer seen, it dates the answer.
  const seconds = update.durationSec ?? 0;
  const answeredAt = call.answered_at ?? new Date(now.getTime() - seconds * 1000);
  await finishCall(ctx, call.id, {
    outcome,
    endedAt: now,
    answeredAt,
    durationSec: seconds,
    usage: usageOf(call, seconds),
    // A conversation the agent did not end (no reason noted) was ended by the caller hanging up.
    ...(call.conversation_started_at && !call.end_reason ? { endReason: 'contact_hung_up' as const } : {}),
  });
}
