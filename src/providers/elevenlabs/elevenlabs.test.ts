import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../errors.ts';
import { failure } from '../expect-failure.ts';
import type { TextToSpeech } from '../types.ts';
import { startFakeElevenLabs } from './fake-server.ts';
import { createElevenLabsTts, outputFormatFor } from './text-to-speech.ts';

// Streaming text-to-speech and the voice list through ElevenLabs' SDK, against a local server
// speaking ElevenLabs' HTTP API, which records what it received.
let fake: Awaited<ReturnType<typeof startFakeElevenLabs>>;
let tts: TextToSpeech;
const TIMEOUT_MS = 2_000;
const PHONE = { encoding: 'mulaw', sampleRate: 8000 } as const;
const RACHEL = '21m00Tcm4TlvDq8ikWAM';

beforeAll(async () => {
  fake = await startFakeElevenLabs({ pageSize: 1 });
  tts = createElevenLabsTts({ baseUrl: fake.url, apiKey: fake.apiKey, timeoutMs: TIMEOUT_MS });
});
afterAll(async () => {
  await fake?.close();
});

async function chunksOf(audio: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of audio) chunks.push(chunk);
  return chunks;
}

async function failureOf(audio: AsyncIterable<Buffer>): Promise<ProviderError> {
  try {
    await chunksOf(audio);
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  throw new Error('the audio ended without an error');
}

describe('ElevenLabs streaming text-to-speech', () => {
  it('streams the request’s audio as the chunks arrive, in μ-law 8 kHz for a phone line, with the key, model and language', async () => {
    const chunks = [Buffer.from([1, 2, 3]), Buffer.from([4, 5]), Buffer.from([6, 7, 8, 9])];
    fake.script({ kind: 'audio', chunks });
    const synthesis = tts.synthesize({ text: 'Hello, this is Anna from the clinic.', voice: RACHEL, language: 'en-US', format: PHONE });
    expect(synthesis.format).toEqual(PHONE);
    expect(await chunksOf(synthesis.audio)).toEqual(chunks);

    const request = fake.speech.at(-1)!;
    expect(request).toMatchObject({ voiceId: RACHEL, apiKey: fake.apiKey, query: { output_format: 'ulaw_8000' }, completed: true });
    expect(request.body).toEqual({ text: 'Hello, this is Anna from the clinic.', model_id: 'eleven_flash_v2_5', language_code: 'en' });
  });

  it('asks for the browser’s pcm16 rate when ElevenLabs makes it, takes the agent’s model, and leaves Multilingual v2 to detect the language', async () => {
    const synthesis = tts.synthesize({
      text: 'Hola',
      voice: RACHEL,
      language: 'es',
      format: { encoding: 'pcm16', sampleRate: 16000 },
      model: 'eleven_multilingual_v2',
    });
    expect(synthesis.format).toEqual({ encoding: 'pcm16', sampleRate: 16000 });
    const audio = Buffer.concat(await chunksOf(synthesis.audio));
    expect(audio.length).toBeGreaterThan(0);
    expect(fake.speech.at(-1)!.query).toEqual({ output_format: 'pcm_16000' });
    expect(fake.speech.at(-1)!.body).toEqual({ text: 'Hola', model_id: 'eleven_multilingual_v2' });
  });

  it.each([
    [{ encoding: 'pcm16', sampleRate: 24000 }, 'pcm_24000', 24000],
    [{ encoding: 'mulaw', sampleRate: 16000 }, 'pcm_16000', 16000],
    [{ encoding: 'pcm16', sampleRate: 11025 }, 'pcm_8000', 8000],
    [{ encoding: 'pcm16', sampleRate: 96000 }, 'pcm_48000', 48000],
  ] as const)('asks for the closest raw PCM ElevenLabs offers for %o (%s), and says so', (asked, outputFormat, sampleRate) => {
    expect(outputFormatFor(asked)).toEqual({ outputFormat, format: { encoding: 'pcm16', sampleRate } });
  });

  it('stops reading and closes the request when the caller aborts mid-stream (barge-in)', async () => {
    fake.script({ kind: 'audio', chunks: [Buffer.from([1]), Buffer.from([2]), Buffer.from([3])], holdAfter: 1 });
    const controller = new AbortController();
    const synthesis = tts.synthesize({ text: 'A long answer', voice: RACHEL, language: 'en', format: PHONE, signal: controller.signal });
    const seen: Buffer[] = [];
    let failure: unknown;
    try {
      for await (const chunk of synthesis.audio) {
        seen.push(chunk);
        controller.abort();
      }
    } catch (error) {
      failure = error;
    }
    expect(seen).toEqual([Buffer.from([1])]);
    expect(failure).toMatchObject({ message: 'ElevenLabs: the synthesis was cancelled.', retryable: false });
    const request = fake.speech.at(-1)!;
    await request.closed;
    expect(request).toMatchObject({ chunksWritten: 1, completed: false });
  });

  it('closes the request when the consumer stops reading early', async () => {
    fake.script({ kind: 'audio', chunks: [Buffer.from([1]), Buffer.from([2])], holdAfter: 1 });
    const synthesis = tts.synthesize({ text: 'Stop me', voice: RACHEL, language: 'en', format: PHONE });
    for await (const chunk of synthesis.audio) {
      expect(chunk).toEqual(Buffer.from([1]));
      break;
    }
    await fake.speech.at(-1)!.closed;
    expect(fake.speech.at(-1)!.completed).toBe(false);
  });

  it('turns a wrong key (401) into a final ProviderError with the server’s words, never the key', async () => {
    const wrongKey = 'el-wrong-key-0123456789';
    const error = await failureOf(
      createElevenLabsTts({ baseUrl: fake.url, apiKey: wrongKey, timeoutMs: TIMEOUT_MS }).synthesize({
        text: 'Hi',
        voice: RACHEL,
        language: 'en',
        format: PHONE,
      }).audio,
    );
    expect(error).toMatchObject({
      message: 'ElevenLabs: Invalid API key (HTTP 401).',
      status: 401,
      retryable: false,
      code: 'invalid_api_key',
    });
    expect(error.message).not.toContain(wrongKey);
  });

  it('turns an unknown voice (404) into a final ProviderError naming it', async () => {
    const error = await failureOf(tts.synthesize({ text: 'Hi', voice: 'no-such-voice', language: 'en', format: PHONE }).audio);
    expect(error).toMatchObject({
      message: 'ElevenLabs: A voice with the voice_id no-such-voice was not found (HTTP 404).',
      status: 404,
      retryable: false,
      code: 'voice_not_found',
    });
  });

  it('marks throttling (429) and server errors (5xx) retryable, with the server’s message', async () => {
    fake.script(
      { kind: 'error', status: 429, detail: { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests.' } },
      { kind: 'error', status: 503, detail: { status: 'service_unavailable', message: 'Service temporarily unavailable.' } },
    );
    const throttled = await failureOf(tts.synthesize({ text: 'Hi', voice: RACHEL, language: 'en', format: PHONE }).audio);
    expect(throttled).toMatchObject({ status: 429, retryable: true, code: 'too_many_concurrent_requests' });
    expect(throttled.message).toBe('ElevenLabs: Too many concurrent requests (HTTP 429).');
    const unavailable = await failureOf(tts.synthesize({ text: 'Hi', voice: RACHEL, language: 'en', format: PHONE }).audio);
    expect(unavailable).toMatchObject({ status: 503, retryable: true });
  });

  it('turns a stream that breaks off into a retryable ProviderError after the chunks that came', async () => {
    fake.script({ kind: 'break', chunks: [Buffer.from([9, 9])] });
    const seen: Buffer[] = [];
    let failure: unknown;
    try {
      for await (const chunk of tts.synthesize({ text: 'Hi', voice: RACHEL, language: 'en', format: PHONE }).audio) seen.push(chunk);
    } catch (error) {
      failure = error;
    }
    expect(seen).toEqual([Buffer.from([9, 9])]);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure).toMatchObject({ retryable: true });
  });

  it('turns a server that stops sending into a retryable timeout', async () => {
    fake.script({ kind: 'audio', chunks: [Buffer.from([1]), Buffer.from([2])], holdAfter: 1 });
    const quick = createElevenLabsTts({ baseUrl: fake.url, apiKey: fake.apiKey, timeoutMs: 100 });
    const error = await failureOf(quick.synthesize({ text: 'Hi', voice: RACHEL, language: 'en', format: PHONE }).audio);
    expect(error).toMatchObject({ message: 'ElevenLabs: no audio within 100 ms.', retryable: true });
    await fake.speech.at(-1)!.closed;
  });

  it('fails without a request when no key is configured (never the environment’s)', async () => {
    const before = fake.speech.length;
    const keyless = createElevenLabsTts({ baseUrl: fake.url, timeoutMs: TIMEOUT_MS });
    expect(await failureOf(keyless.synthesize({ text: 'Hi', voice: RACHEL, language: 'en', format: PHONE }).audio)).toMatchObject({
      message: 'ElevenLabs: no API key is configured.',
    });
    await expect(keyless.voices()).rejects.toMatchObject({ message: 'ElevenLabs: no API key is configured.' });
    expect(fake.speech.length).toBe(before);
  });
});

describe('ElevenLabs voices', () => {
  it('lists every page of /v2/voices as our Voice: id, name, verified languages, gender from the labels', async () => {
    const before = fake.voiceListQueries.length;
    expect(await tts.voices()).toEqual([
      { id: RACHEL, name: 'Rachel', languages: ['en-US'], gender: 'female' },
      { id: 'TxGEqnHWrfWFTfGW9XjX', name: 'Josh', languages: ['en-US', 'es'], gender: 'male' },
    ]);
    // The fake serves one voice a page: the second request follows the first's next_page_token.
    expect(fake.voiceListQueries.slice(before)).toEqual([{ page_size: '100' }, { page_size: '100', next_page_token: '1' }]);
  });

  it('turns a wrong key into a ProviderError', async () => {
    const error = await failure(
      createElevenLabsTts({ baseUrl: fake.url, apiKey: 'el-wrong-key-0123456789', timeoutMs: TIMEOUT_MS }).voices(),
    );
    expect(error).toMatchObject({ status: 401, retryable: false, message: 'ElevenLabs: Invalid API key (HTTP 401).' });
  });
});
