import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeRealtime } from '../src/providers/openai-compatible/fake-realtime.ts';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';
import { marksOf, speech } from './voice-line.ts';

// Issue 39: an agent converses through a speech-to-speech model. Twilio's side of the media stream
// and OpenAI's Realtime API are local fakes speaking their real protocols; the stages between are ours.
let voice: TwilioVoice;
let realtime: Awaited<ReturnType<typeof startFakeRealtime>>;

beforeAll(async () => {
  realtime = await startFakeRealtime({ apiKey: 'rt-test-key' });
  voice = await startTwilioVoice({
    // The service's model server is the fake Realtime API (the agent's realtime runs on the OpenAI-compatible connection).
    LLM_API_URL: `${realtime.url}/v1`,
    LLM_API_KEY: 'rt-test-key',
    RATE_REALTIME_MODELS: JSON.stringify({ 'gpt-realtime': { textInput: '4', textOutput: '16', audioInput: '32', audioOutput: '64' } }),
    RATE_PROVIDERS: JSON.stringify({ TWILIO: { telephonyPerMinute: '0.3' }, OPENAI_COMPATIBLE: { sttPerMinute: '0.6' } }),
  });
});
afterAll(async () => {
  await voice.close();
  await realtime.close();
});

const REALTIME_AGENT = { realtime: { model: 'gpt-realtime' }, systemPrompt: 'You book visits to the clinic.', tools: ['end_call'] };
const OPENING = 'Hello, this is the clinic. How can I help?';
const payloadBytes = (placed: { stream: { received: { event: string; media?: { payload: string } }[] } }) =>
  placed.stream.received.filter((m) => m.event === 'media').reduce((sum, m) => sum + Buffer.from(m.media!.payload, 'base64').length, 0);

/** A call placed with a realtime agent, its stream connected, its opening heard (four chunks of 50 ms). */
async function connectedCall(agentFields: Record<string, unknown> = {}) {
  const placed = await voice.placedCall({ ...REALTIME_AGENT, ...agentFields });
  const sessionsBefore = realtime.sessions.length;
  realtime.script({
    text: OPENING,
    audioBytes: 1600,
    chunks: 4,
    usage: { inputText: 100, inputAudio: 0, outputText: 20, outputAudio: 200 },
  });
  const stream = await voice.connect(placed);
  const session = await until('the realtime session', () => realtime.sessions[sessionsBefore]);
  await until('the opening', () => marksOf(stream).length >= 4);
  return { placed, stream, session };
}

/** The model's next answer: `text` over `audioBytes` of μ-law in `chunks` deltas (its usage, a token of each kind, unchecked here). */
const scriptAnswer = (text: string, audioBytes: number, chunks: number) =>
  realtime.script({ text, audioBytes, chunks, usage: { inputText: 1, inputAudio: 1, outputText: 1, outputAudio: 1 } });

async function endedCall(placed: PlacedCall) {
  return until('the ended call', async () => {
    const got = await voice.getCall(placed);
    return got.status === 'ENDED' ? got : undefined;
  });
}

describe('a call with a speech-to-speech agent', () => {
  it('sets up the model, forwards the caller as μ-law, answers a turn, runs end_call, and bills the tokens the server reported', async () => {
    const { placed, stream, session } = await connectedCall();
    // The socket: the model asked for, the connection's key, the phone line's μ-law both ways, server turn detection.
    expect(session.query).toEqual({ model: 'gpt-realtime' });
    expect(session.authorization).toBe('Bearer rt-test-key');
    const setup = session.session() as {
      instructions: string;
      audio: {
        input: { format: object; turn_detection: object | null; transcription?: object };
        output: { format: object; voice: string };
      };
      tools: { type: string; name: string }[];
    };
    expect(setup.instructions).toContain('You book visits to the clinic.');
    expect(setup.audio.input).toMatchObject({
      format: { type: 'audio/pcmu' },
      turn_detection: { type: 'server_vad', create_response: true, interrupt_response: true },
      transcription: { model: 'whisper-1', language: 'en' },
    });
    expect(setup.audio.output).toEqual({ format: { type: 'audio/pcmu' }, voice: 'marin' });
    expect(setup.tools.map((tool) => [tool.type, tool.name])).toContainEqual(['function', 'end_call']);
    // The opening: the first message said as written, its audio on the wire as it came (μ-law needs no conversion).
    expect(session.received.find((event) => event.type === 'response.create')).toMatchObject({
      response: { instructions: expect.stringContaining(OPENING) },
    });
    expect(payloadBytes({ stream })).toBe(1600);
    expect((await voice.getCall(placed)).status).toBe('IN_PROGRESS');

    // The caller's audio reaches the model unchanged.
    const said = Buffer.from(Array.from({ length: 800 }, (_, i) => i % 256));
    await stream.sendAudio(said);
    await until('the caller audio', () => session.audio().length >= 800);
    expect(session.audio().equals(said)).toBe(true);

    // A turn the server detected: answered, then end_call runs; its result goes back, and the call hangs up after the words.
    realtime.script({
      text: 'We open at eight. Goodbye.',
      audioBytes: 800,
      chunks: 2,
      functionCall: { name: 'end_call', arguments: '{}' },
      usage: { inputText: 150, inputAudio: 300, outputText: 30, outputAudio: 400 },
    });
    await session.callerTurn('When do you open tomorrow?', { transcriptionSeconds: 2 });
    const hangup = await until('the hang-up', () =>
      voice.twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
    );
    expect(hangup.authorized).toBe(true);
    expect(session.received.find((event) => event.type === 'conversation.item.create')).toMatchObject({
      item: { type: 'function_call_output', call_id: expect.any(String), output: 'The call ends after this turn.' },
    });
    expect(await stream.closed).toMatchObject({ code: 1000 });
    expect(await voice.twilio.sendStatus(placed.sid, 'completed', { CallDuration: '12' })).toBe(204);

    const call = await endedCall(placed);
    expect(call).toMatchObject({ outcome: 'ANSWERED', endReason: 'agent_ended' });
    expect(call.transcript.map((turn: { role: string; text: string; by?: string }) => [turn.role, turn.text, turn.by ?? null])).toEqual([
      ['agent', OPENING, 'model:gpt-realtime'],
      ['contact', 'When do you open tomorrow?', null],
      ['agent', 'We open at eight. Goodbye.', 'model:gpt-realtime'],
      ['tool', 'The call ends after this turn.', null],
    ]);
    // Billed: the tokens of each response.done, text and audio apart; the seconds the server transcribed; no text-to-speech.
    expect(call.usage).toMatchObject({
      llmModel: 'gpt-realtime',
      llmProvider: 'OPENAI_COMPATIBLE',
      llmInputTokens: 550,
      llmInputAudioTokens: 300,
      llmOutputTokens: 650,
      llmOutputAudioTokens: 600,
      llmTokens: 1200,
      sttSeconds: 2,
      sttProvider: 'OPENAI_COMPATIBLE',
      ttsCharacters: 0,
      ttsProvider: null,
    });
    // (250 × 4 + 300 × 32 + 50 × 16 + 600 × 64) per million; 2 s at 0.6 a minute; 12 s at 0.3 a minute.
    expect(call.cost).toMatchObject({ llm: '0.0498', stt: '0.0200', tts: '0.0000', telephony: '0.0600' });
  });

  it('clears the line when the caller speaks over the agent, truncates at what was heard, and records the words heard', async () => {
    const { placed, stream, session } = await connectedCall();
    const marksBefore = marksOf(stream).length;
    stream.holdMarks(true);
    // Ten words over 200 ms of audio, in four chunks of 50 ms.
    scriptAnswer('Parking is behind the building and free for all patients.', 1600, 4);
    await session.callerTurn('Tell me about parking.');
    await until('the long answer', () => marksOf(stream).length >= marksBefore + 4);
    // The caller heard two chunks (100 ms); audio sent after the marks proves they arrived first.
    stream.releaseMarks(2);
    const appended = session.audio().length;
    await stream.sendAudio(speech(160));
    await until('the audio after the marks', () => session.audio().length >= appended + 160);
    session.speechStarted();
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    const truncate = await until('the truncate', () => session.received.find((event) => event.type === 'conversation.item.truncate'));
    expect(truncate).toMatchObject({ content_index: 0, audio_end_ms: 100, item_id: expect.stringMatching(/^item_/) });
    stream.holdMarks(false);

    scriptAnswer('It is free.', 400, 1);
    await session.callerTurn('Just the price.');
    const call = await until('the second answer recorded', async () => {
      const got = await voice.getCall(placed);
      return got.transcript.length >= 5 ? got : undefined;
    });
    // Half of the audio was heard: half of the words, cut at a word; one clear however many chunks were queued.
    expect(call.transcript[2]).toMatchObject({ role: 'agent', text: 'Parking is behind the building', interrupted: true });
    expect(call.transcript.slice(3).map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['contact', 'Just the price.'],
      ['agent', 'It is free.'],
    ]);
    expect(stream.received.filter((m) => m.event === 'clear')).toHaveLength(1);
    stream.stop();
    await stream.closed;
  });

  it('lets our turn detection decide: the caller heard by our recogniser, each turn committed and answered', async () => {
    // Deepgram's recognition opens with the stream: its words are scripted first.
    voice.deepgram.script(...utterance('When do you open?', { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    const { placed, stream, session } = await connectedCall({ realtime: { model: 'gpt-realtime', turnDetection: 'pipeline' } });
    expect((session.session() as { audio: { input: { turn_detection: unknown } } }).audio.input.turn_detection).toBeNull();
    realtime.script({
      text: 'We open at eight.',
      audioBytes: 400,
      chunks: 1,
      usage: { inputText: 1, inputAudio: 2, outputText: 3, outputAudio: 4 },
    });
    await stream.sendAudio(speech(1600));
    await until('the answer', () => marksOf(stream).length >= 5);
    const types = session.received.map((event) => event.type);
    expect(types.slice(types.indexOf('input_audio_buffer.commit'))).toEqual(['input_audio_buffer.commit', 'response.create']);
    // The model heard the caller's audio too, as our recogniser did.
    expect(session.audio().length).toBe(1600);
    const call = await until('the turn recorded', async () => {
      const got = await voice.getCall(placed);
      return got.transcript.length >= 3 ? got : undefined;
    });
    expect(call.transcript.slice(1).map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['contact', 'When do you open?'],
      ['agent', 'We open at eight.'],
    ]);
    stream.stop();
    await stream.closed;
  });
});
