import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { EndReason, TranscriptTurn } from '../src/modules/calls/service.ts';
import { openSession } from '../src/modules/conversation/engine.ts';
import { cutToHeard } from '../src/modules/media/pipeline/conversation.ts';
import { startRelayCall } from '../src/modules/media/relay-call.ts';
import { systemClock } from '../src/platform/clock.ts';
import { until } from './harness.ts';

// ConversationRelay reports no end of playback: the relay call estimates it from the words' length.
// The real engine (its retrieval agent, no model) on one side; on the other, the text line as
// Twilio's side of it, timing what it is sent.
function relayCall(options: { firstMessage: string; charactersPerSecond: number; silenceTimeoutMs?: number }) {
  const sent: { token: string; last: boolean; at: number }[] = [];
  const recorded: TranscriptTurn[] = [];
  let hungUp: { reason: EndReason; at: number } | undefined;
  const session = openSession({
    agentName: 'Clinic',
    systemPrompt: '',
    firstMessage: options.firstMessage,
    language: 'en-US',
    model: null,
    toolbox: { definitions: [], run: () => Promise.reject(new Error('no tools')) },
    search: () => Promise.resolve([]),
    similarityToQuestion: (_question, sentences) => Promise.resolve(sentences.map(() => 0)),
    knowledgeInContext: false,
    clock: systemClock,
    startedAt: new Date(),
  });
  const call = startRelayCall({
    session,
    line: { send: (token, last) => sent.push({ token, last, at: performance.now() }) },
    clock: systemClock,
    record: async (turns) => (recorded.push(...turns), true),
    hangUp: async (reason) => void (hungUp = { reason, at: performance.now() }),
    silenceTimeoutMs: options.silenceTimeoutMs ?? 60_000,
    maxDurationMs: 60_000,
    charactersPerSecond: options.charactersPerSecond,
    onError: (error) => {
      throw error;
    },
  });
  return { call, sent, recorded, hungUp: () => hungUp };
}

describe('a relayed call, whose provider says nothing of playback', () => {
  it('hangs up only once the agent’s last words were played, by their length at the speaking rate', async () => {
    const relay = relayCall({ firstMessage: 'Hi.', charactersPerSecond: 40 });
    await until('the opening', () => relay.sent.some((s) => s.last));
    relay.call.prompt('Bye then', true);
    const hungUp = await until('the hang-up', relay.hungUp, 5_000);
    const goodbye = relay.sent.filter((s) => s.token === 'Thank you for your time. Goodbye.');
    expect(goodbye).toHaveLength(1);
    expect(hungUp.reason).toBe('agent_ended');
    // 33 characters at 40 a second: 825 ms of speech after they were sent (timers may fire a millisecond early).
    expect(hungUp.at - goodbye[0]!.at).toBeGreaterThanOrEqual(820);
    expect(relay.recorded.map((turn) => turn.text)).toEqual(['Hi.', 'Bye then', 'Thank you for your time. Goodbye.']);
  });

  it('counts the caller’s silence from the estimated end of the agent’s words', async () => {
    const opening = 'Hello, this is the clinic. How can I help?'; // 42 characters: 1,050 ms at 40 a second
    const relay = relayCall({ firstMessage: opening, charactersPerSecond: 40, silenceTimeoutMs: 300 });
    const asked = await until('the silence prompt', () => relay.sent.find((s) => s.token === 'Are you still there?'), 5_000);
    expect(asked.at - relay.sent[0]!.at).toBeGreaterThanOrEqual(1_345);
    await relay.call.stop();
  });
});

describe('cutToHeard', () => {
  const agent = (text: string): TranscriptTurn => ({ role: 'agent', text, at: '', startMs: 0, endMs: 0, by: 'model:m' });
  const tool: TranscriptTurn = { role: 'tool', text: 'Booked.', at: '', startMs: 0, endMs: 0 };

  it('gives each agent turn its share of what was heard, in order, keeps the tools that ran, and no turn of which nothing was heard', () => {
    const turns = [agent('Let me check.'), tool, agent('You are booked for Monday at nine.')];
    expect(cutToHeard(turns, 'Let me check. You are booked').map((turn) => [turn.text, turn.interrupted ?? false])).toEqual([
      ['Let me check.', false],
      ['Booked.', false],
      ['You are booked', true],
    ]);
    expect(cutToHeard(turns, 'Let me').map((turn) => [turn.text, turn.interrupted ?? false])).toEqual([
      ['Let me', true],
      ['Booked.', false],
    ]);
    expect(cutToHeard(turns, '').map((turn) => turn.text)).toEqual(['Booked.']);
  });
});
