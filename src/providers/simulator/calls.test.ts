import { describe, expect, it } from 'vitest';
import { simulatedAnswerer, simulatedAttempt, simulatedStep, type SimulatedCall } from './calls.ts';

const t0 = new Date('2026-03-02T15:00:00.000Z');
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
const ringing = (overrides: Partial<SimulatedCall> = {}): SimulatedCall => ({
  status: 'RINGING',
  direction: 'OUTGOING',
  attempt: 1,
  dialTimeout: 30,
  deadlineAt: t0,
  answeredAt: null,
  contactName: null,
  contactMetadata: null,
  detectsAnsweringMachine: false,
  ...overrides,
});

describe('simulated attempts', () => {
  it('follows metadata.simulate attempt by attempt, then answers', () => {
    const metadata = { simulate: 'busy, UNANSWERED,invalid_number' };
    expect(simulatedAttempt(metadata, 1)).toEqual({ outcome: 'BUSY', permanent: false });
    expect(simulatedAttempt(metadata, 2)).toEqual({ outcome: 'UNANSWERED', permanent: false });
    expect(simulatedAttempt(metadata, 3)).toEqual({ outcome: 'FAILED', permanent: true });
    expect(simulatedAttempt(metadata, 4)).toEqual({ outcome: 'ANSWERED', permanent: false });
    expect(simulatedAttempt(null, 1)).toEqual({ outcome: 'ANSWERED', permanent: false });
  });

  it('reads metadata.simulate.outcomes given as an array as it reads the string', () => {
    const metadata = { simulate: { outcomes: ['busy', 'UNANSWERED', 'INVALID_NUMBER'] } };
    expect(simulatedAttempt(metadata, 1)).toEqual({ outcome: 'BUSY', permanent: false });
    expect(simulatedAttempt(metadata, 2)).toEqual({ outcome: 'UNANSWERED', permanent: false });
    expect(simulatedAttempt(metadata, 3)).toEqual({ outcome: 'FAILED', permanent: true });
    expect(simulatedAttempt(metadata, 4)).toEqual({ outcome: 'ANSWERED', permanent: false });
    expect(simulatedAnswerer({ simulate: { answeredBy: ['machine', 'human'] } }, 1)).toBe('machine');
  });

  it('reads the plan from metadata.simulate.outcomes when simulate is an object', () => {
    const metadata = { simulate: { outcomes: 'BUSY', say: ['Hi'] } };
    expect(simulatedAttempt(metadata, 1)).toEqual({ outcome: 'BUSY', permanent: false });
    expect(simulatedAttempt(metadata, 2)).toEqual({ outcome: 'ANSWERED', permanent: false });
    expect(simulatedAttempt({ simulate: { say: ['Hi'] } }, 1)).toEqual({ outcome: 'ANSWERED', permanent: false });
  });
});

describe('simulated steps', () => {
  const timing = { ringSeconds: 4, talkSeconds: 20 };

  it('takes one step at a time while the next deadline lies ahead', () => {
    expect(simulatedStep(ringing(), t0, timing)).toEqual({ live: true, status: 'IN_PROGRESS', answeredAt: t0, deadlineAt: at(20) });
    expect(simulatedStep(ringing({ status: 'QUEUED' }), t0, timing)).toEqual({
      live: true,
      status: 'RINGING',
      answeredAt: null,
      deadlineAt: at(4),
    });
    expect(simulatedStep(ringing({ status: 'IN_PROGRESS', answeredAt: at(-20) }), t0, timing)).toEqual({
      live: false,
      outcome: 'ANSWERED',
      endedAt: t0,
      answeredAt: at(-20),
      permanent: false,
      failureReason: null,
    });
  });

  it('takes every step whose time has come in one go, each at its own time', () => {
    expect(simulatedStep(ringing({ status: 'QUEUED' }), at(24), timing)).toEqual({
      live: false,
      outcome: 'ANSWERED',
      endedAt: at(24),
      answeredAt: at(4),
      permanent: false,
      failureReason: null,
    });
    expect(simulatedStep(ringing({ status: 'QUEUED' }), at(23), timing)).toEqual({
      live: true,
      status: 'IN_PROGRESS',
      answeredAt: at(4),
      deadlineAt: at(24),
    });
    expect(simulatedStep(ringing(), t0, { ringSeconds: 0, talkSeconds: 0 })).toEqual({
      live: false,
      outcome: 'ANSWERED',
      endedAt: t0,
      answeredAt: t0,
      permanent: false,
      failureReason: null,
    });
  });

  it('rings no longer than the dial timeout', () => {
    expect(simulatedStep(ringing({ status: 'QUEUED', dialTimeout: 10 }), t0, { ringSeconds: 45, talkSeconds: 0 })).toEqual({
      live: true,
      status: 'RINGING',
      answeredAt: null,
      deadlineAt: at(10),
    });
  });

  it("ends an unanswered attempt when its ringing ends, as the contact's plan says", () => {
    const contactMetadata = { simulate: 'BUSY,INVALID_NUMBER' };
    expect(simulatedStep(ringing({ contactMetadata }), t0, timing)).toEqual({
      live: false,
      outcome: 'BUSY',
      endedAt: t0,
      answeredAt: null,
      permanent: false,
      failureReason: null,
    });
    expect(simulatedStep(ringing({ contactMetadata, attempt: 2, status: 'QUEUED' }), at(9), timing)).toEqual({
      live: false,
      outcome: 'FAILED',
      endedAt: at(4),
      answeredAt: null,
      permanent: true,
      failureReason: 'The number is not a valid, callable number.',
    });
  });

  it('answers every incoming call, whatever the plan', () => {
    expect(simulatedStep(ringing({ direction: 'INCOMING', contactMetadata: { simulate: 'BUSY' } }), t0, timing)).toMatchObject({
      live: true,
      status: 'IN_PROGRESS',
    });
  });

  it('says who answered at the answer when the campaign asks, even when the talk time is over too', () => {
    const contactMetadata = { simulate: { answeredBy: 'machine' } };
    expect(simulatedStep(ringing({ contactMetadata, detectsAnsweringMachine: true }), at(60), timing)).toEqual({
      live: true,
      status: 'IN_PROGRESS',
      answeredAt: t0,
      deadlineAt: at(20),
      answeredBy: 'machine',
    });
    // Without detection nobody asks: the call is answered and talked as any other.
    expect(simulatedStep(ringing({ contactMetadata }), at(60), timing)).toMatchObject({ live: false, outcome: 'ANSWERED' });
  });
});

describe('simulated answerers', () => {
  it('reads metadata.simulate.answeredBy attempt by attempt, the last repeating, a person by default', () => {
    const plan = { simulate: { answeredBy: 'Machine, fax,robot,human' } };
    expect([1, 2, 3, 4].map((attempt) => simulatedAnswerer(plan, attempt))).toEqual(['machine', 'fax', 'human', 'human']);
    expect(simulatedAnswerer({ simulate: { answeredBy: 'machine' } }, 3)).toBe('machine');
    expect(simulatedAnswerer({ simulate: 'ANSWERED' }, 1)).toBe('human');
    expect(simulatedAnswerer(null, 1)).toBe('human');
  });
});
