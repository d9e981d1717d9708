import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fakeSmartTurnModel } from '../src/modules/media/turn-detection/smart-turn/fake-model.ts';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { callerSaying, detectorStarted, lineSilence, voicedSpan } from './caller-speech.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';
import { expectReplyPlayedWhole, marksOf } from './voice-line.ts';

// Issue 17, turn-taking with a trained VAD: a Twilio call whose agent listens through an
// OpenAI-compatible `/audio/transcriptions` server. The caller really speaks (eSpeak NG), the
// service's voice-activity detection (Silero) cuts the utterances, and the fake transcription
// server records what it was sent.
const END_OF_SPEECH_MS = 5000;
let voice: TwilioVoice;
let modelDir: string;
let speech: Awaited<ReturnType<typeof startFakeSpeech>>;

beforeAll(async () => {
  speech = await startFakeSpeech();
  // The operator's Smart Turn model: here one of its inputs and outputs that finds every turn complete.
  modelDir = await mkdtemp(join(tmpdir(), 'smart-turn-'));
  await writeFile(join(modelDir, 'smart-turn.onnx'), fakeSmartTurnModel(-100));
  // The longest end-of-speech silence: a turn the detector does not end at the pause waits it out, which no test here does by chance.
  voice = await startTwilioVoice({
    SPEECH_API_URL: `${speech.url}/v1`,
    VOICE_END_OF_SPEECH_MS: String(END_OF_SPEECH_MS),
    SMART_TURN_MODEL_PATH: join(modelDir, 'smart-turn.onnx'),
  });
  // The detector's worker starts with the first call that needs it (seconds on a busy machine);
  // the 2 s silence timeout here would run out before it heard anything.
  await detectorStarted();
}, 60_000);
// A test that fails, or whose model was asked fewer times than scripted, leaves no reply for the next one to take.
afterEach(() => {
  speech.forget();
  voice.chat.forget();
});
afterAll(async () => {
  await voice.close();
  await speech.close();
  await rm(modelDir, { recursive: true, force: true });
});

const placedCall = (agentFields?: Record<string, unknown>) => voice.placedCall(agentFields);
const connect = (placed: PlacedCall) => voice.connect(placed);
const getCall = (placed: PlacedCall) => voice.getCall(placed);

describe('an agent whose speech-to-text hears whole utterances (OpenAI-compatible)', () => {
  const hangUpOf = (placed: PlacedCall) =>
    until('the hang-up', () =>
      voice.twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
    );

  it("cuts the caller's words out of the line with Silero, has them transcribed, and converses", async () => {
    const placed = await placedCall({ stt: { provider: 'OPENAI_COMPATIBLE' } });
    const question = await callerSaying('When do you open tomorrow?');
    speech.script({ kind: 'text', text: 'When do you open tomorrow?' });
    voice.chat.script({
      kind: 'stream',
      text: ['We open at eight.'],
      toolCalls: [{ id: 'end_1', name: 'end_call', arguments: ['{}'] }],
      usage: { prompt_tokens: 90, completion_tokens: 6 },
    });
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    const before = speech.transcriptions.length;
    await stream.sendAudio(Buffer.concat([lineSilence(600), question, lineSilence(1500)]));

    await hangUpOf(placed);
    // The recogniser was sent the utterance alone, as a WAV at the line's 8 kHz: the voice and a little around it.
    const sent = speech.transcriptions.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.fields).toMatchObject({ model: 'whisper-1', language: 'en' });
    expect(sent[0]!.wav).toMatchObject({ format: 1, channels: 1, sampleRate: 8000, bitsPerSample: 16 });
    const sentSeconds = sent[0]!.wav!.samples.length / 2 / 8000;
    const voicedSeconds = (voicedSpan(question).endMs - voicedSpan(question).startMs) / 1000;
    expect(sentSeconds).toBeGreaterThanOrEqual(voicedSeconds - 0.05);
    expect(sentSeconds).toBeLessThanOrEqual(voicedSeconds + 0.65); // 200 ms before, 200 after, Silero's fading tail
    expect(voice.chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open tomorrow?' });
    expect(voice.elevenlabs.speech.at(-1)!.body).toMatchObject({ text: 'We open at eight.' });

    await stream.closed;
    expect(await voice.twilio.sendStatus(placed.sid, 'completed', { CallDuration: '9' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]).slice(0, 3)).toEqual([
      ['agent', 'Hello, this is the clinic. How can I help?'],
      ['contact', 'When do you open tomorrow?'],
      ['agent', 'We open at eight.'],
    ]);
    // Billed for the audio the recogniser heard, not the 3.4 s of line audio the detector did.
    expect(call.usage.sttSeconds).toBeCloseTo(sentSeconds, 2);
  });

  it("stops the agent once the caller's voice lasts longer than a backchannel, before any words are recognised", async () => {
    const placed = await placedCall({ stt: { provider: 'OPENAI_COMPATIBLE' } });
    // The second utterance has no words the recogniser can find: only the detected voice can stop the agent.
    speech.script({ kind: 'text', text: 'Tell me everything about parking.' }, { kind: 'text', text: '' });
    voice.chat.script({
      kind: 'stream',
      text: ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff. ', 'Bikes go in the yard.'],
    });
    // Spoken before the call: the caller must not fall silent for the silence timeout while eSpeak speaks.
    const [question, hello] = await Promise.all([
      callerSaying('Tell me everything about parking.'),
      callerSaying('Hello? Hello, wait, I have a question about the price, please.'),
    ]);
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(Buffer.concat([lineSilence(300), question, lineSilence(1000)]));
    // The agent's first sentence plays; the rest is still queued at Twilio when the caller talks over it.
    await until('the long reply', () => marksOf(stream).length >= 3);
    stream.releaseMarks(1);
    const before = speech.transcriptions.length;
    await stream.sendAudio(Buffer.concat([hello, lineSilence(1000)]));
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    // The voice detector ends the utterance at its own pace: the call stays up until the recogniser is sent it.
    await until('the interruption transcribed', () => speech.transcriptions.length > before);
    stream.holdMarks(false);
    const call = await until('the cut reply recorded', async () => {
      const got = await getCall(placed);
      return got.transcript.length >= 3 ? got : undefined;
    });
    expect(call.transcript[2]).toMatchObject({ role: 'agent', text: 'Parking is behind the building.', interrupted: true });
    expect(stream.received.filter((m) => m.event === 'clear')).toHaveLength(1);
    stream.stop();
    await stream.closed;
  });

  it('goes on speaking over a short "mm-hmm": not an interruption, and not a turn', async () => {
    const placed = await placedCall({ stt: { provider: 'OPENAI_COMPATIBLE' } });
    speech.script({ kind: 'text', text: 'Tell me everything about parking.' }, { kind: 'text', text: 'Mm-hmm.' });
    voice.chat.script({
      kind: 'stream',
      text: ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff. ', 'Bikes go in the yard.'],
    });
    const [question, backchannel] = await Promise.all([callerSaying('Tell me everything about parking.'), callerSaying('Mm-hmm.')]);
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(Buffer.concat([lineSilence(300), question, lineSilence(1000)]));
    await until('the long reply', () => marksOf(stream).length >= 5);
    stream.releaseMarks(1);
    const before = speech.transcriptions.length;
    await stream.sendAudio(Buffer.concat([backchannel, lineSilence(1000)]));
    // Its words were heard (the recogniser was sent it), and the agent went on.
    await until('the backchannel transcribed', () => speech.transcriptions.length > before);
    await expectReplyPlayedWhole(
      stream,
      () => getCall(placed),
      'Tell me everything about parking.',
      'Parking is behind the building. It has three floors. The top floor is for staff. Bikes go in the yard.',
    );
    expect(voice.chat.received.filter((r) => JSON.stringify(r.body.messages).includes('Mm-hmm'))).toHaveLength(0);
    stream.stop();
    await stream.closed;
  });

  describe('end of turn (issue 40)', () => {
    /** The caller's words as the model was asked them, after `from` requests. */
    const asked = (from: number) =>
      voice.chat.received.slice(from).map((request) => (request.body.messages.at(-1) as { content: string }).content);
    const answer = () => voice.chat.script({ kind: 'stream', text: ['Sure.'], usage: { prompt_tokens: 50, completion_tokens: 2 } });

    /**
     * What the model is asked when the caller says two things `gapMs` apart (eSpeak's words, and
     * what the recogniser hears of each), then is silent longer than the end-of-speech silence, to
     * an agent listening with `stt`. The line's audio is sent at once: the detector hears it faster
     * than real time, and a held turn is timed by the audio it heard.
     */
    async function askedOf(stt: Record<string, unknown>, said: [words: string, heard: string][], gapMs: number) {
      const placed = await placedCall({ stt });
      // The tenant's one agent keeps its choice.
      expect((await placed.api('GET', '/agents')).json().data[0].stt).toEqual(stt);
      speech.script(...said.map(([, text]) => ({ kind: 'text' as const, text })));
      answer();
      answer();
      const [first, second] = await Promise.all(said.map(([words]) => callerSaying(words)));
      const stream = await connect(placed);
      await until('the opening', () => marksOf(stream).length >= 1);
      const before = voice.chat.received.length;
      const transcribed = speech.transcriptions.length;
      await stream.sendAudio(Buffer.concat([lineSilence(300), first!, lineSilence(gapMs), second!, lineSilence(END_OF_SPEECH_MS + 1000)]));
      // Each utterance transcribed once.
      await until('both heard', () => speech.transcriptions.length >= transcribed + 2);
      const texts = await until('the caller asked', () => asked(before).join(' ').includes(said[1]![1]) && asked(before));
      stream.stop();
      await stream.closed;
      return { texts, placed };
    }
    const QUESTIONS: [string, string][] = [
      ['When do you open tomorrow?', 'When do you open tomorrow?'],
      ['And on Sunday?', 'And on Sunday?'],
    ];

    /** A phrase left unfinished, a pause, and its end: a recogniser punctuates the fragment as a sentence. */
    const UNFINISHED: [string, string][] = [
      ["I'd like to", "I'd like to."],
      ['book an appointment for Tuesday', 'Book an appointment for Tuesday.'],
    ];

    it('answers a finished question at the pause: the next one, a second later, is a turn of its own', async () => {
      const { texts } = await askedOf({ provider: 'OPENAI_COMPATIBLE' }, QUESTIONS, 1000);
      expect(texts).toEqual(['When do you open tomorrow?', 'And on Sunday?']);
    });

    it('with stt.endOfTurn SILENCE, waits out the end-of-speech silence even after a finished question', async () => {
      const { texts } = await askedOf({ provider: 'OPENAI_COMPATIBLE', endOfTurn: 'SILENCE' }, QUESTIONS, 1000);
      expect(texts).toEqual(['When do you open tomorrow? And on Sunday?']);
    });

    it('with stt.endOfTurn SMART_TURN, lets the model decide: it finds the turn complete at the pause, unfinished words or not', async () => {
      const stt = { provider: 'OPENAI_COMPATIBLE', endOfTurn: 'SMART_TURN' };
      const placed = await placedCall({ stt });
      expect((await placed.api('GET', '/agents')).json().data[0].stt).toEqual(stt);
      speech.script({ kind: 'text', text: UNFINISHED[0]![1] });
      answer();
      const start = await callerSaying(UNFINISHED[0]![0]);
      const stream = await connect(placed);
      await until('the opening', () => marksOf(stream).length >= 1);
      const before = voice.chat.received.length;
      // 700 ms of silence: the words alone would hold the turn for 1.5 s of it.
      await stream.sendAudio(Buffer.concat([lineSilence(300), start, lineSilence(700)]));
      await until('the turn asked', () => asked(before).length === 1);
      expect(asked(before)).toEqual(["I'd like to."]);
      stream.stop();
      await stream.closed;
    });

    it('holds an unfinished phrase over the caller’s pause: what they say next is the same turn, asked once', async () => {
      // The detector hears the fragment's last word.
      const { texts, placed } = await askedOf({ provider: 'OPENAI_COMPATIBLE' }, UNFINISHED, 700);
      expect(texts).toEqual(["I'd like to. Book an appointment for Tuesday."]);
      // The caller hung up as the turn was asked: their turn is recorded, whether or not the reply played first.
      const call = await until('the turn recorded', async () => {
        const got = await getCall(placed);
        return got.transcript.length >= 2 ? got : undefined;
      });
      expect(call.transcript[1]).toMatchObject({ role: 'contact', text: "I'd like to. Book an appointment for Tuesday." });
    });
  });
});
