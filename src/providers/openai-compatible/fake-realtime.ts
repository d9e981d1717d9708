// A local OpenAI Realtime server (`GET /v1/realtime?model=…` upgraded to a WebSocket) speaking the
// GA event protocol: `session.update` answered with `session.updated`; `input_audio_buffer.append`
// kept; `response.create` answered with the next scripted response (its audio as
// `response.output_audio.delta` chunks, its transcript, a function call, `response.done` with usage);
// `conversation.item.truncate` answered with `conversation.item.truncated`. A test plays the
// server's turn detection itself (`callerTurn`: speech_started, speech_stopped, committed, the
// transcription, then the next response, as server VAD with create_response does).
import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { listenOnLoopback } from '../fake-server.ts';

/** One scripted response of the model's. */
export interface FakeRealtimeResponse {
  /** What it says: its transcript; its audio is `audioBytes` bytes of the session's output format, in `chunks` deltas. */
  text?: string;
  audioBytes?: number;
  chunks?: number;
  /** Milliseconds between two audio deltas (a real server streams about as fast as it speaks); 0 by default. */
  paceMs?: number;
  /** A function the model calls after speaking. */
  functionCall?: { name: string; arguments: string };
  usage: { inputText: number; inputAudio: number; outputText: number; outputAudio: number };
}

export interface FakeRealtimeSession {
  /** The upgrade's query (`model`) and bearer header. */
  query: Record<string, string>;
  authorization: string | undefined;
  /** Every client event but the audio appends, in order. */
  received: { type: string; [field: string]: unknown }[];
  /** The bytes of the caller's audio appended, in order, as sent (base64-decoded). */
  audio(): Buffer;
  /** The last session.update's `session`. */
  session(): Record<string, unknown> | undefined;
  /** The server's turn detection, played by the test: the caller spoke `text`; the next scripted response answers. */
  callerTurn(text: string, options?: { transcriptionSeconds?: number; respond?: boolean }): Promise<void>;
  /** The caller starts speaking (server VAD's speech_started). */
  speechStarted(): void;
  /** An error event (not fatal: the socket stays open). */
  error(message: string): void;
  /** Settles once every response begun so far was sent whole. */
  settled(): Promise<void>;
}

let ids = 0;
const nextId = (prefix: string) => `${prefix}_${(++ids).toString(36).padStart(6, '0')}`;

export async function startFakeRealtime(options: { apiKey?: string } = {}) {
  const responses: FakeRealtimeResponse[] = [];
  const sessions: FakeRealtimeSession[] = [];
  const server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'This endpoint expects a WebSocket upgrade.' } }));
  });
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, tcp: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/v1/realtime' || (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`)) {
      tcp.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    sockets.handleUpgrade(req, tcp, head, (socket) => sessions.push(serve(socket, Object.fromEntries(url.searchParams), req)));
  });

  function serve(socket: WebSocket, query: Record<string, string>, req: IncomingMessage): FakeRealtimeSession {
    const received: FakeRealtimeSession['received'] = [];
    const appended: Buffer[] = [];
    let session: Record<string, unknown> | undefined;
    let sending: Promise<void> = Promise.resolve();
    const send = (event: Record<string, unknown>) => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ event_id: nextId('event'), ...event }));
    };
    const outputIsPcmu = () =>
      ((session?.audio as { output?: { format?: { type?: string } } } | undefined)?.output?.format?.type ?? 'audio/pcm') === 'audio/pcmu';

    /** Sends the next scripted response, as a server streams it. */
    function respond(): void {
      const script = responses.shift();
      sending = sending.then(async () => {
        const responseId = nextId('resp');
        send({ type: 'response.created', response: { id: responseId, object: 'realtime.response', status: 'in_progress', output: [] } });
        if (!script) {
          send({ type: 'response.done', response: { id: responseId, status: 'failed', output: [], usage: null } });
          return;
        }
        if (script.text !== undefined) {
          const itemId = nextId('item');
          send({
            type: 'response.output_item.added',
            response_id: responseId,
            output_index: 0,
            item: { id: itemId, type: 'message', role: 'assistant' },
          });
          const bytes = script.audioBytes ?? 1600;
          const chunks = script.chunks ?? 4;
          const silence = outputIsPcmu() ? 0xff : 0;
          for (let i = 0; i < chunks; i++) {
            const size = Math.floor(bytes / chunks) + (i === chunks - 1 ? bytes % chunks : 0);
            send({
              type: 'response.output_audio.delta',
              response_id: responseId,
              item_id: itemId,
              output_index: 0,
              content_index: 0,
              delta: Buffer.alloc(size, silence).toString('base64'),
            });
            if (script.paceMs) await new Promise((resolve) => setTimeout(resolve, script.paceMs));
          }
          send({ type: 'response.output_audio.done', response_id: responseId, item_id: itemId, output_index: 0, content_index: 0 });
          send({
            type: 'response.output_audio_transcript.done',
            response_id: responseId,
            item_id: itemId,
            output_index: 0,
            content_index: 0,
            transcript: script.text,
          });
        }
        if (script.functionCall) {
          const itemId = nextId('item');
          send({
            type: 'response.function_call_arguments.done',
            response_id: responseId,
            item_id: itemId,
            output_index: 1,
            call_id: nextId('call'),
            name: script.functionCall.name,
            arguments: script.functionCall.arguments,
          });
        }
        const { inputText, inputAudio, outputText, outputAudio } = script.usage;
        send({
          type: 'response.done',
          response: {
            id: responseId,
            object: 'realtime.response',
            status: 'completed',
            output: [],
            usage: {
              total_tokens: inputText + inputAudio + outputText + outputAudio,
              input_tokens: inputText + inputAudio,
              output_tokens: outputText + outputAudio,
              input_token_details: { text_tokens: inputText, audio_tokens: inputAudio, cached_tokens: 0 },
              output_token_details: { text_tokens: outputText, audio_tokens: outputAudio },
            },
          },
        });
      });
    }

    socket.on('message', (data) => {
      const event = JSON.parse(data.toString()) as { type: string; [field: string]: unknown };
      if (event.type === 'input_audio_buffer.append') return void appended.push(Buffer.from(String(event.audio), 'base64'));
      received.push(event);
      switch (event.type) {
        case 'session.update':
          session = event.session as Record<string, unknown>;
          return send({ type: 'session.updated', session: { ...session, id: nextId('sess'), object: 'realtime.session' } });
        case 'response.create':
          return respond();
        case 'input_audio_buffer.commit':
          return send({ type: 'input_audio_buffer.committed', item_id: nextId('item'), previous_item_id: null });
        case 'conversation.item.truncate':
          return send({ type: 'conversation.item.truncated', item_id: event.item_id, content_index: 0, audio_end_ms: event.audio_end_ms });
        case 'conversation.item.create':
          return send({ type: 'conversation.item.added', item: event.item });
        default:
          return;
      }
    });

    return {
      query,
      authorization: req.headers.authorization,
      received,
      audio: () => Buffer.concat(appended),
      session: () => session,
      speechStarted: () => send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 0, item_id: nextId('item') }),
      async callerTurn(text, turn = {}) {
        const itemId = nextId('item');
        send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 0, item_id: itemId });
        send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: 1000, item_id: itemId });
        send({ type: 'input_audio_buffer.committed', item_id: itemId, previous_item_id: null });
        send({
          type: 'conversation.item.input_audio_transcription.completed',
          item_id: itemId,
          content_index: 0,
          transcript: text,
          usage: { type: 'duration', seconds: turn.transcriptionSeconds ?? 1 },
        });
        if (turn.respond !== false) respond();
        await sending;
      },
      error: (message) => send({ type: 'error', error: { type: 'invalid_request_error', code: 'fake_error', message, param: null } }),
      settled: () => sending,
    };
  }

  const listening = await listenOnLoopback(server);
  return {
    ...listening,
    sessions,
    /** Queues the responses to the next response.create (or caller turn), in order. */
    script(...next: FakeRealtimeResponse[]) {
      responses.push(...next);
    },
    async close() {
      for (const client of sockets.clients) client.terminate();
      await listening.close();
    },
  };
}
