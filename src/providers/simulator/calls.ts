/**
 * The simulator's calls: nothing leaves the machine; each call rings, is answered or fails as its
 * contact's `metadata.simulate` plan says, on the timings of SIMULATOR_RING_SECONDS and
 * SIMULATOR_TALK_SECONDS. When the campaign asks who answers, the plan's `answeredBy` says it.
 */
import { addSeconds } from '../../platform/clock.ts';
import type { AnsweredBy, CallOutcome, SelfDrivenCall, SelfDrivenStep } from '../types.ts';

/** An outcome the simulator accepts in a contact's `metadata.simulate` (contract §11). */
const OUTCOMES = new Set(['ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED', 'INVALID_NUMBER']);

export interface SimulatedAttempt {
  outcome: CallOutcome;
  /** An invalid number: FAILED and never retried. */
  permanent: boolean;
}

/**
 * A contact's plan: `metadata.simulate` is the outcomes of its attempts ("BUSY,UNANSWERED"), or an
 * object with them as `outcomes` (a string or an array of outcomes) and, for the conversation, what
 * the contact says as `say`.
 */
function outcomesOf(metadata: Record<string, unknown> | null | undefined): unknown {
  const simulate = metadata?.simulate;
  if (typeof simulate === 'string') return simulate;
  return simulate !== null && typeof simulate === 'object' ? (simulate as { outcomes?: unknown }).outcomes : undefined;
}

/**
 * The entries of a plan that are among `allowed`, in order: a comma-separated string
 * ("BUSY,ANSWERED") or the same as a JSON array (["BUSY", "ANSWERED"]), which is how a plan is
 * naturally written in metadata and was ignored before.
 */
function planOf(list: unknown, allowed: ReadonlySet<string>, normalise: (entry: string) => string): string[] {
  const entries = typeof list === 'string' ? list.split(',') : Array.isArray(list) ? list : [];
  return entries
    .filter((entry): entry is string => typeof entry === 'string')
    .map((entry) => normalise(entry.trim()))
    .filter((entry) => allowed.has(entry));
}

const ANSWERERS: ReadonlySet<string> = new Set<AnsweredBy>(['human', 'machine', 'fax']);

/**
 * Who answers attempt `attempt` (1-based) when the campaign asks: `metadata.simulate.answeredBy` is
 * `machine`, `human` or `fax`, or one per attempt ("machine,human"), the last repeating once the list
 * is used up; a person when there is none.
 */
export function simulatedAnswerer(metadata: Record<string, unknown> | null | undefined, attempt: number): AnsweredBy {
  const simulate = metadata?.simulate;
  const answeredBy = simulate !== null && typeof simulate === 'object' ? (simulate as { answeredBy?: unknown }).answeredBy : undefined;
  const plan = planOf(answeredBy, ANSWERERS, (entry) => entry.toLowerCase());
  return (plan[Math.min(attempt, plan.length) - 1] as AnsweredBy | undefined) ?? 'human';
}

/**
 * The outcome of attempt `attempt` (1-based) for a contact: the attempt-th entry of its plan's
 * outcomes ("BUSY,UNANSWERED,ANSWERED"), ANSWERED once the list is used up or when there is none.
 * `INVALID_NUMBER` is a permanent failure.
 */
export function simulatedAttempt(metadata: Record<string, unknown> | null | undefined, attempt: number): SimulatedAttempt {
  const plan = planOf(outcomesOf(metadata), OUTCOMES, (entry) => entry.toUpperCase());
  const step = plan[attempt - 1] ?? 'ANSWERED';
  if (step === 'INVALID_NUMBER') return { outcome: 'FAILED', permanent: true };
  return { outcome: step as CallOutcome, permanent: false };
}

export type { SelfDrivenCall as SimulatedCall, SelfDrivenStep as SimulatedStep };

/**
 * Where a simulated call stands at `now`: every step whose time has come is taken in one go
 * (queued, ringing for `ringSeconds` or the dial timeout, then answered for `talkSeconds` or
 * ended as the contact's plan says), so a call of instant steps ends in one pass.
 */
export function simulatedStep(call: SelfDrivenCall, now: Date, timing: SimulatorTiming): SelfDrivenStep {
  let { status, answeredAt } = call;
  let at = call.deadlineAt;
  for (;;) {
    let deadlineAt: Date;
    if (status === 'QUEUED') {
      status = 'RINGING';
      deadlineAt = addSeconds(at, Math.min(timing.ringSeconds, call.dialTimeout));
    } else if (status === 'RINGING') {
      const plan =
        call.direction === 'INCOMING'
          ? { outcome: 'ANSWERED' as const, permanent: false }
          : simulatedAttempt(call.contactMetadata, call.attempt);
      if (plan.outcome !== 'ANSWERED') {
        return {
          live: false,
          outcome: plan.outcome,
          endedAt: at,
          answeredAt: null,
          permanent: plan.permanent,
          failureReason: failureReasonOf(plan),
        };
      }
      status = 'IN_PROGRESS';
      answeredAt = at;
      deadlineAt = addSeconds(at, timing.talkSeconds);
      // The verdict is heard at the answer: the call stops there for it, whatever comes after.
      if (call.detectsAnsweringMachine && call.direction === 'OUTGOING') {
        return { live: true, status, answeredAt, deadlineAt, answeredBy: simulatedAnswerer(call.contactMetadata, call.attempt) };
      }
    } else {
      return { live: false, outcome: 'ANSWERED', endedAt: at, answeredAt: answeredAt ?? at, permanent: false, failureReason: null };
    }
    if (deadlineAt > now) return { live: true, status, answeredAt, deadlineAt };
    at = deadlineAt;
  }
}

export interface SimulatorTiming {
  ringSeconds: number;
  talkSeconds: number;
}

function failureReasonOf(plan: SimulatedAttempt): string | null {
  if (plan.permanent) return 'The number is not a valid, callable number.';
  return plan.outcome === 'FAILED' ? 'The call could not be connected.' : null;
}
