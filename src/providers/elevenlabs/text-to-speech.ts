import type { ElevenLabs, ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import { asRecord, bodyExcerpt, isRetryableStatus, ProviderError } from '../errors.ts';
import type { AudioFormat, SpeechEndpoint, SynthesisRequest, TextToSpeech, Voice } from '../types.ts';

export const ELEVENLABS_DEFAULT_URL = 'https://api.elevenlabs.io';
/** ElevenLabs' lowest-latency model (Flash v2.5, 32 languages): the one made for live conversation. */
export const ELEVENLABS_DEFAULT_MODEL = 'eleven_flash_v2_5';
/** The raw PCM rates ElevenLabs streams (`pcm_<rate>`); 44.1 kHz needs a Pro subscription. */
const PCM_RATES = [8000, 16000, 22050, 24000, 32000, 44100, 48000];
/** A bound on the voice list's pages (100 voices each), so a server that always says "more" cannot loop us. */
const MAX_VOICE_PAGES = 20;

type Sdk = typeof import('@elevenlabs/elevenlabs-js');
/** The SDK takes about a second to import: loaded by the first request to ElevenLabs, not by every process that starts. */
let sdk: Promise<Sdk> | undefined;
const loadSdk = () => (sdk ??= import('@elevenlabs/elevenlabs-js'));
/** A client with the SDK it came from, whose error classes tell its failures apart. */
interface Connection {
  sdk: Sdk;
  client: ElevenLabsClient;
}

/**
 * ElevenLabs' streaming text-to-speech (`POST /v1/text-to-speech/{voice_id}/stream`) and voice
 * list (`GET /v2/voices`) through its SDK.
 */
export function createElevenLabsTts(endpoint: SpeechEndpoint): TextToSpeech {
  // The SDK falls back to ELEVENLABS_API_KEY from the environment: without a key of our own, no client at all.
  let connection: Promise<Connection> | undefined;
  const connect = async (): Promise<Connection> => {
    const { apiKey } = endpoint;
    if (!apiKey) throw noKey();
    connection ??= loadSdk().then((loaded) => ({
      sdk: loaded,
      client: new loaded.ElevenLabsClient({
        apiKey,
        baseUrl: endpoint.baseUrl ?? ELEVENLABS_DEFAULT_URL,
        timeoutInSeconds: endpoint.timeoutMs / 1000,
        // The caller decides about retries (ProviderError.retryable): a retry inside a live call costs time it may not have.
        maxRetries: 0,
        ...(endpoint.fetch ? { fetch: endpoint.fetch } : {}),
      }),
    }));
    return connection;
  };
  return {
    synthesize(request) {
      const { outputFormat, format } = outputFormatFor(request.format);
      return { format, audio: streamSpeech(connect, request, outputFormat, endpoint.timeoutMs) };
    },
    voices: () => listVoices(connect),
  };
}

/**
 * The output format to ask for: the transport's own when ElevenLabs makes it (`ulaw_8000`, `pcm_16000`…),
 * else raw PCM at the closest rate it offers, which the returned format names for the pipeline to convert.
 */
export function outputFormatFor(asked: AudioFormat): {
  outputFormat: ElevenLabs.TextToSpeechStreamRequestOutputFormat;
  format: AudioFormat;
} {
  if (asked.encoding === 'mulaw' && asked.sampleRate === 8000) return { outputFormat: 'ulaw_8000', format: asked };
  const rate = PCM_RATES.reduce((best, candidate) =>
    Math.abs(candidate - asked.sampleRate) < Math.abs(best - asked.sampleRate) ? candidate : best,
  );
  return {
    outputFormat: `pcm_${rate}` as ElevenLabs.TextToSpeechStreamRequestOutputFormat,
    format: { encoding: 'pcm16', sampleRate: rate },
  };
}

async function* streamSpeech(
  connect: () => Promise<Connection>,
  request: SynthesisRequest,
  outputFormat: ElevenLabs.TextToSpeechStreamRequestOutputFormat,
  timeoutMs: number,
): AsyncGenerator<Buffer> {
  const { sdk, client } = await connect();
  if (request.signal?.aborted) throw cancelled();
  // One controller for the caller's abort (barge-in) and our silence deadline, so either stops the request.
  const controller = new AbortController();
  const stopWithCaller = () => controller.abort();
  request.signal?.addEventListener('abort', stopWithCaller, { once: true });
  const state = { stalled: false, cancelled: () => request.signal?.aborted === true, timeoutMs };
  // The deadline runs only while we wait for the server: a consumer slow to play what it has is not a stalled server.
  let waiting = false;
  const silence = setTimeout(() => {
    if (!waiting) return;
    state.stalled = true;
    controller.abort();
  }, timeoutMs);
  const fromServer = async <T>(next: () => Promise<T>): Promise<T> => {
    waiting = true;
    silence.refresh();
    try {
      return await next();
    } catch (error) {
      throw providerError(sdk, error, state);
    } finally {
      waiting = false;
    }
  };

  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let readToTheEnd = false;
  try {
    const body = await fromServer(() =>
      client.textToSpeech.stream(
        request.voice,
        {
          text: request.text,
          modelId: request.model ?? ELEVENLABS_DEFAULT_MODEL,
          outputFormat,
          ...languageOf(request),
        },
        { abortSignal: controller.signal },
      ),
    );
    reader = body.getReader();
    for (;;) {
      const chunk = await fromServer(() => reader!.read());
      if (chunk.done) {
        readToTheEnd = true;
        return;
      }
      if (chunk.value.byteLength > 0) yield Buffer.from(chunk.value.buffer, chunk.value.byteOffset, chunk.value.byteLength);
    }
  } finally {
    clearTimeout(silence);
    request.signal?.removeEventListener('abort', stopWithCaller);
    // A consumer that stops early (barge-in) closes the connection, so ElevenLabs stops generating (and billing).
    if (!readToTheEnd) {
      await reader?.cancel().catch(() => undefined);
      controller.abort();
    }
  }
}

/**
 * ElevenLabs takes an ISO 639-1 code to enforce a language; Multilingual v2 refuses the field (it
 * detects the language from the text), so it is not sent to it.
 */
function languageOf(request: SynthesisRequest): { languageCode?: string } {
  if (request.model?.startsWith('eleven_multilingual_v2')) return {};
  const primary = request.language.split('-')[0]?.toLowerCase();
  return primary && /^[a-z]{2}$/.test(primary) ? { languageCode: primary } : {};
}

async function listVoices(connect: () => Promise<Connection>): Promise<Voice[]> {
  const { sdk, client } = await connect();
  const voices: Voice[] = [];
  let nextPageToken: string | undefined;
  for (let page = 0; page < MAX_VOICE_PAGES; page++) {
    let response: ElevenLabs.GetVoicesV2Response;
    try {
      response = await client.voices.search({ pageSize: 100, ...(nextPageToken ? { nextPageToken } : {}) });
    } catch (error) {
      throw providerError(sdk, error, { stalled: false, cancelled: () => false, timeoutMs: 0 });
    }
    voices.push(...response.voices.map(voiceOf));
    if (!response.hasMore || !response.nextPageToken) break;
    nextPageToken = response.nextPageToken;
  }
  return voices;
}

function voiceOf(voice: ElevenLabs.Voice): Voice {
  // Verified languages carry a locale (`en-US`) when ElevenLabs knows the accent, else the language alone.
  const verified = (voice.verifiedLanguages ?? []).map((entry) => entry.locale ?? entry.language);
  const labelled = voice.labels?.language ? [voice.labels.language] : [];
  const gender = voice.labels?.gender?.toLowerCase();
  return {
    id: voice.voiceId,
    name: voice.name ?? voice.voiceId,
    languages: [...new Set(verified.length ? verified : labelled)],
    ...(gender === 'female' || gender === 'male'
      ? { gender }
      : gender === 'neutral' || gender === 'non-binary'
        ? { gender: 'neutral' as const }
        : {}),
  };
}

function noKey(): ProviderError {
  return new ProviderError('ElevenLabs: no API key is configured.', { retryable: false });
}

function cancelled(): ProviderError {
  return new ProviderError('ElevenLabs: the synthesis was cancelled.', { retryable: false });
}

/** The SDK's errors in our terms: the server's own words and status, never the URL or the key. */
function providerError(sdk: Sdk, error: unknown, state: { stalled: boolean; cancelled: () => boolean; timeoutMs: number }): ProviderError {
  if (error instanceof ProviderError) return error;
  if (state.stalled || error instanceof sdk.ElevenLabsTimeoutError)
    return new ProviderError(`ElevenLabs: no audio within ${state.timeoutMs} ms.`, { retryable: true, cause: error });
  if (state.cancelled()) return cancelled();
  if (error instanceof sdk.ElevenLabsError && error.statusCode !== undefined) {
    const detail = serverDetail(error.body);
    const said = detail.message?.replace(/\.$/, '') ?? 'the request was refused';
    return new ProviderError(`ElevenLabs: ${said} (HTTP ${error.statusCode}).`, {
      status: error.statusCode,
      retryable: isRetryableStatus(error.statusCode),
      ...(detail.status ? { code: detail.status } : {}),
      cause: error,
    });
  }
  const reason =
    error instanceof Error ? (error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message) : String(error);
  // No status: the request never got an answer, or the audio stream broke off midway.
  return new ProviderError(`ElevenLabs: the request failed: ${reason}`, { retryable: true, cause: error });
}

/**
 * ElevenLabs answers errors as `{"detail": {"status": "voice_not_found", "message": "…"}}`, and
 * validation errors as FastAPI's `{"detail": [{"msg": "…"}]}`.
 */
function serverDetail(body: unknown): { status?: string; message?: string } {
  if (typeof body === 'string') return { message: bodyExcerpt(body) };
  const detail = asRecord(body)?.detail;
  if (typeof detail === 'string') return { message: detail };
  if (Array.isArray(detail)) {
    const messages = detail.map((item) => asRecord(item)?.msg).filter((msg): msg is string => typeof msg === 'string');
    return messages.length ? { message: messages.join('; ') } : {};
  }
  const record = asRecord(detail);
  return {
    ...(typeof record?.status === 'string' ? { status: record.status } : {}),
    ...(typeof record?.message === 'string' ? { message: record.message } : {}),
  };
}
