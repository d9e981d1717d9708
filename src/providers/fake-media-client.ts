/**
 * A telephony provider's side of a media stream, for tests and benches: connects with the upgrade
 * headers the provider sends, sends its opening messages (`connected`, `start`), the caller's audio
 * as 20 ms μ-law frames (at real pace when asked), keys and `stop`, and records what comes back:
 * agent audio, marks and clears. Marks are echoed as soon as they arrive (the audio before them
 * "played") unless held, and a clear echoes the marks of the audio it dropped, as Twilio and Telnyx
 * both do. Each provider's fake (twilio/fake-media-stream.ts, telnyx/fake-media-stream.ts) writes
 * its own messages through a `MediaDialect`.
 */
import { WebSocket } from 'ws';

/** How one provider writes the messages it sends on a media stream. */
export interface MediaDialect {
  /** What opens the stream, in order (`connected`, then `start`). */
  opening(): object[];
  /** One frame of the caller's audio, base64; `chunk` counts frames from 1. */
  media(payload: string, chunk: number): object;
  dtmf(digit: string): object;
  /** A mark we sent, reported back once played. */
  mark(name: string): object;
  stop(): object;
}

/** A message the service sent on the stream, as parsed. */
export interface StreamMessage {
  event: string;
  media?: { payload: string };
  mark?: { name: string };
  [field: string]: unknown;
}

export interface FakeMediaClient {
  /** Every message we received, in order. */
  received: StreamMessage[];
  /** Sends caller audio as 20 ms frames; `realPace` spaces them 20 ms apart as a phone line does. */
  sendAudio(audio: Buffer, options?: { realPace?: boolean }): Promise<void>;
  sendDtmf(digit: string): void;
  /** Marks are echoed as soon as they arrive (the audio before them "played") unless held. */
  holdMarks(hold: boolean): void;
  /** Echoes the first `count` marks held so far (all by default), as their audio finishes playing. */
  releaseMarks(count?: number): void;
  /** Sends a raw text message (malformed frames in tests). */
  sendRaw(message: string): void;
  stop(): void;
  /** Resolves when the server closes the socket, with its close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
}

export interface FakeMediaClientOptions {
  /** Where to connect (the test server's address). */
  connectTo: string;
  /** The upgrade's headers (a signature, a token). */
  headers: Record<string, string>;
  dialect: MediaDialect;
  /** Called with each message as it arrives (a bench times the agent's audio). */
  onMessage?: (message: StreamMessage) => void;
}

const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law

/**
 * A socket opened as a provider opens one to us (a media stream, a conversation relay), with its
 * upgrade headers. Rejects when the upgrade is refused, with the HTTP status in the message;
 * `closed` resolves with the server's close code and reason.
 */
export async function openProviderSocket(connectTo: string, headers: Record<string, string>) {
  const socket = new WebSocket(connectTo, { headers });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: HTTP ${response.statusCode}`)));
    socket.once('error', reject);
  });
  return { socket, closed };
}

/** Opens the stream; rejects when the upgrade is refused (with the HTTP status in the message). */
export async function openFakeMediaClient(options: FakeMediaClientOptions): Promise<FakeMediaClient> {
  const { dialect } = options;
  const { socket, closed } = await openProviderSocket(options.connectTo, options.headers);
  const received: StreamMessage[] = [];
  const held: string[] = [];
  let holding = false;
  let chunk = 0;
  const send = (message: object) => socket.send(JSON.stringify(message));
  const echoMark = (name: string) => send(dialect.mark(name));

  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as StreamMessage;
    received.push(message);
    options.onMessage?.(message);
    if (message.event === 'clear') for (const name of held.splice(0)) echoMark(name);
    if (message.event !== 'mark') return;
    if (holding) held.push(message.mark!.name);
    else echoMark(message.mark!.name);
  });

  for (const message of dialect.opening()) send(message);

  return {
    received,
    async sendAudio(audio, { realPace = false } = {}) {
      for (let offset = 0; offset < audio.length; offset += FRAME_BYTES) {
        send(dialect.media(audio.subarray(offset, offset + FRAME_BYTES).toString('base64'), ++chunk));
        if (realPace) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    sendDtmf: (digit) => send(dialect.dtmf(digit)),
    holdMarks(hold) {
      holding = hold;
    },
    releaseMarks(count = held.length) {
      for (const name of held.splice(0, count)) echoMark(name);
    },
    sendRaw: (message) => socket.send(message),
    stop() {
      send(dialect.stop());
      socket.close(1000);
    },
    closed,
  };
}
