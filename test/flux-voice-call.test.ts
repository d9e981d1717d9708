import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fluxTurn } from '../src/providers/deepgram/fake-server.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type TwilioVoice } from './twilio-voice.ts';
import { marksOf, speech } from './voice-line.ts';

// End of turn by Deepgram Flux: a Twilio call whose agent listens with Flux (`/v2/listen`, the fake
// speaking its TurnInfo messages). On an eager end of turn a reply is prepared; when the caller goes
// on it is dropped, never spoken and never billed, and the turn's end is answered whole.
let voice: TwilioVoice;

beforeAll(async () => {
  voice = await startTwilioVoice();
});
afterAll(() => voice.close());

const FLUX = { provider: 'DEEPGRAM', endOfTurn: 'FLUX' } as const;
type Placed = Awaited<ReturnType<TwilioVoice['placedCall']>>;
type Stream = Awaited<ReturnType<TwilioVoice['connect']>>;

/** The call's turns after the opening are the caller's words and the agent's answer, billed for `tokens`; then the caller hangs up. */
async function expectAnswered(placed: Placed, stream: Stream, turns: [contact: string, agent: string], tokens: [number, number]) {
  const call = await until('the turn answered and recorded', async () => {
    const got = await voice.getCall(placed);
    return got.transcript.length >= 3 ? got : undefined;
  });
  expect(call.transcript.slice(1).map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
    ['contact', turns[0]],
    ['agent', turns[1]],
  ]);
  expect(call.usage).toMatchObject({ llmInputTokens: tokens[0], llmOutputTokens: tokens[1] });
  stream.stop();
  await stream.closed;
}

const answerOf = (request: { body: { messages: unknown[] } }) => (request.body.messages.at(-1) as { content: string }).content;

describe('an agent listening with Deepgram Flux', () => {
  it('prepares a reply on an eager end of turn, drops it unspoken and unbilled when the caller goes on, and answers the whole turn', async () => {
    const placed = await voice.placedCall({ stt: FLUX });
    voice.deepgram.script(
      ...fluxTurn("I'd like to book a table for two.", {
        startsAfterBytes: 800,
        eagerAfterBytes: 2400,
        eagerText: "I'd like to book.",
        resumedAfterBytes: 4000,
        endsAfterBytes: 5600,
      }),
    );
    // The reply prepared for "I'd like to book." (dropped), then the one for the whole turn.
    voice.chat.script(
      { kind: 'stream', text: ['Sure, for which day?'], usage: { prompt_tokens: 500, completion_tokens: 50 } },
      { kind: 'stream', text: ['A table for two, done.'], usage: { prompt_tokens: 70, completion_tokens: 7 } },
    );
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    const asked = voice.chat.received.length;
    const spoken = voice.elevenlabs.speech.length;

    // Up to the eager end of turn: the model is asked, and answers, while the caller may still go on.
    await stream.sendAudio(speech(2400));
    await until('the prepared reply asked', () => voice.chat.received.length === asked + 1);
    expect(answerOf(voice.chat.received[asked]!)).toBe("I'd like to book.");
    // The caller goes on, and ends the turn: answered whole, billed for that answer alone.
    await stream.sendAudio(speech(3200));
    await expectAnswered(placed, stream, ["I'd like to book a table for two.", 'A table for two, done.'], [70, 7]);
    expect(voice.deepgram.sessions.at(-1)!.query).toMatchObject({ model: 'flux-general-en', eager_eot_threshold: '0.5' });
    expect(voice.chat.received.slice(asked).map(answerOf)).toEqual(["I'd like to book.", "I'd like to book a table for two."]);
    // The dropped reply: not in the model's memory for the next answer, never synthesised, not in the transcript, not billed.
    expect(voice.chat.received[asked + 1]!.body.messages.map((message) => (message as { content: string }).content)).not.toContain(
      'Sure, for which day?',
    );
    expect(voice.elevenlabs.speech.slice(spoken).map((request) => request.body.text)).toEqual(['A table for two, done.']);
  });

  it('answers with the prepared reply when the eager end of turn was the end', async () => {
    const placed = await voice.placedCall({ stt: FLUX });
    voice.deepgram.script(
      ...fluxTurn('When do you open tomorrow?', { startsAfterBytes: 800, eagerAfterBytes: 2400, endsAfterBytes: 4000 }),
    );
    voice.chat.script({ kind: 'stream', text: ['We open at eight.'], usage: { prompt_tokens: 60, completion_tokens: 5 } });
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    const asked = voice.chat.received.length;
    await stream.sendAudio(speech(2400));
    await until('the prepared reply asked', () => voice.chat.received.length === asked + 1);
    await stream.sendAudio(speech(1600));
    await expectAnswered(placed, stream, ['When do you open tomorrow?', 'We open at eight.'], [60, 5]);
    // Asked once: the prepared reply is the answer.
    expect(voice.chat.received.slice(asked).map(answerOf)).toEqual(['When do you open tomorrow?']);
  });

  it('refuses FLUX with another provider or a model that is not Flux, and a Flux model with another detector', async () => {
    const { api } = await voice.placeCall();
    const refused = async (stt: Record<string, unknown>) => {
      const response = await api('POST', '/agents', { name: 'Flux', stt });
      expect(response.statusCode).toBe(400);
      return response.json();
    };
    expect(await refused({ provider: 'OPENAI_COMPATIBLE', endOfTurn: 'FLUX' })).toMatchObject({
      code: 'END_OF_TURN_CONFLICT',
      details: [{ path: '/stt/endOfTurn' }],
    });
    expect(await refused({ provider: 'DEEPGRAM', model: 'nova-3', endOfTurn: 'FLUX' })).toMatchObject({ code: 'END_OF_TURN_CONFLICT' });
    expect(await refused({ provider: 'DEEPGRAM', model: 'flux-general-en' })).toMatchObject({ code: 'END_OF_TURN_CONFLICT' });
  });
});
