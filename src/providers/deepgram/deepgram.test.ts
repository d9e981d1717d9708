import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../errors.ts';
import type { LiveRecognition, RecognitionEvent } from '../types.ts';
import { fluxTurn, startFakeDeepgram, utterance } from './fake-server.ts';
import { createDeepgramStt, type LiveSpeechToText } from './live-recognition.ts';

// Live speech-to-text through Deepgram's SDK against a local server speaking Deepgram's WebSocket
// protocol, which records what it received and answers from a script keyed to the audio's bytes.
let fake: Awaited<ReturnType<typeof startFakeDeepgram>>;
let stt: LiveSpeechToText;
const TIMEOUT_MS = 2_000;
const PHONE = { encoding: 'mulaw', sampleRate: 8000 } as const;
/** 20 ms of 8 kHz μ-law, every byte the frame's number, so the order of the bytes shows. */
const frame = (index: number) => Buffer.alloc(160, index);

beforeAll(async () => {
  fake = await startFakeDeepgram();
  stt = createDeepgramStt({ baseUrl: fake.url, apiKey: fake.apiKey, timeoutMs: TIMEOUT_MS });
});
afterAll(async () => {
  await fake?.close();
});

async function collect(recognition: LiveRecognition): Promise<RecognitionEvent[]> {
  const seen: RecognitionEvent[] = [];
  for await (const event of recognition.events) seen.push(event);
  return seen;
}

async function failureOf(recognition: LiveRecognition): Promise<{ error: ProviderError; before: RecognitionEvent[] }> {
  const before: RecognitionEvent[] = [];
  try {
    for await (const event of recognition.events) before.push(event);
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return { error: error as ProviderError, before };
  }
  throw new Error(`the events ended without an error after ${JSON.stringify(before)}`);
}

async function until<T>(what: string, probe: () => T | undefined | false): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('Deepgram live recognition', () => {
  it('opens /v1/listen with the key and the stream’s parameters, sends the audio in order (also what came before the socket opened) and maps the replies', async () => {
    fake.script(...utterance('Yes, I can talk now.', { startsAfterBytes: 320, endsAfterBytes: 1600 }), {
      atClose: true,
      say: 'Results',
      transcript: 'Thanks.',
      final: true,
      speechFinal: true,
    });
    const recognition = stt.listen(PHONE, { language: 'en-US' });
    const events = collect(recognition);
    // Sent at once: the socket is not open yet, so these wait in order.
    for (let i = 0; i < 10; i++) recognition.send(frame(i));
    const session = await until('the connection', () => fake.sessions.at(-1)?.audioFrames.length === 10 && fake.sessions.at(-1));
    for (let i = 10; i < 12; i++) recognition.send(frame(i));
    await recognition.close();

    expect(session.authorization).toBe(`Token ${fake.apiKey}`);
    expect(session.query).toEqual({
      model: 'nova-3',
      language: 'en-US',
      encoding: 'mulaw',
      sample_rate: '8000',
      channels: '1',
      interim_results: 'true',
      vad_events: 'true',
      endpointing: '300',
      utterance_end_ms: '1000',
      smart_format: 'true',
      punctuate: 'true',
    });
    expect(fake.audioOf(session)).toEqual(Buffer.concat(Array.from({ length: 12 }, (_, i) => frame(i))));
    expect(session.controlMessages.at(-1)).toEqual({ type: 'CloseStream' });
    expect(await events).toEqual([
      { type: 'speech_started' },
      { type: 'transcript', text: 'Yes,', final: false },
      { type: 'transcript', text: 'Yes, I', final: false },
      { type: 'transcript', text: 'Yes, I can', final: false },
      { type: 'transcript', text: 'Yes, I can talk', final: false },
      { type: 'transcript', text: 'Yes, I can talk now.', final: true },
      // speech_final ended it (after the endpointing's 300 ms); the UtteranceEnd that followed is the same end, not a second one.
      { type: 'utterance_end', afterSilenceMs: 300 },
      // What the server flushed after CloseStream, before it closed: close() waited for it.
      { type: 'transcript', text: 'Thanks.', final: true },
      { type: 'utterance_end', afterSilenceMs: 300 },
    ]);
    await session.closed;
  });

  it('ends an utterance at UtteranceEnd when endpointing never fired, and takes pcm16, the language and another model', async () => {
    fake.script(
      { afterBytes: 640, say: 'SpeechStarted' },
      { afterBytes: 3200, say: 'Results', transcript: 'Hola, buenos días', final: true },
      { afterBytes: 3200, say: 'Results', transcript: '', final: true, speechFinal: true },
      { afterBytes: 6400, say: 'UtteranceEnd' },
    );
    const recognition = stt.listen({ encoding: 'pcm16', sampleRate: 16000 }, { language: 'es', model: 'nova-2-phonecall' });
    const events = collect(recognition);
    for (let i = 0; i < 20; i++) recognition.send(Buffer.alloc(320, i));
    await recognition.close();
    expect(fake.sessions.at(-1)!.query).toMatchObject({
      encoding: 'linear16',
      sample_rate: '16000',
      language: 'es',
      model: 'nova-2-phonecall',
    });
    expect(await events).toEqual([
      { type: 'speech_started' },
      { type: 'transcript', text: 'Hola, buenos días', final: true },
      { type: 'utterance_end', afterSilenceMs: 300 },
    ]);
  });

  it('sends a KeepAlive text frame while no audio flows, so Deepgram does not close an idle stream', async () => {
    fake.script();
    const quiet = createDeepgramStt({ baseUrl: fake.url, apiKey: fake.apiKey, timeoutMs: TIMEOUT_MS }, { keepAliveMs: 20 });
    const recognition = quiet.listen(PHONE, { language: 'en' });
    const events = collect(recognition);
    recognition.send(frame(1));
    const session = await until(
      'a KeepAlive',
      () => fake.sessions.at(-1)?.controlMessages.some((message) => message.type === 'KeepAlive') && fake.sessions.at(-1),
    );
    await recognition.close();
    expect(fake.audioOf(session)).toEqual(frame(1));
    expect(session.controlMessages.at(-1)).toEqual({ type: 'CloseStream' });
    expect(await events).toEqual([]);
  });

  it('turns a refused key (401 at the upgrade) into a final ProviderError that never shows the key', async () => {
    const wrongKey = 'dg-wrong-key-0123456789';
    const recognition = createDeepgramStt({ baseUrl: fake.url, apiKey: wrongKey, timeoutMs: TIMEOUT_MS }).listen(PHONE, {
      language: 'en',
    });
    recognition.send(frame(1));
    const { error, before } = await failureOf(recognition);
    expect(before).toEqual([]);
    expect(error.message).toBe('Deepgram refused the API key (HTTP 401).');
    expect(error).toMatchObject({ status: 401, retryable: false });
    expect(error.message).not.toContain(wrongKey);
    await recognition.close(); // already over: resolves at once
  });

  it('turns a connection dropped mid-stream into a retryable ProviderError, after the events that came before it', async () => {
    fake.script(
      { afterBytes: 160, say: 'SpeechStarted' },
      { afterBytes: 480, say: 'Results', transcript: 'I was', final: false },
      { afterBytes: 640, say: 'drop' },
    );
    const recognition = stt.listen(PHONE, { language: 'en' });
    const failed = failureOf(recognition);
    for (let i = 0; i < 5; i++) recognition.send(frame(i));
    const { error, before } = await failed;
    expect(before).toEqual([{ type: 'speech_started' }, { type: 'transcript', text: 'I was', final: false }]);
    expect(error.message).toBe('Deepgram closed the stream unexpectedly (WebSocket code 1006).');
    expect(error.retryable).toBe(true);
  });

  it('names the reason Deepgram gives when it closes the stream itself', async () => {
    fake.script({ afterBytes: 160, say: 'close', code: 1011, reason: 'NET-0001' });
    const recognition = stt.listen(PHONE, { language: 'en' });
    const failed = failureOf(recognition);
    recognition.send(frame(0));
    const { error } = await failed;
    expect(error.message).toBe('Deepgram closed the stream unexpectedly (WebSocket code 1011: NET-0001).');
    expect(error).toMatchObject({ retryable: true, code: 1011 });
  });

  it('stops at the caller’s abort: the connection is closed and the events end with a cancellation', async () => {
    fake.script();
    const controller = new AbortController();
    const recognition = stt.listen(PHONE, { language: 'en', signal: controller.signal });
    const failed = failureOf(recognition);
    recognition.send(frame(0));
    const session = await until('the audio', () => fake.sessions.at(-1)?.audioFrames.length === 1 && fake.sessions.at(-1));
    controller.abort();
    const { error } = await failed;
    expect(error).toMatchObject({ message: 'Deepgram: the recognition was cancelled.', retryable: false });
    await session.closed;
    expect(session.controlMessages).toEqual([]);
  });

  it('fails at once, without connecting, when no key is configured (never the environment’s)', async () => {
    const before = fake.sessions.length;
    const recognition = createDeepgramStt({ baseUrl: fake.url, timeoutMs: TIMEOUT_MS }).listen(PHONE, {
      language: 'en',
    });
    const { error } = await failureOf(recognition);
    expect(error).toMatchObject({ message: 'Deepgram: no API key is configured.', retryable: false });
    expect(fake.sessions.length).toBe(before);
  });

  describe('Flux (/v2/listen), whose model ends the turns itself', () => {
    // A server of their own: each connection takes the next script, and these must not take another test's.
    let fake: Awaited<ReturnType<typeof startFakeDeepgram>>;
    let stt: LiveSpeechToText;
    beforeAll(async () => {
      fake = await startFakeDeepgram();
      stt = createDeepgramStt({ baseUrl: fake.url, apiKey: fake.apiKey, timeoutMs: TIMEOUT_MS });
    });
    afterAll(async () => {
      await fake?.close();
    });

    it('opens /v2/listen for a flux- model with its end-of-turn thresholds, and reports its turns: eager, resumed, ended', async () => {
      fake.script(
        ...fluxTurn("I'd like to book a table for two.", {
          startsAfterBytes: 160,
          eagerAfterBytes: 800,
          eagerText: "I'd like to book.",
          resumedAfterBytes: 1120,
          endsAfterBytes: 1600,
        }),
      );
      const before = fake.sessions.length;
      const recognition = stt.listen(PHONE, { language: 'en-US', model: 'flux-general-en' });
      const events = collect(recognition);
      for (let i = 0; i < 12; i++) recognition.send(frame(i));
      const session = await until('the audio', () => fake.sessions[before]?.audioFrames.length === 12 && fake.sessions[before]);
      await until('the end of the turn', () => session.sent.some((message) => message.event === 'EndOfTurn'));
      await recognition.close();
      expect(session.query).toEqual({
        model: 'flux-general-en',
        encoding: 'mulaw',
        sample_rate: '8000',
        eot_threshold: '0.7',
        eager_eot_threshold: '0.5',
      });
      expect(session.sent[0]).toMatchObject({ type: 'Connected', sequence_id: 0 });
      expect(await events).toEqual([
        { type: 'speech_started', confirmed: true },
        { type: 'end_of_turn', text: "I'd like to book.", eager: true },
        { type: 'turn_resumed' },
        { type: 'transcript', text: "I'd like to book a table for two.", final: false },
        { type: 'end_of_turn', text: "I'd like to book a table for two.", eager: true },
        { type: 'end_of_turn', text: "I'd like to book a table for two.", eager: false },
      ]);
    });

    it("fails the recognition with Flux's Error message", async () => {
      fake.script({ afterBytes: 160, say: 'FluxError', code: 'INTERNAL_SERVER_ERROR', description: 'The model failed.' });
      const recognition = stt.listen(PHONE, { language: 'en-US', model: 'flux-general-en' });
      const failed = failureOf(recognition);
      for (let i = 0; i < 3; i++) recognition.send(frame(i));
      const { error, before } = await failed;
      expect(error).toMatchObject({ message: 'Deepgram Flux: INTERNAL_SERVER_ERROR: The model failed.', retryable: false });
      expect(before).toEqual([]);
      await recognition.close();
    });
  });
});
