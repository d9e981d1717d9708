import type OpenAI from 'openai';
import { toFile } from 'openai';
import { mulawToPcm16, wavFile } from '../../platform/audio.ts';
import { storableText } from '../../platform/input.ts';
import { ProviderError } from '../errors.ts';
import type { AudioFormat, RecognitionOptions, SpeechEndpoint, SpeechToText, SynthesisRequest, TextToSpeech, Voice } from '../types.ts';
import { cancelled, sdkClient, sdkProviderError, watchRequest } from './sdk.ts';

const STT = 'Speech-to-text';
const TTS = 'Text-to-speech';

export const DEFAULT_TRANSCRIPTION_MODEL = 'whisper-1';
export const DEFAULT_SPEECH_MODEL = 'gpt-4o-mini-tts';
/** `response_format: 'pcm'`: raw 16-bit little-endian mono samples at 24 kHz, OpenAI's one rate for it. */
export const SPEECH_FORMAT: AudioFormat = { encoding: 'pcm16', sampleRate: 24000 };

/**
 * OpenAI's built-in voices, as the `openai` SDK (6.30) documents them for `audio.speech.create`: the
 * API has no endpoint that lists voices, so this is the list. Each speaks every language the model
 * does (none is declared). Other OpenAI-compatible servers (LocalAI, Kokoro-FastAPI, openedai-speech)
 * map these names to voices of their own.
 */
const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse', 'marin', 'cedar'];
const voiceList: Voice[] = OPENAI_VOICES.map((id) => ({ id, name: id[0]!.toUpperCase() + id.slice(1), languages: [] }));

/** Utterances transcribed by `POST /audio/transcriptions` (Whisper and the servers that copy its API). */
export function createTranscriber(endpoint: SpeechEndpoint): SpeechToText {
  const client = endpoint.baseUrl ? sdkClient({ ...endpoint, baseUrl: endpoint.baseUrl }) : undefined;
  return {
    kind: 'utterance',
    transcribe: async (audio, format, options) => transcribe(client ?? notConfigured(STT), endpoint.timeoutMs, audio, format, options),
  };
}

async function transcribe(client: OpenAI, timeoutMs: number, audio: Buffer, format: AudioFormat, options: RecognitionOptions) {
  const pcm16 = format.encoding === 'mulaw' ? mulawToPcm16(audio) : audio;
  const file = await toFile(wavFile(pcm16, format.sampleRate), 'utterance.wav', { type: 'audio/wav' });
  try {
    const transcription = await client.audio.transcriptions.create(
      {
        file,
        model: options.model ?? DEFAULT_TRANSCRIPTION_MODEL,
        // Whisper takes ISO-639-1: the language of the tag, without its region.
        language: options.language.split('-')[0]!.toLowerCase(),
        response_format: 'json',
      },
      { signal: options.signal },
    );
    return storableText(transcription.text.trim());
  } catch (error) {
    throw sdkProviderError(STT, error, { timedOut: false, timeoutMs, abortedByCaller: options.signal?.aborted === true });
  }
}

/** Speech from `POST /audio/speech`, streamed as it is generated. */
export function createSpeaker(endpoint: SpeechEndpoint): TextToSpeech {
  const client = endpoint.baseUrl ? sdkClient({ ...endpoint, baseUrl: endpoint.baseUrl }) : undefined;
  return {
    synthesize: (request) => ({ format: SPEECH_FORMAT, audio: speech(client, endpoint.timeoutMs, request) }),
    voices: async () => voiceList,
  };
}

async function* speech(client: OpenAI | undefined, timeoutMs: number, request: SynthesisRequest): AsyncGenerator<Buffer> {
  if (!client) throw notConfigured(TTS);
  if (request.signal?.aborted) throw cancelled(TTS);
  const watch = watchRequest(TTS, timeoutMs, request.signal);
  let finished = false;
  try {
    const response = await watch.waitForServer(
      client.audio.speech.create(
        { model: request.model ?? DEFAULT_SPEECH_MODEL, voice: request.voice, input: request.text, response_format: 'pcm' },
        { signal: watch.signal },
      ),
    );
    if (!response.body) throw new ProviderError(`${TTS}: the answer has no audio.`, { retryable: true });
    const reader = response.body.getReader();
    // A network chunk may end inside a sample: its odd byte waits for the next one.
    let carried = Buffer.alloc(0);
    for (;;) {
      const { done, value } = await watch.waitForServer(reader.read());
      if (done) break;
      const bytes = Buffer.concat([carried, value]);
      const whole = bytes.length - (bytes.length % 2);
      carried = bytes.subarray(whole);
      if (whole > 0) yield bytes.subarray(0, whole);
    }
    finished = true;
  } finally {
    watch.end();
    // A consumer that stops early (barge-in) closes the connection, so the server stops generating.
    if (!finished) watch.abort();
  }
}

function notConfigured(label: string): never {
  throw new ProviderError(`${label}: no OpenAI-compatible speech server is configured (SPEECH_API_URL or the tenant's llm integration).`, {
    retryable: false,
  });
}
