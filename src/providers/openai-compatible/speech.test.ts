import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pcm16ToMulaw } from '../../platform/audio.ts';
import { ProviderError } from '../errors.ts';
import { startFakeSpeech } from './fake-speech.ts';
import { createSpeaker, createTranscriber } from './speech.ts';

// OpenAI-compatible speech through the `openai` SDK, against a local fake that speaks the wire
// format (multipart upload, streamed raw pcm) and records what it received.
let fake: Awaited<ReturnType<typeof startFakeSpeech>>;
const TIMEOUT_MS = 400;

beforeAll(async () => {
  fake = await startFakeSpeech();
});
afterAll(async () => {
  await fake?.close();
});

const endpoint = () => ({ baseUrl: `${fake.url}/v1`, apiKey: 'sk-speech', timeoutMs: TIMEOUT_MS });
const samples = (...values: number[]) => Buffer.from(Int16Array.from(values).buffer);

async function drain(audio: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of audio) chunks.push(chunk);
  return chunks;
}

describe('OpenAI-compatible speech-to-text', () => {
  it('uploads a phone utterance as a WAV file with the model and the language’s primary subtag, and answers the text', async () => {
    fake.script({ kind: 'text', text: ' I would like to move my appointment. ' });
    const utterance = samples(0, 1000, -1000, 4000, -4000, 0);
    const stt = createTranscriber(endpoint());
    expect(stt.kind).toBe('utterance');
    if (stt.kind !== 'utterance') return;
    const text = await stt.transcribe(pcm16ToMulaw(utterance), { encoding: 'mulaw', sampleRate: 8000 }, { language: 'en-US' });
    expect(text).toBe('I would like to move my appointment.');
    const received = fake.transcriptions.at(-1)!;
    expect(received.authorization).toBe('Bearer sk-speech');
    expect(received.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(received.fields).toMatchObject({ model: 'whisper-1', language: 'en', response_format: 'json' });
    expect(received.file.name).toBe('utterance.wav');
    expect(received.wav).toMatchObject({ format: 1, channels: 1, sampleRate: 8000, bitsPerSample: 16 });
    expect(received.wav!.samples).toHaveLength(utterance.length);
  });

  it('sends the agent’s model and pcm16 at its own rate', async () => {
    fake.script({ kind: 'text', text: 'Sí.' });
    const stt = createTranscriber(endpoint());
    if (stt.kind !== 'utterance') throw new Error('not an utterance recogniser');
    const audio = samples(1, 2, 3, 4);
    expect(await stt.transcribe(audio, { encoding: 'pcm16', sampleRate: 16000 }, { language: 'es-419', model: 'gpt-4o-transcribe' })).toBe(
      'Sí.',
    );
    const received = fake.transcriptions.at(-1)!;
    expect(received.fields).toMatchObject({ model: 'gpt-4o-transcribe', language: 'es' });
    expect(received.wav).toMatchObject({ sampleRate: 16000 });
    expect(received.wav!.samples.equals(audio)).toBe(true);
  });

  it('turns the server’s refusal into a ProviderError with its words, not retryable for a 400', async () => {
    fake.script({ kind: 'error', status: 400, message: 'Invalid file format.' });
    const stt = createTranscriber(endpoint());
    if (stt.kind !== 'utterance') throw new Error('not an utterance recogniser');
    const failure = await stt.transcribe(samples(1), { encoding: 'pcm16', sampleRate: 8000 }, { language: 'en' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure).toMatchObject({ message: 'Speech-to-text: Invalid file format.', status: 400, retryable: false });
  });
});

describe('OpenAI-compatible text-to-speech', () => {
  const request = {
    text: 'Your appointment is confirmed.',
    voice: 'coral',
    language: 'en-US',
    format: { encoding: 'mulaw', sampleRate: 8000 },
  } as const;

  it('asks for raw pcm and yields the audio as it streams in, whole samples per chunk', async () => {
    // 3, 4 and 5 bytes: the first and second chunks end inside a sample.
    // The server sends each chunk only once the one before has come out of the synthesis.
    let pulls = 0;
    let sentAfterFirst = 0;
    let onPull = () => {};
    const between = async () => {
      const sent = ++sentAfterFirst;
      while (pulls < sent) await new Promise<void>((resolve) => (onPull = resolve));
    };
    fake.script({ kind: 'audio', chunks: [Buffer.from([1, 0, 2]), Buffer.from([0, 3, 0, 4]), Buffer.from([0, 5, 0, 6, 0])], between });
    const synthesis = createSpeaker(endpoint()).synthesize(request);
    expect(synthesis.format).toEqual({ encoding: 'pcm16', sampleRate: 24000 });
    const chunks: Buffer[] = [];
    for await (const chunk of synthesis.audio) {
      chunks.push(chunk);
      pulls++;
      onPull();
    }
    expect(chunks).toHaveLength(3);
    for (const chunk of chunks) expect(chunk.length % 2).toBe(0);
    expect(Buffer.concat(chunks).equals(samples(1, 2, 3, 4, 5, 6))).toBe(true);
    expect(fake.speeches.at(-1)).toEqual({
      authorization: 'Bearer sk-speech',
      body: { model: 'gpt-4o-mini-tts', voice: 'coral', input: 'Your appointment is confirmed.', response_format: 'pcm' },
    });
  });

  it('sends the agent’s model', async () => {
    fake.script({ kind: 'audio', chunks: [samples(7)] });
    await drain(createSpeaker(endpoint()).synthesize({ ...request, model: 'tts-1' }).audio);
    expect(fake.speeches.at(-1)!.body.model).toBe('tts-1');
  });

  it('fails with a retryable ProviderError when the server falls silent mid-stream', async () => {
    fake.script({ kind: 'stall', chunks: [samples(1, 2)] });
    const chunks: Buffer[] = [];
    const failure = await (async () => {
      for await (const chunk of createSpeaker(endpoint()).synthesize(request).audio) chunks.push(chunk);
    })().catch((e: unknown) => e);
    expect(chunks).toHaveLength(1);
    expect(failure).toMatchObject({ message: `Text-to-speech: no answer within ${TIMEOUT_MS} ms`, retryable: true });
  });

  it('turns an unknown voice refused by the server into a ProviderError with its words', async () => {
    fake.script({ kind: 'error', status: 400, message: "Invalid value: 'robot'." });
    const failure = await drain(createSpeaker(endpoint()).synthesize({ ...request, voice: 'robot' }).audio).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure).toMatchObject({ message: "Text-to-speech: Invalid value: 'robot'.", status: 400, retryable: false });
  });

  it('lists OpenAI’s built-in voices without asking any server', async () => {
    const before = fake.speeches.length + fake.transcriptions.length;
    const voices = await createSpeaker({ timeoutMs: TIMEOUT_MS }).voices();
    expect(voices.map((voice) => voice.id)).toEqual(
      expect.arrayContaining(['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse']),
    );
    expect(voices[0]).toEqual({ id: 'alloy', name: 'Alloy', languages: [] });
    expect(fake.speeches.length + fake.transcriptions.length).toBe(before);
  });

  it('says no server is configured when it has none', async () => {
    const failure = await drain(createSpeaker({ timeoutMs: TIMEOUT_MS }).synthesize(request).audio).catch((e: unknown) => e);
    expect(failure).toMatchObject({
      retryable: false,
      message: expect.stringContaining('no OpenAI-compatible speech server is configured'),
    });
  });
});
