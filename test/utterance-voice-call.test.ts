import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { callerSaying, detectorStarted, lineSilence, voicedSpan } from './caller-speech.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';
import { expectReplyPlayedWhole, marksOf } from './voice-line.ts';

// Issue 17, turn-taking with a trained VAD: a Twilio call whose agent listens through an
// OpenAI-compatible `/audio/transcriptions` server. The caller really speaks (eSpeak NG), the
// service's voice-activity detection (Silero) cuts the utterances, and the fake transcription
// server records what it was sent.
let voice: TwilioVoice;
let speech: Awaited<ReturnType<typeof startFakeSpeech>>;

beforeAll(async () => {
  speech = await startFakeSpeech();
  voice = await startTwilioVoice({ SPEECH_API_URL: `${speech.url}/v1` });
  // The detector's worker starts with the first call that needs it (seconds on a busy machine);
  // the 2 s silence timeout here would run out before it heard anything.
  await detectorStarted();
}, 60_000);
afterAll(async () => {
  await voice.close();
  await speech.close();
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
    await stream.sendAudio(Buffer.concat([hello, lineSilence(1000)]));
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
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
});
