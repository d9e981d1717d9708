import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenInUtterances, MIN_SPEECH_MS, speechSegmenter, type SpeechCut } from '../src/modules/media/utterance-recognition.ts';
import { detectVoiceActivity, VAD_WINDOW_MS } from '../src/modules/media/voice-activity.ts';
import { mulawToPcm16, pcm16Samples, PHONE_AUDIO } from '../src/platform/audio.ts';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { createTranscriber } from '../src/providers/openai-compatible/speech.ts';
import type { RecognitionEvent } from '../src/providers/types.ts';
import { callerSaying, lineSilence, voicedSpan } from './caller-speech.ts';

// Turn-taking for a recogniser of whole utterances: the real Silero model (on ONNX Runtime, in its
// worker thread) hears real speech from the offline eSpeak voice on a phone line's audio.
const END_OF_SPEECH_MS = 600; // the pause that ends an utterance here
let fake: Awaited<ReturnType<typeof startFakeSpeech>>;
let question: Buffer;

beforeAll(async () => {
  fake = await startFakeSpeech();
  question = await callerSaying('When do you open tomorrow?');
});
afterAll(async () => {
  await fake?.close();
});

/** Where the segmenter cuts line audio, at the end of the window that decided each cut (ms into the audio). */
async function cutsOf(line: Buffer, pauseMs = END_OF_SPEECH_MS) {
  const samples = pcm16Samples(mulawToPcm16(line));
  const windows: { probability: number; samples: Int16Array }[] = [];
  const expected = Math.floor(samples.length / ((8000 / 1000) * VAD_WINDOW_MS));
  await new Promise<void>((resolve, reject) => {
    const voiceActivity = detectVoiceActivity(8000, {
      window(probability, samples) {
        windows.push({ probability, samples });
        if (windows.length === expected) resolve();
      },
      failed: reject,
    });
    // As a phone line delivers it: 20 ms frames.
    for (let offset = 0; offset < samples.length; offset += 160) voiceActivity.push(samples.subarray(offset, offset + 160));
  });
  const segmenter = speechSegmenter({ rate: 8000, pauseMs });
  return windows.flatMap((window, index): { type: SpeechCut['type']; atMs: number; audioMs?: number }[] => {
    const cut = segmenter.window(window.probability, window.samples);
    const atMs = (index + 1) * VAD_WINDOW_MS;
    if (!cut) return [];
    return [cut.type === 'speech_ended' ? { type: cut.type, atMs, audioMs: cut.audio.length / 8 } : { type: cut.type, atMs }];
  });
}
/** The cuts that make utterances (leaving out the first window of each voice and the sounds dropped). */
const utterancesOf = (cuts: Awaited<ReturnType<typeof cutsOf>>) =>
  cuts.filter((cut) => cut.type === 'speech_started' || cut.type === 'speech_ended');

describe('voice-activity detection on a phone line', () => {
  it('confirms speech once enough of it is voice, and ends the utterance after the pause', async () => {
    const spoken = voicedSpan(question);
    const all = await cutsOf(Buffer.concat([lineSilence(1000), question, lineSilence(1500)]));
    // The first window of voice is reported at once (a turn being decided waits for it), then confirmed;
    // after the utterance, each window of silence says how long it has lasted.
    expect(all.filter((cut) => cut.type !== 'silence').map((cut) => cut.type)).toEqual(['voice', 'speech_started', 'speech_ended']);
    const silences = all.filter((cut) => cut.type === 'silence');
    expect(silences.length).toBeGreaterThan(20);
    expect(silences.every((cut, index) => index === 0 || cut.atMs - silences[index - 1]!.atMs === VAD_WINDOW_MS)).toBe(true);
    expect(all[0]!.atMs).toBeLessThanOrEqual(1000 + spoken.startMs + 3 * VAD_WINDOW_MS);
    const cuts = utterancesOf(all);
    const [started, ended] = [cuts[0]!, cuts[1]!];
    // Within a few windows of where the voice is (Silero's probability rises over a window or two).
    const startsAt = 1000 + spoken.startMs + MIN_SPEECH_MS;
    expect(started.atMs).toBeGreaterThanOrEqual(startsAt - 2 * VAD_WINDOW_MS);
    expect(started.atMs).toBeLessThanOrEqual(startsAt + 4 * VAD_WINDOW_MS);
    const endsAt = 1000 + spoken.endMs + END_OF_SPEECH_MS;
    expect(ended.atMs).toBeGreaterThanOrEqual(endsAt - 3 * VAD_WINDOW_MS);
    expect(ended.atMs).toBeLessThanOrEqual(endsAt + 5 * VAD_WINDOW_MS);
    // The utterance is the voice with a little before and after it, not the silence that ended it.
    const voicedMs = spoken.endMs - spoken.startMs;
    expect(ended.audioMs).toBeGreaterThanOrEqual(voicedMs);
    expect(ended.audioMs!).toBeLessThanOrEqual(voicedMs + 200 + 200 + 4 * VAD_WINDOW_MS);
  });

  it('keeps a pause shorter than the pause setting inside one utterance and cuts at a longer one', async () => {
    const line = Buffer.concat([lineSilence(500), question, lineSilence(250), question, lineSilence(1200), question, lineSilence(1000)]);
    const cuts = utterancesOf(await cutsOf(line));
    expect(cuts.map((cut) => cut.type)).toEqual(['speech_started', 'speech_ended', 'speech_started', 'speech_ended']);
    // At the default pause (200 ms) a pause of 450 ms cuts (turn detection decides whether it ends the turn); 600 does not.
    const paused = Buffer.concat([lineSilence(500), question, lineSilence(450), question, lineSilence(1000)]);
    expect(utterancesOf(await cutsOf(paused)).map((cut) => cut.type)).toEqual(['speech_started', 'speech_ended']);
    expect(utterancesOf(await cutsOf(paused, 200)).map((cut) => cut.type)).toEqual(
      Array(2).fill(['speech_started', 'speech_ended']).flat(),
    );
  });

  it('takes neither a click, nor a burst of hiss, nor a 100 ms grunt of voice for speech, and does take a short word', async () => {
    const click = Buffer.alloc(40, 0x00); // 5 ms at full scale (μ-law 0x00 is the loudest negative sample)
    const hiss = Buffer.from(Array.from({ length: 8 * 120 }, (_, i) => ((i * 7919) % 251) ^ 0x55));
    // Voice Silero is sure of, but too short to be a caller talking: this is what the minimum length is for.
    const grunt = question.subarray(8 * 200, 8 * 300);
    const noises = [click, hiss, grunt].flatMap((noise) => [noise, lineSilence(1000)]);
    const heard = await cutsOf(Buffer.concat([lineSilence(500), ...noises]));
    expect(utterancesOf(heard)).toEqual([]);
    // Each sound that began like a voice is dropped, so a turn that waited for it is decided again.
    expect(heard.filter((cut) => cut.type === 'voice').length).toBe(heard.filter((cut) => cut.type === 'dropped').length);
    const word = utterancesOf(await cutsOf(Buffer.concat([lineSilence(500), await callerSaying('Yes.'), lineSilence(1000)])));
    expect(word.map((cut) => cut.type)).toEqual(['speech_started', 'speech_ended']);
  });
});

describe('an utterance recogniser as a live one', () => {
  it("sends each utterance, and only it, to the recogniser as WAV at the line's 8 kHz, and reports its words as a turn", async () => {
    fake.script({ kind: 'text', text: 'When do you open tomorrow?' }, { kind: 'text', text: 'And on Sunday?' });
    const stt = createTranscriber({ baseUrl: `${fake.url}/v1`, apiKey: 'sk-speech', timeoutMs: 5000 });
    if (stt.kind !== 'utterance') throw new Error('not an utterance recogniser');
    const recognition = listenInUtterances(stt, { pauseMs: END_OF_SPEECH_MS }).listen(PHONE_AUDIO, { language: 'en-US' });
    const before = fake.transcriptions.length;
    const line = Buffer.concat([lineSilence(800), question, lineSilence(1500), question, lineSilence(1500)]);
    for (let offset = 0; offset < line.length; offset += 160) recognition.send(line.subarray(offset, offset + 160));

    const events: RecognitionEvent[] = [];
    for await (const event of recognition.events) {
      // The silence after each utterance is reported window by window (the turn detection's clock); the rest is what is tested here.
      if (event.type !== 'silence') events.push(event);
      if (events.filter((e) => e.type === 'utterance_end').length === 2) break;
    }
    expect(events.filter((event) => event.type === 'speech_started')).toEqual([
      { type: 'speech_started', confirmed: false },
      { type: 'speech_started', confirmed: true },
      { type: 'speech_started', confirmed: false },
      { type: 'speech_started', confirmed: true },
    ]);
    // Each utterance's words, then its end, in the order they were said.
    expect(events.filter((event) => event.type !== 'speech_started')).toEqual([
      { type: 'transcript', text: 'When do you open tomorrow?', final: true },
      { type: 'utterance_end', afterSilenceMs: END_OF_SPEECH_MS },
      { type: 'transcript', text: 'And on Sunday?', final: true },
      { type: 'utterance_end', afterSilenceMs: END_OF_SPEECH_MS },
    ]);

    const sent = fake.transcriptions.slice(before);
    expect(sent).toHaveLength(2);
    const voicedSeconds = (voicedSpan(question).endMs - voicedSpan(question).startMs) / 1000;
    for (const transcription of sent) {
      expect(transcription.fields).toMatchObject({ model: 'whisper-1', language: 'en' });
      expect(transcription.wav).toMatchObject({ format: 1, channels: 1, sampleRate: 8000, bitsPerSample: 16 });
      const seconds = transcription.wav!.samples.length / 2 / 8000;
      expect(seconds).toBeGreaterThanOrEqual(voicedSeconds - 0.05);
      expect(seconds).toBeLessThanOrEqual(voicedSeconds + 0.65); // 200 ms before, 200 after, Silero's fading tail
    }
    // Metered: the audio the recogniser was sent, not the 5 s of line audio.
    const sentSeconds = sent.reduce((sum, transcription) => sum + transcription.wav!.samples.length / 2 / 8000, 0);
    expect(recognition.sentSeconds!()).toBeCloseTo(sentSeconds, 3);
    await recognition.close();
  });

  it('fails its events with the recogniser’s error', async () => {
    fake.script({ kind: 'error', status: 401, message: 'Incorrect API key provided.' });
    const stt = createTranscriber({ baseUrl: `${fake.url}/v1`, apiKey: 'sk-wrong', timeoutMs: 5000 });
    if (stt.kind !== 'utterance') throw new Error('not an utterance recogniser');
    const recognition = listenInUtterances(stt, { pauseMs: END_OF_SPEECH_MS }).listen(PHONE_AUDIO, { language: 'en-US' });
    const line = Buffer.concat([lineSilence(300), question, lineSilence(1000)]);
    for (let offset = 0; offset < line.length; offset += 160) recognition.send(line.subarray(offset, offset + 160));
    const events: RecognitionEvent[] = [];
    await expect(
      (async () => {
        for await (const event of recognition.events) if (event.type !== 'silence') events.push(event);
      })(),
    ).rejects.toThrow(/Incorrect API key provided/);
    expect(events).toEqual([
      { type: 'speech_started', confirmed: false },
      { type: 'speech_started', confirmed: true },
    ]);
    expect(recognition.sentSeconds!()).toBe(0);
    await recognition.close();
  });
});
