/**
 * Twilio's side of a media stream, for tests: connects as Twilio does (the upgrade signed with
 * `X-Twilio-Signature` over the stream URL from the call's TwiML; `connected`, then `start` with the
 * call and stream sids and the TwiML's custom parameters), sends the caller's audio as 20 ms μ-law
 * `media` frames (at real pace when asked), `dtmf` and `stop`, and records what comes back:
 * agent audio, marks (echoed once "played", as Twilio does, unless held) and `clear`.
 *
 * The signature is computed here independently of the provider's code, so tests check one against the other.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';

export interface TwimlStream {
  url: string;
  parameters: Record<string, string>;
}

/** XML text as written in TwiML, read back. */
export const unescapeXml = (value: string) =>
  value
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

/** The `<Parameter>`s of a call's TwiML: what Twilio passes on to the socket it opens. */
export const parametersOf = (twiml: string): Record<string, string> =>
  Object.fromEntries(
    [...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unescapeXml(m[1]!), unescapeXml(m[2]!)]),
  );

/** The `<Stream>` of a call's TwiML: where Twilio connects, and the custom parameters it passes on. */
export function streamOf(twiml: string): TwimlStream {
  const url = /<Stream url="([^"]*)"/.exec(twiml)?.[1];
  if (url === undefined) throw new Error(`No <Stream> in ${twiml}`);
  return { url: unescapeXml(url), parameters: parametersOf(twiml) };
}

export interface StreamMessage {
  event: string;
  streamSid?: string;
  media?: { payload: string };
  mark?: { name: string };
}

export interface FakeMediaStream {
  streamSid: string;
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

export interface FakeMediaStreamOptions {
  /** Where to connect (the test server's address); the signature is over `stream.url`. */
  connectTo: string;
  stream: TwimlStream;
  accountSid: string;
  authToken: string;
  callSid: string;
  /** Overrides the signature (unsigned: null). */
  signature?: string | null;
  /** Overrides the custom parameters sent in `start`. */
  parameters?: Record<string, string>;
  /** Called with each message as it arrives (a bench times the agent's audio). */
  onMessage?: (message: StreamMessage) => void;
}

const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law

/** `X-Twilio-Signature` of a socket's upgrade: over its URL alone (Twilio signs no parameters there). */
export const signLikeTwilio = (authToken: string, url: string) => createHmac('sha1', authToken).update(url, 'utf8').digest('base64');

/**
 * A socket opened as Twilio opens its media streams and conversation relays: the upgrade signed over
 * `signedUrl` (`signature` overrides it; null sends none). Rejects when the upgrade is refused, with
 * the HTTP status in the message; `closed` resolves with the server's close code and reason.
 */
export async function openTwilioSocket(connectTo: string, signedUrl: string, authToken: string, signature?: string | null) {
  const signed = signature === undefined ? signLikeTwilio(authToken, signedUrl) : signature;
  const socket = new WebSocket(connectTo, { headers: signed === null ? {} : { 'X-Twilio-Signature': signed } });
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
export async function openFakeMediaStream(options: FakeMediaStreamOptions): Promise<FakeMediaStream> {
  const { socket, closed } = await openTwilioSocket(options.connectTo, options.stream.url, options.authToken, options.signature);
  const streamSid = `MZ${randomBytes(16).toString('hex')}`;
  const received: StreamMessage[] = [];
  const held: string[] = [];
  let holding = false;
  let sequence = 0;
  let chunk = 0;
  const send = (message: object) => socket.send(JSON.stringify({ sequenceNumber: String(++sequence), ...message }));
  const echoMark = (name: string) => send({ event: 'mark', streamSid, mark: { name } });

  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as StreamMessage;
    received.push(message);
    options.onMessage?.(message);
    // Twilio reports the marks of the audio a clear dropped, as it does those of audio played.
    if (message.event === 'clear') for (const name of held.splice(0)) echoMark(name);
    if (message.event !== 'mark') return;
    if (holding) held.push(message.mark!.name);
    else echoMark(message.mark!.name);
  });

  send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  send({
    event: 'start',
    streamSid,
    start: {
      accountSid: options.accountSid,
      streamSid,
      callSid: options.callSid,
      tracks: ['inbound'],
      customParameters: options.parameters ?? options.stream.parameters,
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
  });

  return {
    streamSid,
    received,
    async sendAudio(audio, { realPace = false } = {}) {
      for (let offset = 0; offset < audio.length; offset += FRAME_BYTES) {
        const payload = audio.subarray(offset, offset + FRAME_BYTES).toString('base64');
        send({ event: 'media', streamSid, media: { track: 'inbound', chunk: String(++chunk), timestamp: String(chunk * 20), payload } });
        if (realPace) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    sendDtmf: (digit) => send({ event: 'dtmf', streamSid, dtmf: { track: 'inbound_track', digit } }),
    holdMarks(hold) {
      holding = hold;
    },
    releaseMarks(count = held.length) {
      for (const name of held.splice(0, count)) echoMark(name);
    },
    sendRaw: (message) => socket.send(message),
    stop() {
      send({ event: 'stop', streamSid, stop: { accountSid: options.accountSid, callSid: options.callSid } });
      socket.close(1000);
    },
    closed,
  };
}
