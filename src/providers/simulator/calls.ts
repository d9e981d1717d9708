/**
 * The simulator's calls: nothing leaves the machine; each call rings, is answered or fails as its
 * contact's `metadata.simulate` plan says, on the timings of SIMULATOR_RING_SECONDS and
 * SIMULATOR_TALK_SECONDS.
 */
import { addSeconds } from '../../platform/clock.ts';
import type { CallOutcome, SelfDrivenCall, SelfDrivenStep } from '../types.ts';

/** An outcome the simulator accepts in a contact's `metadata.simulate` (contract §11). */
const OUTCOMES = new Set(['ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED', 'INVALID_NUMBER']);

export interface SimulatedAttempt {
  outcome: CallOutcome;
  /** An invalid number: FAILED and never retried. */
  permanent: boolean;
}

/**
 * The outcome of attempt `attempt` (1-based) for a contact: the attempt-th entry of
 * `metadata.simulate` ("BUSY,UNANSWERED,ANSWERED"), ANSWERED once the list is used up or when
 * there is none. `INVALID_NUMBER` is a permanent failure.
 */
export function simulatedAttempt(metadata: Record<string, unknown> | null | undefined, attempt: number): SimulatedAttempt {
  const plan =
    typeof metadata?.simulate === 'string'
      ? metadata.simulate
          .split(',')
          .map((s) => s.trim().toUpperCase())
          .filter((s) => OUTCOMES.has(s))
      : [];
  const step = plan[attempt - 1] ?? 'ANSWERED';
  if (step === 'INVALID_NUMBER') return { outcome: 'FAILED', permanent: true };
  return { outcome: step as CallOutcome, permanent: false };
}

/** The fixed lines a simulated answered call records (a real conversation replaces them once the agent converses). */
export function simulatedTranscript(
  answeredAt: Date,
  seconds: number,
  contactName: string | null,
): { role: 'agent' | 'user'; text: string; at: string }[] {
  const at = (fraction: number) => new Date(answeredAt.getTime() + Math.round(seconds * 1000 * fraction)).toISOString();
  const name = contactName ? ` ${contactName}` : '';
  return [
    { role: 'agent', text: `Hello${name}, this is a call from your service provider. Do you have a moment?`, at: at(0) },
    { role: 'user', text: 'Yes, go ahead.', at: at(0.3) },
    { role: 'agent', text: 'Thank you. I am calling to confirm your appointment; is the scheduled time still good for you?', at: at(0.5) },
    { role: 'user', text: 'Yes, that works. Thanks for calling.', at: at(0.8) },
  ];
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
    } else {
      const answered = answeredAt ?? at;
      const seconds = Math.max(0, Math.round((at.getTime() - answered.getTime()) / 1000));
      return {
        live: false,
        outcome: 'ANSWERED',
        endedAt: at,
        answeredAt: answered,
        permanent: false,
        failureReason: null,
        transcript: simulatedTranscript(answered, seconds, call.contactName),
      };
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
