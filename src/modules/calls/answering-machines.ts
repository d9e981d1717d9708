/**
 * Who answered: answering-machine detection (the provider's verdict, or the simulator's) and the
 * campaign's policy for a machine, hung up to be tried again or left a voicemail.
 */
import { oncePer, perTurn } from '../../platform/batches.ts';
import { withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import type { Queryable } from '../../platform/db.ts';
import { appError } from '../../platform/errors.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { AnsweredBy, ProviderWebhook } from '../../providers/types.ts';
import * as compliance from '../compliance/service.ts';
import * as repo from './repo.ts';
import type { TranscriptTurn } from './schemas.ts';
import { connect, lockVerifiedCall } from './provider-line.ts';
import { answeredUntil, finishCall, type CallBatch, type CallResult } from './ending.ts';

/** What a campaign does when a machine answers one of its calls, its voicemail filled for the call. */
export type MachinePolicy = { onMachine: 'HANG_UP_AND_RETRY' } | { onMachine: 'LEAVE_VOICEMAIL'; message: string; language: string };
export type MachinePolicyOf = (ctx: TenantCtx, call: repo.CallRow) => Promise<MachinePolicy | null>;

let machinePolicyOf: MachinePolicyOf = () => Promise.resolve(null);

/**
 * Who decides what a machine gets (the campaign's policy, its voicemail rendered for the call's
 * contact and agent): registered once by the composition root, since campaigns and agents' templates
 * sit above this module. Without one, a machine is talked to as a person would be.
 */
export function decideMachinesWith(policyOf: MachinePolicyOf): void {
  machinePolicyOf = policyOf;
}

/** What follows a verdict: the conversation goes on, the call ends (and is hung up), or a voicemail is left. */
type Decision = { act: 'converse' } | { act: 'end'; result: CallResult } | { act: 'voicemail'; turn: TranscriptTurn; language: string };

export type { Decision };
export const CONVERSE: Decision = { act: 'converse' };

/**
 * Stores who answered a live, answered call (once: a repeated verdict decides nothing) and decides
 * what follows: a person, or no clear verdict, is talked to (call-screening assistants answer as
 * people and hear who is calling and why); a fax ends the call for good; a machine gets its
 * campaign's policy, hung up to be tried again later or left a voicemail and done.
 */
export async function decideOnAnswerer(ctx: TenantCtx, call: repo.CallRow, answeredBy: AnsweredBy): Promise<Decision | undefined> {
  if (!(await repo.setAnsweredBy(ctx.db, ctx.tenantId, call.id, answeredBy))) return undefined;
  await recordAnswers(ctx, [{ call, answeredBy, detectedBy: 'provider' }]);
  return decide(ctx, call, answeredBy);
}

/** How the call itself heard who answered: the voicemail's beep, or words (an assistant's, a menu's, a person's). */
export type HeardBy = 'beep' | 'words';

/** Verdicts the call's own hearing may replace: no clear one; an assistant's or a menu's, once a machine beeps or a person speaks. */
const REPLACEABLE: Partial<Record<AnsweredBy, string[]>> = {
  human: ['unknown', 'call_screening', 'phone_menu'],
  machine: ['unknown', 'call_screening', 'phone_menu'],
};

/**
 * Who answered, as the call heard it on its own line (media/: the beep, the words): stored when no
 * verdict is (or over one it may replace), written into the dial's compliance record, and what
 * follows decided as for a provider's verdict. Undefined when nothing changed: a verdict stands,
 * or the call is over.
 *
 * A campaign's calls are answered in waves, and each call's first words give a verdict: the
 * verdicts of a tenant's calls asked in the same turn are stored together, in one transaction (one
 * statement for the calls, one for their records). One transaction per call made 200 calls
 * answered within seconds queue for the database (p50 4.2 s) and hold up everything else of theirs.
 */
export function classifyInCall(ctx: TenantCtx, callId: string, answeredBy: AnsweredBy, heardBy: HeardBy): Promise<Decision | undefined> {
  return heardTogether(ctx.db)(ctx.tenantId, { ctx, callId, answeredBy, heardBy });
}

interface HeardVerdict {
  ctx: TenantCtx;
  callId: string;
  answeredBy: AnsweredBy;
  heardBy: HeardBy;
}

const heardTogether = oncePer((_db: Queryable) =>
  perTurn((_tenantId: string, verdicts: HeardVerdict[]) => classifyHeard(verdicts[0]!.ctx, verdicts)),
);

async function classifyHeard(ctx: TenantCtx, verdicts: HeardVerdict[]): Promise<(Decision | undefined)[]> {
  const decisions: (Decision | undefined)[] = verdicts.map(() => undefined);
  await withTransaction(ctx, async (txCtx) => {
    // A call heard twice in one turn (an assistant, then a person) has its verdicts stored in the order heard.
    for (const round of roundsByCall(verdicts)) {
      const stored = await repo.setAnsweredByOnLiveCalls(
        txCtx.db,
        ctx.tenantId,
        round.map(({ verdict }) => ({
          id: verdict.callId,
          answeredBy: verdict.answeredBy,
          over: REPLACEABLE[verdict.answeredBy] ?? ['unknown'],
        })),
      );
      const storedById = new Map(stored.map((row) => [row.id, row]));
      const changed = round.flatMap(({ verdict, index }) => {
        const call = storedById.get(verdict.callId);
        return call ? [{ call, verdict, index }] : [];
      });
      await recordAnswers(
        txCtx,
        changed.map(({ call, verdict }) => ({ call, answeredBy: verdict.answeredBy, detectedBy: verdict.heardBy })),
      );
      for (const { call, verdict, index } of changed) decisions[index] = await decide(txCtx, call, verdict.answeredBy);
    }
  });
  return decisions;
}

/**
 * The verdicts in rounds that name each call once, each with its place among all: a call's n-th
 * verdict of the batch goes in the n-th round (counted per call, so a turn of many calls is not
 * searched round by round for each verdict).
 */
function roundsByCall(verdicts: HeardVerdict[]): { verdict: HeardVerdict; index: number }[][] {
  const rounds: { verdict: HeardVerdict; index: number }[][] = [];
  const heardBefore = new Map<string, number>();
  verdicts.forEach((verdict, index) => {
    const round = heardBefore.get(verdict.callId) ?? 0;
    heardBefore.set(verdict.callId, round + 1);
    (rounds[round] ??= []).push({ verdict, index });
  });
  return rounds;
}

/** Who answered campaigns' calls, appended to the tenant's chain of dial decisions after the dials' own records. */
async function recordAnswers(
  ctx: TenantCtx,
  answers: { call: repo.CallRow; answeredBy: AnsweredBy; detectedBy: HeardBy | 'provider' }[],
): Promise<void> {
  await compliance.recordAnswers(
    ctx,
    answers.flatMap(({ call, answeredBy, detectedBy }) =>
      call.campaign_id && call.contact_id
        ? [
            {
              campaignId: call.campaign_id,
              contactId: call.contact_id,
              phoneNumber: call.to_number,
              answeredBy,
              facts: { callId: call.id, attempt: call.attempt, detectedBy },
            },
          ]
        : [],
    ),
  );
}

/** What follows a verdict stored: see decideOnAnswerer. */
async function decide(ctx: TenantCtx, call: repo.CallRow, answeredBy: AnsweredBy): Promise<Decision> {
  const now = ctx.clock.now();
  const endedByMachine = (extra: Partial<CallResult>): Decision => ({
    act: 'end',
    result: answeredUntil(call, now, { endReason: 'answering_machine', ...extra }),
  });
  if (answeredBy === 'fax') {
    return endedByMachine({ outcome: 'FAILED', permanent: true, failureReason: 'A fax machine answered; the number is not called again.' });
  }
  if (answeredBy !== 'machine') return CONVERSE;
  const policy = await machinePolicyOf(ctx, call);
  if (!policy) return CONVERSE;
  if (policy.onMachine === 'HANG_UP_AND_RETRY') {
    return endedByMachine({ outcome: 'UNANSWERED', failureReason: 'An answering machine answered; hung up, to call again later.' });
  }
  return {
    act: 'voicemail',
    turn: { role: 'agent', text: policy.message, at: now.toISOString(), by: 'voicemail' },
    language: policy.language,
  };
}

/**
 * Records a decision on the call: an end ends it; a voicemail adds its turn, and ends a call its
 * provider drives itself at once (there is no line to speak on), not reached but done.
 */
export async function recordDecision(ctx: TenantCtx, call: repo.CallRow, decision: Decision, batch?: CallBatch): Promise<void> {
  if (decision.act === 'end') return finishCall(ctx, call.id, decision.result, batch);
  if (decision.act !== 'voicemail') return;
  await repo.addVoicemailTurn(ctx.db, ctx.tenantId, call.id, decision.turn);
  if (telephonyProvider(call.provider).telephony.advance) {
    await finishCall(ctx, call.id, answeredUntil(call, ctx.clock.now(), { outcome: 'UNANSWERED', endReason: 'voicemail_left' }), batch);
  }
}

/**
 * A provider's answering-machine detection callback (`POST /telephony/{provider}/answered-by`),
 * verified as status callbacks are. The verdict is stored once; a call not yet seen answered is
 * answered when detection started. An end (a machine hung up on, a fax) is recorded, then the call
 * hung up at the provider; a voicemail is spoken at the provider, then recorded, so a voicemail
 * the provider refused is never shown as left (the call's final status then ends it not reached).
 */
export async function receiveAnsweredByCallback(
  deps: Omit<TenantCtx, 'tenantId'> & Pick<Deps, 'log'>,
  providerSlug: string,
  webhook: ProviderWebhook,
): Promise<void> {
  const provider = telephonyProvider(providerSlug.toUpperCase());
  const readAnsweredBy = provider.telephony.callbacks!.readAnsweredBy!;
  const decided = await withTransaction(deps, async (txCtx) => {
    const { call, callCtx } = await lockVerifiedCall(txCtx, provider, webhook);
    let verdict: ReturnType<typeof readAnsweredBy>;
    try {
      verdict = readAnsweredBy(webhook);
    } catch (error) {
      throw appError('UNKNOWN_CALL_STATUS', { reason: (error as Error).message });
    }
    if (call.status === 'ENDED' || call.answered_by !== null) return undefined;
    const answered = await answeredForDetection(callCtx, call, verdict.detectionMs);
    const decision = await decideOnAnswerer(callCtx, answered, verdict.answeredBy);
    if (decision?.act === 'end') await recordDecision(callCtx, answered, decision);
    return decision && decision.act !== 'converse' ? { call: answered, decision } : undefined;
  });
  if (!decided) return;
  const { call, decision } = decided;
  const ctx: TenantCtx = { ...deps, tenantId: call.tenant_id };
  try {
    const line = await connect(ctx, call.provider);
    if (decision.act === 'end') await line.hangup(call.provider_call_id!);
    else await line.speakAndHangUp!(call.provider_call_id!, { text: decision.turn.text, language: decision.language });
  } catch (error) {
    // The verdict stands; the call's final status still ends it (not reached) whatever happened here.
    deps.log.error({ err: error, callId: call.id }, 'answering machine: the provider refused the follow-up');
    return;
  }
  if (decision.act === 'voicemail') await withTransaction(ctx, (txCtx) => recordDecision(txCtx, call, decision));
}

/** The call as answered: detection reports only on answered calls, so one not yet seen answered was answered when detection began. */
async function answeredForDetection(ctx: TenantCtx, call: repo.CallRow, detectionMs: number | null): Promise<repo.CallRow> {
  if (call.status === 'IN_PROGRESS' && call.answered_at) return call;
  const now = ctx.clock.now();
  const answeredAt = call.answered_at ?? new Date(now.getTime() - (detectionMs ?? 0));
  await repo.updateLiveCall(ctx.db, call.tenant_id, call.id, { status: 'IN_PROGRESS', answeredAt, deadlineAt: call.deadline_at });
  return { ...call, status: 'IN_PROGRESS', answered_at: answeredAt };
}
