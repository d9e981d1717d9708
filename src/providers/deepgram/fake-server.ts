// A local Deepgram live transcription server (`GET /v1/listen` upgraded to a WebSocket) speaking
// Deepgram's wire format: `Authorization: Token <key>` checked at the upgrade (401 with Deepgram's
// error body otherwise), binary audio frames in, JSON `SpeechStarted`, `Results`, `UtteranceEnd`
// and `Metadata` out, `KeepAlive` and `CloseStream` text frames understood. And Flux
// (`GET /v2/listen`, a `flux-` model): `Connected`, then `TurnInfo` messages (StartOfTurn, Update,
// EagerEndOfTurn, TurnResumed, EndOfTurn) with their sequence and turn numbers, `CloseStream` understood. What it says is
// scripted by each test against the bytes of audio received, so no clock is involved.
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { listenOnLoopback } from '../fake-server.ts';

/** What the fake says, each step once the audio received reaches `afterBytes`, or when the client sends CloseStream (`atClose`). */
export type FakeListenStep = ({ afterBytes: number } | { atClose: true }) &
  (
    | { say: 'SpeechStarted' }
    /** A Results message; `speechFinal` marks the end of speech (endpointing), which implies `final`. */
    | { say: 'Results'; transcript: string; final: boolean; speechFinal?: boolean }
    | { say: 'UtteranceEnd' }
    /** Drops the TCP connection without a close frame, as a network failure does. */
    | { say: 'drop' }
    /** Closes with this WebSocket code and reason, as Deepgram does on its own errors (`1011`, `NET-0001`). */
    | { say: 'close'; code: number; reason: string }
    /** Flux: its Error message (Deepgram closes the stream after it). */
    | { say: 'FluxError'; code: string; description: string }
    /** Flux: a TurnInfo message of this event, with the turn's words so far. */
    | { say: 'TurnInfo'; event: 'StartOfTurn' | 'Update' | 'EagerEndOfTurn' | 'TurnResumed' | 'EndOfTurn'; transcript: string }
  );

/**
 * One caller turn as Flux reports it: its start, its words growing in Updates, then its end. With
 * `eagerAfterBytes` an EagerEndOfTurn comes first (the turn probably over), then the EndOfTurn;
 * with `resumedAfterBytes` too, the caller went on: TurnResumed, and `text` is the rest of the turn
 * (`eagerText` what was eagerly ended), eagerly ended again at `eagerAgainAfterBytes` (by default with the end).
 */
export function fluxTurn(
  text: string,
  at: {
    startsAfterBytes: number;
    endsAfterBytes: number;
    eagerAfterBytes?: number;
    resumedAfterBytes?: number;
    eagerText?: string;
    eagerAgainAfterBytes?: number;
  },
): FakeListenStep[] {
  const turnInfo = (afterBytes: number, event: Extract<FakeListenStep, { say: 'TurnInfo' }>['event'], transcript: string) =>
    ({ afterBytes, say: 'TurnInfo', event, transcript }) as const;
  const steps: FakeListenStep[] = [turnInfo(at.startsAfterBytes, 'StartOfTurn', '')];
  if (at.eagerAfterBytes !== undefined) steps.push(turnInfo(at.eagerAfterBytes, 'EagerEndOfTurn', at.eagerText ?? text));
  if (at.resumedAfterBytes !== undefined) {
    steps.push(turnInfo(at.resumedAfterBytes, 'TurnResumed', at.eagerText ?? text), turnInfo(at.resumedAfterBytes, 'Update', text));
    steps.push(turnInfo(at.eagerAgainAfterBytes ?? at.endsAfterBytes, 'EagerEndOfTurn', text));
  } else steps.push(turnInfo(at.endsAfterBytes, 'Update', text));
  steps.push(turnInfo(at.endsAfterBytes, 'EndOfTurn', text));
  return steps;
}

/** One caller utterance as Deepgram reports it: speech started, the words growing in interim results, one final result ending the speech, then UtteranceEnd. */
export function utterance(
  text: string,
  at: { startsAfterBytes: number; endsAfterBytes: number },
  options: { speechFinal?: boolean; utteranceEnd?: boolean } = {},
): FakeListenStep[] {
  const words = text.split(' ');
  const span = at.endsAfterBytes - at.startsAfterBytes;
  const interims = words.slice(0, -1).map((_, index) => ({
    afterBytes: at.startsAfterBytes + Math.floor((span * (index + 1)) / words.length),
    say: 'Results' as const,
    transcript: words.slice(0, index + 1).join(' '),
    final: false,
  }));
  return [
    { afterBytes: at.startsAfterBytes, say: 'SpeechStarted' },
    ...interims,
    { afterBytes: at.endsAfterBytes, say: 'Results', transcript: text, final: true, speechFinal: options.speechFinal ?? true },
    ...(options.utteranceEnd === false ? [] : [{ afterBytes: at.endsAfterBytes, say: 'UtteranceEnd' as const }]),
  ];
}

export interface FakeListenSession {
  /** The query string of the upgrade request, as received. */
  query: Record<string, string>;
  authorization: string | undefined;
  /** Binary frames in the order received. */
  audioFrames: Buffer[];
  /** Text frames, parsed (`{type: 'KeepAlive'}`, `{type: 'CloseStream'}`). */
  controlMessages: { type: string }[];
  /** Every message the fake sent, parsed. */
  sent: Record<string, unknown>[];
  /** Resolves when the connection is gone. */
  closed: Promise<void>;
}

export async function startFakeDeepgram(options: { apiKey?: string } = {}) {
  const apiKey = options.apiKey ?? 'dg-test-key';
  const scripts: FakeListenStep[][] = [];
  const sessions: FakeListenSession[] = [];
  const sockets = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ err_code: 'UPGRADE_REQUIRED', err_msg: 'This endpoint expects a WebSocket upgrade.' }));
  });
  server.on('upgrade', (req: IncomingMessage, tcp: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/v1/listen' && url.pathname !== '/v2/listen') return refuse(tcp, 404, 'NOT_FOUND', 'Unknown path.');
    if (req.headers.authorization !== `Token ${apiKey}`) return refuse(tcp, 401, 'INVALID_AUTH', 'Invalid credentials.');
    const query = Object.fromEntries(url.searchParams);
    const problem = queryProblem(query) ?? (url.pathname === '/v2/listen' ? fluxProblem(query) : undefined);
    if (problem) return refuse(tcp, 400, 'Bad Request', problem);
    sockets.handleUpgrade(req, tcp, head, (socket) => serve(socket, query, req.headers.authorization, scripts.shift() ?? []));
  });

  function serve(socket: WebSocket, query: Record<string, string>, authorization: string | undefined, script: FakeListenStep[]) {
    const session: FakeListenSession = {
      query,
      authorization,
      audioFrames: [],
      controlMessages: [],
      sent: [],
      closed: new Promise((resolve) => socket.once('close', () => resolve())),
    };
    sessions.push(session);
    const requestId = randomUUID();
    const bytesPerSecond = Number(query.sample_rate) * (query.encoding === 'linear16' ? 2 : 1);
    const secondsAt = (bytes: number) => Math.round((bytes / bytesPerSecond) * 1000) / 1000;
    let received = 0;
    let segmentStart = 0;
    let lastWordEnd = 0;
    let sequence = 0;
    let turnIndex = 0;
    const flux = isFlux(query);
    const send = (message: Record<string, unknown>) => {
      const sent = flux ? { ...message, sequence_id: sequence++ } : message;
      session.sent.push(sent);
      socket.send(JSON.stringify(sent));
    };
    if (flux) send({ type: 'Connected', request_id: requestId });
    const perform = (step: FakeListenStep, atBytes: number) => {
      const now = secondsAt(atBytes);
      switch (step.say) {
        case 'SpeechStarted':
          return send({ type: 'SpeechStarted', channel: [0], timestamp: now });
        case 'Results': {
          const final = step.final || step.speechFinal === true;
          send(results(step.transcript, { start: segmentStart, end: now, final, speechFinal: step.speechFinal === true, requestId }));
          if (final) {
            segmentStart = now;
            if (step.transcript) lastWordEnd = now;
          }
          return;
        }
        case 'UtteranceEnd':
          return send({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: lastWordEnd });
        case 'TurnInfo': {
          if (step.event === 'StartOfTurn') segmentStart = now;
          const words = step.transcript ? step.transcript.split(' ') : [];
          send({
            type: 'TurnInfo',
            request_id: requestId,
            event: step.event,
            turn_index: turnIndex,
            audio_window_start: segmentStart,
            audio_window_end: now,
            transcript: step.transcript,
            words: words.map((word) => ({ word, confidence: 0.97 })),
            end_of_turn_confidence: step.event === 'EndOfTurn' ? 0.82 : step.event === 'EagerEndOfTurn' ? 0.55 : 0.1,
            ...(step.event === 'EndOfTurn' ? { trigger: 'model' } : {}),
          });
          if (step.event === 'EndOfTurn') turnIndex++;
          return;
        }
        case 'FluxError':
          send({ type: 'Error', code: step.code, description: step.description });
          return socket.close(1011, step.code);
        case 'drop':
          return socket.terminate();
        case 'close':
          return socket.close(step.code, step.reason);
      }
    };
    const performDue = () => {
      while (script[0] && 'afterBytes' in script[0] && script[0].afterBytes <= received) perform(script.shift()!, received);
    };
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        session.audioFrames.push(Buffer.from(data));
        received += data.length;
        return performDue();
      }
      const message = JSON.parse(data.toString('utf8')) as { type: string };
      session.controlMessages.push(message);
      if (message.type !== 'CloseStream') return;
      // Deepgram finishes the audio it holds, sends the summary Metadata (v1), then closes normally.
      for (const step of script.splice(0)) if ('atClose' in step) perform(step, received);
      if (flux) return socket.close(1000);
      const audio = Buffer.concat(session.audioFrames);
      send({
        type: 'Metadata',
        transaction_key: 'deprecated',
        request_id: requestId,
        sha256: createHash('sha256').update(audio).digest('hex'),
        created: new Date().toISOString(),
        duration: secondsAt(received),
        channels: 1,
      });
      socket.close(1000);
    });
  }

  const listening = await listenOnLoopback(server);
  return {
    /** The API origin to configure (`DEEPGRAM_API_URL`); the client turns it into `ws://`. */
    url: listening.url,
    apiKey,
    sessions,
    /** Queues the steps of the next connection (one call per connection, in order). */
    script(...steps: FakeListenStep[]) {
      scripts.push(steps);
    },
    /** The received audio of a session, concatenated. */
    audioOf(session: FakeListenSession): Buffer {
      return Buffer.concat(session.audioFrames);
    },
    async close() {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      await listening.close();
    },
  };
}

function refuse(tcp: Duplex, status: number, errCode: string, errMsg: string) {
  const body = JSON.stringify({ err_code: errCode, err_msg: errMsg, request_id: randomUUID() });
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found' }[status] ?? 'Error';
  tcp.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ndg-error: ${errMsg}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

const isFlux = (query: Record<string, string>) => query.model?.startsWith('flux-') === true;

/** Flux's own parameters, as Deepgram bounds them: a Flux model, end-of-turn thresholds in their ranges. */
function fluxProblem(query: Record<string, string>): string | undefined {
  if (!isFlux(query)) return `/v2/listen serves Flux models only, not ${query.model}.`;
  const within = (name: string, low: number, high: number) =>
    query[name] === undefined || (Number(query[name]) >= low && Number(query[name]) <= high);
  if (!within('eot_threshold', 0.5, 0.9)) return 'eot_threshold must be between 0.5 and 0.9.';
  if (!within('eager_eot_threshold', 0.3, 0.9)) return 'eager_eot_threshold must be between 0.3 and 0.9.';
  if (query.eager_eot_threshold !== undefined && Number(query.eager_eot_threshold) > Number(query.eot_threshold ?? 0.7))
    return 'eager_eot_threshold must not be above eot_threshold.';
  return undefined;
}

/** What Deepgram itself would refuse: an encoding it cannot read raw or no sample rate for raw audio. */
function queryProblem(query: Record<string, string>): string | undefined {
  if (!['mulaw', 'linear16'].includes(query.encoding ?? '')) return `Unsupported encoding for this fake: ${query.encoding}.`;
  if (!/^\d+$/.test(query.sample_rate ?? '')) return 'Raw audio needs sample_rate.';
  if (!query.model) return 'A model is required by this fake.';
  return undefined;
}

function results(transcript: string, at: { start: number; end: number; final: boolean; speechFinal: boolean; requestId: string }) {
  const words = transcript ? transcript.split(' ') : [];
  const step = words.length ? (at.end - at.start) / words.length : 0;
  return {
    type: 'Results',
    channel_index: [0, 1],
    duration: Math.round((at.end - at.start) * 1000) / 1000,
    start: at.start,
    is_final: at.final,
    speech_final: at.speechFinal,
    channel: {
      alternatives: [
        {
          transcript,
          confidence: words.length ? 0.98 : 0,
          words: words.map((word, index) => ({
            word: word.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''),
            start: Math.round((at.start + index * step) * 1000) / 1000,
            end: Math.round((at.start + (index + 1) * step) * 1000) / 1000,
            confidence: 0.98,
            punctuated_word: word,
          })),
        },
      ],
    },
    metadata: {
      request_id: at.requestId,
      model_info: { name: 'general-nova-3', version: '2025-01-01.0', arch: 'nova-3' },
      model_uuid: '40bd3654-e622-47c4-a111-63a61b23bfe5',
    },
    from_finalize: false,
  };
}
