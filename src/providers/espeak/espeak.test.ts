import { describe, expect, it } from 'vitest';
import { durationMs, pcm16Samples } from '../../platform/audio.ts';
import { ProviderError } from '../errors.ts';
import { espeak } from './index.ts';

// eSpeak NG's WebAssembly build, for real: no fake, since it runs inside this process (in a worker thread).
const tts = espeak.tts!.connect({ timeoutMs: 10_000 });

async function audioOf(request: Parameters<typeof tts.synthesize>[0]) {
  const synthesis = tts.synthesize(request);
  const chunks: Buffer[] = [];
  for await (const chunk of synthesis.audio) chunks.push(chunk);
  return { format: synthesis.format, chunks, audio: Buffer.concat(chunks) };
}

const PHONE_FORMAT = { encoding: 'mulaw', sampleRate: 8000 } as const;

describe('eSpeak NG text-to-speech', () => {
  it('lists its voices with their languages, an American English voice among them, best voice for a language first', async () => {
    const voices = await tts.voices();
    expect(voices.length).toBeGreaterThan(100);
    expect(voices).toContainEqual({ id: 'gmw/en-US', name: 'English (America)', languages: ['en-US', 'en'] });
    expect(voices.find((voice) => voice.languages.includes('en'))?.id).toBe('gmw/en');
    // eSpeak's en-us-nyc is no valid BCP-47 tag; its valid beginning is made canonical.
    expect(voices.find((voice) => voice.id === 'gmw/en-US-nyc')?.languages).toEqual(['en-US-nyc']);
    expect(voices.find((voice) => voice.languages.includes('es-419'))).toBeDefined();
  });

  it('synthesises a sentence as pcm16 at the line’s rate, of a plausible length and not silence, in several chunks', async () => {
    const { format, chunks, audio } = await audioOf({
      text: 'Hello, this is the clinic.',
      voice: 'gmw/en-US',
      language: 'en-US',
      format: PHONE_FORMAT,
    });
    expect(format).toEqual({ encoding: 'pcm16', sampleRate: 8000 });
    expect(chunks.length).toBeGreaterThan(1);
    const seconds = durationMs(audio.length, format) / 1000;
    expect(seconds).toBeGreaterThan(0.5);
    expect(seconds).toBeLessThan(5);
    const samples = pcm16Samples(audio);
    const rms = Math.sqrt(samples.reduce((sum, sample) => sum + sample * sample, 0) / samples.length);
    expect(rms).toBeGreaterThan(500);
  });

  // The resampling happens in eSpeak's worker (issue 44: a resampler per call on the service's thread grew its memory with the calls).
  it('gives a sentence at whichever rate is asked, as long at each, eSpeak’s own 22,050 Hz untouched', async () => {
    const text = 'Your appointment is on Tuesday at three.';
    const at = async (sampleRate: number) => {
      const { format, audio } = await audioOf({ text, voice: 'gmw/en-US', language: 'en-US', format: { encoding: 'pcm16', sampleRate } });
      expect(format).toEqual({ encoding: 'pcm16', sampleRate });
      return durationMs(audio.length, format);
    };
    const native = await at(22050);
    for (const rate of [8000, 16000, 8000]) expect(Math.abs((await at(rate)) / native - 1), `${rate} Hz`).toBeLessThan(0.05);
  });

  it('refuses a voice it does not have with a ProviderError that says where the voices are listed', async () => {
    const failure = await audioOf({ text: 'Hello', voice: 'en-klingon', language: 'en', format: PHONE_FORMAT }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ProviderError);
    expect((failure as ProviderError).message).toBe('eSpeak NG has no voice "en-klingon"; GET /api/v1/voices?provider=ESPEAK lists them.');
    expect((failure as ProviderError).retryable).toBe(false);
  });

  it('speaks two requests at once, each its own audio', async () => {
    const [short, long] = await Promise.all([
      audioOf({ text: 'Yes.', voice: 'gmw/en-US', language: 'en-US', format: PHONE_FORMAT }),
      audioOf({ text: 'Your appointment is on Tuesday at three in the afternoon.', voice: 'roa/es', language: 'es', format: PHONE_FORMAT }),
    ]);
    expect(short.audio.length).toBeGreaterThan(0);
    expect(long.audio.length).toBeGreaterThan(short.audio.length * 3);
  });

  // eSpeak is not sample-exact from one run to the next (its state carries over), so lengths are compared:
  // audio mixed between requests would be far off.
  it('gives each of many requests at once the audio it gives them one at a time, whichever thread speaks it', async () => {
    const requests = ['One.', 'Two, three.', 'Four, five, six.', 'Seven, eight, nine, ten.', 'Eleven.', 'Twelve, thirteen.'].map(
      (text) => ({ text, voice: 'gmw/en-US', language: 'en-US', format: PHONE_FORMAT }),
    );
    const alone: Buffer[] = [];
    for (const request of requests) alone.push((await audioOf(request)).audio);
    const together = await Promise.all(requests.map(async (request) => (await audioOf(request)).audio));
    together.forEach((audio, index) => expect(Math.abs(audio.length / alone[index]!.length - 1), requests[index]!.text).toBeLessThan(0.05));
  });
});
