import { randomUUID } from 'node:crypto';
import { addSeconds } from '../../platform/clock.ts';
import { Int } from '../../platform/settings.ts';
import type { Provider } from '../types.ts';
import { simulatedStep, type SimulatorTiming } from './calls.ts';

const timingOf = (settings: Readonly<Record<string, string>>): SimulatorTiming => ({
  ringSeconds: Number(settings.SIMULATOR_RING_SECONDS),
  talkSeconds: Number(settings.SIMULATOR_TALK_SECONDS),
});

/**
 * The simulator: calls and SMS that never leave the machine, for rehearsing campaigns offline.
 * Its calls drive themselves (no status callbacks): each is placed as its attempt is written and
 * moves on at its deadlines.
 */
export const simulator: Provider = {
  name: 'SIMULATOR',
  title: 'Simulator',
  settings: {
    SIMULATOR_RING_SECONDS: Int(2, 0, 300, 'How long a SIMULATOR call rings before its outcome.'),
    SIMULATOR_TALK_SECONDS: Int(
      6,
      0,
      3600,
      'The longest a simulated contact stays on the line once answered: the call ends then, unless the agent ended it first (raise it to rehearse with a slow model).',
    ),
  },
  telephony: {
    connect: () => ({
      dial: (request) => Promise.resolve({ providerCallId: `sim-${request.callId}` }),
      // Its calls end where they are tracked (the call's own record); there is no line to drop.
      hangup: () => Promise.resolve(),
    }),
    placeAtOnce: (request, now, settings) => ({
      providerCallId: `sim-${request.callId}`,
      status: 'RINGING',
      deadlineAt: addSeconds(now, Math.min(timingOf(settings).ringSeconds, request.dialTimeoutSec)),
    }),
    advance: (call, now, settings) => simulatedStep(call, now, timingOf(settings)),
    // metadata.simulate.answeredBy says who answers a call whose campaign asks.
    answeringMachineDetection: true,
  },
  sms: {
    connect: () => ({
      send: () => Promise.resolve({ providerMessageId: `sim-sms-${randomUUID()}`, status: 'accepted' }),
    }),
  },
};
