/**
 * Speech-to-speech through OpenAI's Realtime API (GA): one WebSocket per call to `<base>/realtime`,
 * set up with `session.update` (instructions, voice, tools, audio formats, turn detection), the
 * caller's audio appended as it arrives, the model's audio, transcripts, tool calls and usage read
 * from its server events. A phone line's 8 kHz μ-law is the API's `audio/pcmu` and passes as it
 * is; any other line is converted to and from the API's pcm16 at 24 kHz.
 *
 * The events are typed by the `openai` SDK; the socket is the `ws` package's, opened here rather
 * than through the SDK's OpenAIRealtimeWS (docs/decisions/0056-speech-to-speech.md).
 */
import type { RealtimeClientEvent, RealtimeServerEvent, RealtimeSessionCreateRequest } from 'openai/resources/realtime/realtime';
import WebSocket from 'ws';
import { createAudioConverter, type AudioConverter, type AudioFormat } from '../../platform/audio.ts';
import { storableJsonText, storableText } from '../../platform/input.ts';
import { publicOnlySocket } from '../../platform/safe-fetch.ts';
import { ProviderError } from '../errors.ts';
import type { RealtimeChannel, RealtimeConversation, RealtimeEvent, RealtimeSetup, RealtimeUsage } from '../types.ts';

/** The API's own pcm: 16-bit at 24 kHz. */
const API_PCM: AudioFormat = { encoding: 'pcm16', sampleRate: 24_000 };
/** What transcribes the caller's turns when the server detects them (it reports seconds, which are billed as speech-to-text). */
export const REALTIME_TRANSCRIPTION_MODEL = 'whisper-1';
const LABEL = 'Speech-to-speech';

/** The server's address for the realtime socket: the REST base with ws(s) for http(s), `/realtime?model=`. */
export function realtimeUrl(baseUrl: string, model: string): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/realtime`);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  url.searchParams.set('model', model);
  return url.toString();
}

const isPhoneAudio = (format: AudioFormat) => format.encoding === 'mulaw' && format.sampleRate === 8000;

/** The session as `session.update` sets it. */
export function sessionOf(setup: RealtimeSetup): RealtimeSessionCreateRequest {
  const format = isPhoneAudio(setup.format) ? ({ type: 'audio/pcmu' } as const) : ({ type: 'audio/pcm', rate: 24_000 } as const);
  const server = setup.turnDetection === 'server';
  return {
    type: 'realtime',
    instructions: setup.instructions,
    output_modalities: ['audio'],
    audio: {
      input: {
        format,
        // Ours decides (`client`): the caller's turns are committed and answered when it says.
        turn_detection: server ? { type: 'server_vad', create_response: true, interrupt_response: true } : null,
        ...(server
          ? { transcription: { model: REALTIME_TRANSCRIPTION_MODEL, language: setup.language.split('-')[0]!.toLowerCase() } }
          : {}),
      },
      output: { format, voice: setup.voice },
    },
    tools: setup.tools.map(({ name, description, parameters }) => ({ type: 'function' as const, name, description, parameters })),
    tool_choice: 'auto',
  };
}

/** Usage as the server reported it in `response.done`; null when it reported none. */
export function usageOf(usage: Extract<RealtimeServerEvent, { type: 'response.done' }>['response']['usage']): RealtimeUsage | null {
  if (!usage) return null;
  const input = usage.input_token_details ?? {};
  const output = usage.output_token_details ?? {};
  return {
    inputTextTokens: input.text_tokens ?? 0,
    inputAudioTokens: input.audio_tokens ?? 0,
    outputTextTokens: output.text_tokens ?? 0,
    outputAudioTokens: output.audio_tokens ?? 0,
  };
}

const serverError = (message: string, options: { retryable: boolean; code?: string; cause?: unknown }) =>
  new ProviderError(`${LABEL}: ${message}`, options);

export const openRealtime: RealtimeChannel['connect'] = async (endpoint, setup, listener) => {
  const url = realtimeUrl(endpoint.baseUrl, setup.model);
  const guard = endpoint.publicOnly ? publicOnlySocket(url) : undefined;
  if (guard?.problem) throw serverError(`refused ${new URL(url).host}: ${guard.problem}`, { retryable: false });
  const phone = isPhoneAudio(setup.format);
  const toApi: AudioConverter | undefined = phone ? undefined : await createAudioConverter(setup.format, API_PCM);
  const fromApi: AudioConverter | undefined = phone ? undefined : await createAudioConverter(API_PCM, setup.format);
  const socket = new WebSocket(url, {
    headers: endpoint.apiKey ? { Authorization: `Bearer ${endpoint.apiKey}` } : {},
    handshakeTimeout: endpoint.timeoutMs,
    ...(guard ? { lookup: guard.lookup as never } : {}),
  });
  let ready = false;
  let closing = false;
  const send = (event: RealtimeClientEvent) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(event));
  };
  const release = () => {
    toApi?.close();
    fromApi?.close();
  };

  const conversation: RealtimeConversation = {
    appendAudio(audio) {
      const bytes = toApi ? toApi.convert(audio) : audio;
      if (bytes.length) send({ type: 'input_audio_buffer.append', audio: bytes.toString('base64') });
    },
    commit: () => send({ type: 'input_audio_buffer.commit' }),
    respond: (instructions) => send({ type: 'response.create', ...(instructions ? { response: { instructions } } : {}) }),
    cancel: () => send({ type: 'response.cancel' }),
    truncate: (itemId, audioEndMs) =>
      send({ type: 'conversation.item.truncate', item_id: itemId, content_index: 0, audio_end_ms: Math.max(0, Math.round(audioEndMs)) }),
    toolResult: (callId, output) =>
      send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output } }),
    close() {
      if (closing) return;
      closing = true;
      socket.close(1000, 'The call is over.');
      release();
    },
  };

  return new Promise<RealtimeConversation>((resolve, reject) => {
    const deadline = setTimeout(() => {
      fail(serverError(`the session was not set up within ${endpoint.timeoutMs} ms`, { retryable: true }));
      socket.terminate();
    }, endpoint.timeoutMs);
    /** Before the session is set up, the connection is refused; after, the call hears of the failure. */
    function fail(error: ProviderError) {
      clearTimeout(deadline);
      if (!ready) {
        ready = true;
        closing = true;
        release();
        return reject(error);
      }
      listener({ type: 'error', error, fatal: true });
    }
    socket.on('open', () => send({ type: 'session.update', session: sessionOf(setup) }));
    socket.on('unexpected-response', (_request, response) => {
      fail(
        serverError(`the server refused the connection (HTTP ${response.statusCode})`, { retryable: (response.statusCode ?? 500) >= 500 }),
      );
      socket.terminate();
    });
    socket.on('error', (error) => fail(serverError(`the connection failed: ${error.message}`, { retryable: true, cause: error })));
    socket.on('close', (code, reason) => {
      if (closing) return;
      closing = true;
      release();
      fail(serverError(`the server closed the connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`, { retryable: true }));
    });
    socket.on('message', (data) => {
      let event: RealtimeServerEvent;
      try {
        event = JSON.parse(data.toString()) as RealtimeServerEvent;
      } catch {
        return;
      }
      if (!ready) {
        if (event.type === 'session.updated') {
          ready = true;
          clearTimeout(deadline);
          return resolve(conversation);
        }
        if (event.type === 'error') {
          fail(serverError(`the session was refused: ${event.error.message}`, { retryable: false, code: event.error.code ?? undefined }));
          socket.close();
        }
        return;
      }
      const normalised = normalise(event, fromApi);
      if (normalised) listener(normalised);
    });
  });
};

/** A server event in our terms; undefined for the many that change nothing here. */
function normalise(event: RealtimeServerEvent, fromApi: AudioConverter | undefined): RealtimeEvent | undefined {
  // The beta names of the audio events are read too: servers that copied the beta protocol still send them.
  const type = event.type as string;
  switch (type) {
    case 'input_audio_buffer.speech_started':
      return { type: 'speech_started' };
    case 'conversation.item.input_audio_transcription.completed': {
      const done = event as Extract<RealtimeServerEvent, { type: 'conversation.item.input_audio_transcription.completed' }>;
      const seconds = done.usage?.type === 'duration' ? done.usage.seconds : undefined;
      return { type: 'caller_transcript', text: storableText(done.transcript), ...(seconds === undefined ? {} : { seconds }) };
    }
    case 'response.output_audio.delta':
    case 'response.audio.delta': {
      const delta = event as Extract<RealtimeServerEvent, { type: 'response.output_audio.delta' }>;
      const raw = Buffer.from(delta.delta, 'base64');
      const audio = fromApi ? fromApi.convert(raw) : raw;
      return audio.length ? { type: 'agent_audio', itemId: delta.item_id, audio } : undefined;
    }
    case 'response.output_audio_transcript.done':
    case 'response.audio_transcript.done': {
      const done = event as Extract<RealtimeServerEvent, { type: 'response.output_audio_transcript.done' }>;
      return { type: 'agent_transcript', itemId: done.item_id, text: storableText(done.transcript) };
    }
    case 'response.function_call_arguments.done': {
      const done = event as Extract<RealtimeServerEvent, { type: 'response.function_call_arguments.done' }>;
      return { type: 'tool_call', id: done.call_id, name: done.name, arguments: storableJsonText(done.arguments) };
    }
    case 'response.done': {
      const { response } = event as Extract<RealtimeServerEvent, { type: 'response.done' }>;
      return { type: 'response_done', status: response.status ?? 'completed', usage: usageOf(response.usage) };
    }
    case 'error': {
      const { error } = event as Extract<RealtimeServerEvent, { type: 'error' }>;
      return { type: 'error', error: serverError(error.message, { retryable: false, code: error.code ?? undefined }), fatal: false };
    }
    default:
      return undefined;
  }
}
