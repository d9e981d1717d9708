import { DeepgramClient, type Deepgram } from '@deepgram/sdk';
import { storableText } from '../../platform/input.ts';
import { ProviderError } from '../errors.ts';
import { eventQueue } from '../event-queue.ts';
import type { AudioFormat, LiveRecognition, RecognitionEvent, RecognitionOptions, SpeechEndpoint, SpeechToText } from '../types.ts';

export const DEEPGRAM_DEFAULT_URL = 'https://api.deepgram.com';
/** Deepgram's general model of the current generation; it transcribes 8 kHz phone audio too. */
export const DEEPGRAM_DEFAULT_MODEL = 'nova-3';
/**
 * Deepgram's Flux models (`/v2/listen`) detect the end of each turn themselves: a model of this name
 * is listened to there, its turns reported as they are (`end_of_turn`, eager or not, and `turn_resumed`).
 */
export const FLUX_DEFAULT_MODEL = 'flux-general-en';
export const isFluxModel = (model: string | undefined) => model?.startsWith('flux-') === true;
/** Flux's confidence for an end of turn (its default), and for an eager one, which turns on EagerEndOfTurn and TurnResumed. */
const FLUX_EOT_THRESHOLD = 0.7;
const FLUX_EAGER_EOT_THRESHOLD = 0.5;
/**
 * Deepgram closes a stream that receives neither audio nor a KeepAlive for 10 seconds (NET-0001)
 * and asks for a KeepAlive every 3 to 5 seconds of silence.
 */
const KEEP_ALIVE_MS = 4_000;
/** Silence that ends a segment (`speech_final`): long enough for a caller's pause mid-sentence. */
const ENDPOINTING_MS = 300;
/** A gap after the last word that ends the utterance (`UtteranceEnd`), for noisy lines where endpointing never fires. */
const UTTERANCE_END_MS = 1_000;

type ListenSocket = Awaited<ReturnType<DeepgramClient['listen']['v1']['connect']>>;
type FluxSocket = Awaited<ReturnType<DeepgramClient['listen']['v2']['connect']>>;
/** What both endpoints' sockets do alike (Flux has no KeepAlive: it expects the audio to keep flowing, as a phone line's does). */
type AnySocket = Pick<ListenSocket, 'connect' | 'close' | 'sendMedia'> & {
  on(event: 'open', handler: () => void): void;
  on(event: 'message', handler: (message: unknown) => void): void;
  on(event: 'error', handler: (error: Error) => void): void;
  on(event: 'close', handler: (event: { code?: number; reason?: string }) => void): void;
  sendCloseStream(message: { type: 'CloseStream' }): void;
  sendKeepAlive?(message: { type: 'KeepAlive' }): void;
};
type FluxMessage = Deepgram.listen.ListenV2Connected | Deepgram.listen.ListenV2TurnInfo | Deepgram.listen.ListenV2FatalError;
type ListenMessage =
  | Deepgram.listen.ListenV1Results
  | Deepgram.listen.ListenV1Metadata
  | Deepgram.listen.ListenV1UtteranceEnd
  | Deepgram.listen.ListenV1SpeechStarted;
export type LiveSpeechToText = Extract<SpeechToText, { kind: 'live' }>;

/**
 * Deepgram's live transcription (`/v1/listen` over a WebSocket) through its SDK. `tuning` is for
 * tests: how long the audio may pause before a KeepAlive is sent.
 */
export function createDeepgramStt(endpoint: SpeechEndpoint, tuning: { keepAliveMs?: number } = {}): LiveSpeechToText {
  // The SDK falls back to DEEPGRAM_API_KEY from the environment: without a key of our own, no client at all.
  const client = endpoint.apiKey
    ? new DeepgramClient({ apiKey: endpoint.apiKey, baseUrl: webSocketOrigin(endpoint.baseUrl ?? DEEPGRAM_DEFAULT_URL) })
    : undefined;
  return {
    kind: 'live',
    listen: (format, options) => listen(client, format, options, endpoint.timeoutMs, tuning.keepAliveMs ?? KEEP_ALIVE_MS),
  };
}

/** The API's origin as a WebSocket origin (`https://` → `wss://`), as the setting holds the REST one. */
function webSocketOrigin(origin: string): string {
  return origin.replace(/^http(s?):\/\//, 'ws$1://').replace(/\/+$/, '');
}

/** How one endpoint is opened and read: Nova's `/v1/listen`, or Flux's `/v2/listen`. */
function nova(client: DeepgramClient, format: AudioFormat, options: RecognitionOptions, timeoutMs: number) {
  return {
    open: async (): Promise<AnySocket> =>
      (await client.listen.v1.connect({
        model: options.model ?? DEEPGRAM_DEFAULT_MODEL,
        language: options.language,
        encoding: format.encoding === 'mulaw' ? 'mulaw' : 'linear16',
        sample_rate: format.sampleRate,
        channels: 1,
        interim_results: 'true',
        vad_events: 'true',
        endpointing: ENDPOINTING_MS,
        utterance_end_ms: UTTERANCE_END_MS,
        smart_format: 'true',
        punctuate: 'true',
        // A reconnect would lose the audio sent meanwhile and start the transcript's clock anew: the caller decides.
        reconnectAttempts: 0,
        shouldReconnect: () => false,
        connectionTimeoutInSeconds: timeoutMs / 1000,
      })) as unknown as AnySocket,
    reader: (emit: (event: RecognitionEvent) => void) => utteranceTracker(emit),
  };
}

function flux(client: DeepgramClient, format: AudioFormat, options: RecognitionOptions, timeoutMs: number) {
  const model = options.model ?? FLUX_DEFAULT_MODEL;
  return {
    open: async (): Promise<AnySocket> =>
      (await client.listen.v2.connect({
        model,
        encoding: format.encoding === 'mulaw' ? 'mulaw' : 'linear16',
        sample_rate: format.sampleRate,
        eot_threshold: FLUX_EOT_THRESHOLD,
        eager_eot_threshold: FLUX_EAGER_EOT_THRESHOLD,
        // The multilingual model is told the agent's language; the English one takes no hint.
        ...(model === 'flux-general-multi' ? { language_hint: options.language.split('-')[0]! } : {}),
        reconnectAttempts: 0,
        shouldReconnect: () => false,
        connectionTimeoutInSeconds: timeoutMs / 1000,
      } as Parameters<DeepgramClient['listen']['v2']['connect']>[0])) as unknown as AnySocket & FluxSocket,
    reader: fluxTurns,
  };
}

function listen(
  client: DeepgramClient | undefined,
  format: AudioFormat,
  options: RecognitionOptions,
  timeoutMs: number,
  keepAliveMs: number,
): LiveRecognition {
  const events = eventQueue<RecognitionEvent>();
  if (!client) {
    events.fail(new ProviderError('Deepgram: no API key is configured.', { retryable: false }));
    return { send: () => undefined, events, close: async () => undefined };
  }

  // Audio sent before the socket is open waits here, in order.
  const pending: Buffer[] = [];
  let socket: AnySocket | undefined;
  let open = false;
  let closeRequested = false;
  let closeStreamSent = false;
  let socketError: Error | undefined;
  let finished = false;
  let markClosed = () => undefined as void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const endpoint = (isFluxModel(options.model) ? flux : nova)(client, format, options, timeoutMs);
  const reader = endpoint.reader(events.push);

  const keepAlive = setInterval(() => {
    if (open && !closeStreamSent) socket?.sendKeepAlive?.({ type: 'KeepAlive' });
  }, keepAliveMs);
  keepAlive.unref();
  let closeDeadline: NodeJS.Timeout | undefined;

  const finish = (failure: ProviderError | undefined) => {
    if (finished) return;
    finished = true;
    clearInterval(keepAlive);
    clearTimeout(closeDeadline);
    options.signal?.removeEventListener('abort', abort);
    if (failure) events.fail(failure);
    else events.end();
    markClosed();
  };
  const abort = () => {
    socket?.close();
    finish(new ProviderError('Deepgram: the recognition was cancelled.', { retryable: false }));
  };
  const sendCloseStream = () => {
    closeStreamSent = true;
    socket!.sendCloseStream({ type: 'CloseStream' });
    // The server flushes its last results and closes; one that does not must not hold the call's end.
    closeDeadline = setTimeout(() => {
      socket?.close();
      finish(new ProviderError(`Deepgram: the stream did not close within ${timeoutMs} ms of CloseStream.`, { retryable: true }));
    }, timeoutMs);
  };

  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener('abort', abort, { once: true });

  endpoint
    .open()
    .then((connection) => {
      socket = connection;
      if (finished) return connection.close();
      connection.on('open', () => {
        open = true;
        for (const audio of pending.splice(0)) connection.sendMedia(audio);
        keepAlive.refresh();
        if (closeRequested) sendCloseStream();
      });
      connection.on('message', (message) => {
        try {
          reader.read(message as never);
        } catch (error) {
          // Deepgram said the stream failed (Flux's Error message): the call hears why, the socket is let go.
          connection.close();
          finish(error as ProviderError);
        }
      });
      connection.on('error', (error) => (socketError ??= error));
      // The SDK reports a failed connection as a close and then an error, in one turn: decide once both are in.
      connection.on('close', (event) => queueMicrotask(() => finish(closeFailure(socketError, event, closeStreamSent, timeoutMs))));
      connection.connect();
    })
    .catch((error: unknown) =>
      finish(new ProviderError(`Deepgram: could not open the stream: ${messageOf(error)}`, { retryable: true, cause: error })),
    );

  return {
    send(audio) {
      if (finished || closeRequested) return;
      if (!open) {
        pending.push(audio);
        return;
      }
      socket!.sendMedia(audio);
      keepAlive.refresh();
    },
    events,
    async close() {
      if (!finished && !closeRequested) {
        closeRequested = true;
        if (open) sendCloseStream();
      }
      await closed;
    },
  };
}

/**
 * Deepgram's messages as our events. An utterance ends at a `speech_final` result or at an
 * `UtteranceEnd` message, whichever comes first; the other one then finds no words since and is
 * not reported again.
 */
function utteranceTracker(emit: (event: RecognitionEvent) => void) {
  let finalWordsSinceEnd = false;
  /** `afterSilenceMs`: the silence Deepgram waited for before saying so (its endpointing, or the utterance-end gap). */
  const endUtterance = (afterSilenceMs: number) => {
    if (!finalWordsSinceEnd) return;
    finalWordsSinceEnd = false;
    emit({ type: 'utterance_end', afterSilenceMs });
  };
  return {
    read(message: ListenMessage | string) {
      if (typeof message !== 'object') return;
      switch (message.type) {
        case 'SpeechStarted':
          emit({ type: 'speech_started' });
          return;
        case 'Results': {
          const text = storableText(message.channel.alternatives[0]?.transcript ?? '');
          const final = message.is_final === true;
          if (text) emit({ type: 'transcript', text, final });
          if (final && text) finalWordsSinceEnd = true;
          if (message.speech_final) endUtterance(ENDPOINTING_MS);
          return;
        }
        case 'UtteranceEnd':
          endUtterance(UTTERANCE_END_MS);
          return;
        default:
          return; // Metadata: nothing for the pipeline
      }
    },
  };
}

/**
 * Flux's turns as our events: the words of the turn so far as interim words, its start as the
 * caller speaking, its ends (eager, then final or resumed) as they are. An `Error` message fails
 * the recognition (Deepgram closes the stream after it).
 */
function fluxTurns(emit: (event: RecognitionEvent) => void) {
  return {
    read(message: FluxMessage | string) {
      if (typeof message !== 'object') return;
      if (message.type === 'Error') throw new ProviderError(`Deepgram Flux: ${message.code}: ${message.description}`, { retryable: false });
      if (message.type !== 'TurnInfo') return; // Connected: nothing for the pipeline
      const text = storableText(message.transcript.trim());
      switch (message.event) {
        case 'StartOfTurn':
          emit({ type: 'speech_started', confirmed: true });
          if (text) emit({ type: 'transcript', text, final: false });
          return;
        case 'Update':
          if (text) emit({ type: 'transcript', text, final: false });
          return;
        case 'EagerEndOfTurn':
          return emit({ type: 'end_of_turn', text, eager: true });
        case 'TurnResumed':
          return emit({ type: 'turn_resumed' });
        case 'EndOfTurn':
          return emit({ type: 'end_of_turn', text, eager: false });
        default:
          return; // an event Deepgram adds later
      }
    },
  };
}

/** Why the stream closed, as a ProviderError, or undefined when it closed as asked after CloseStream. */
function closeFailure(
  socketError: Error | undefined,
  event: { code?: number; reason?: string },
  closeStreamSent: boolean,
  timeoutMs: number,
): ProviderError | undefined {
  if (socketError) return connectionFailure(socketError, timeoutMs);
  const code = event.code ?? 1005;
  if (closeStreamSent && (code === 1000 || code === 1005)) return undefined;
  // Deepgram names its own reasons in the close frame (NET-0001 for silence, DATA-0000 for unreadable audio).
  const reason = event.reason ? `: ${event.reason}` : '';
  return new ProviderError(`Deepgram closed the stream unexpectedly (WebSocket code ${code}${reason}).`, {
    retryable: code !== 1008,
    code,
  });
}

function connectionFailure(error: Error, timeoutMs: number): ProviderError {
  if (error.message === 'TIMEOUT')
    return new ProviderError(`Deepgram: no connection within ${timeoutMs} ms.`, { retryable: true, cause: error });
  const status = Number(/Unexpected server response: (\d{3})/.exec(error.message)?.[1]);
  if (!status) return new ProviderError(`Deepgram: the connection failed: ${error.message}`, { retryable: true, cause: error });
  const retryable = status === 429 || status >= 500;
  const what =
    status === 401
      ? 'refused the API key (HTTP 401)'
      : status === 403
        ? 'does not allow this key to stream (HTTP 403)'
        : status === 400
          ? 'refused the stream’s parameters (HTTP 400)'
          : status === 429
            ? 'is throttling this account (HTTP 429)'
            : `refused the stream (HTTP ${status})`;
  return new ProviderError(`Deepgram ${what}.`, { status, retryable, cause: error });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
