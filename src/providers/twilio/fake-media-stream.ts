/**
 * Twilio's side of a media stream, for tests: connects as Twilio does (the upgrade signed with
 * `X-Twilio-Signature` over the stream URL from the call's TwiML; `connected`, then `start` with the
 * call and stream sids and the TwiML's custom parameters), sends the caller's audio as 20 ms μ-law
 * `media` frames, `dtmf` and `stop`, and records what comes back (../fake-media-client.ts).
 *
 * The signature is computed here independently of the provider's code, so tests check one against the other.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { openFakeMediaClient, type FakeMediaClient, type MediaDialect, type StreamMessage } from '../fake-media-client.ts';

export type { StreamMessage };

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

export interface FakeMediaStream extends FakeMediaClient {
  streamSid: string;
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

/** `X-Twilio-Signature` of a socket's upgrade (a media stream's, a conversation relay's): over its URL alone. */
export const signLikeTwilio = (authToken: string, url: string) => createHmac('sha1', authToken).update(url, 'utf8').digest('base64');

/** Twilio's messages: every one numbered, the stream's sid on each after `connected`. */
function twilioDialect(options: FakeMediaStreamOptions, streamSid: string): MediaDialect {
  let sequence = 0;
  const numbered = (message: object) => ({ sequenceNumber: String(++sequence), ...message });
  return {
    opening: () => [
      numbered({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
      numbered({
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
      }),
    ],
    media: (payload, chunk) =>
      numbered({ event: 'media', streamSid, media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload } }),
    dtmf: (digit) => numbered({ event: 'dtmf', streamSid, dtmf: { track: 'inbound_track', digit } }),
    mark: (name) => numbered({ event: 'mark', streamSid, mark: { name } }),
    stop: () => numbered({ event: 'stop', streamSid, stop: { accountSid: options.accountSid, callSid: options.callSid } }),
  };
}

/** Opens the stream; rejects when the upgrade is refused (with the HTTP status in the message). */
export async function openFakeMediaStream(options: FakeMediaStreamOptions): Promise<FakeMediaStream> {
  const signature = options.signature === undefined ? signLikeTwilio(options.authToken, options.stream.url) : options.signature;
  const streamSid = `MZ${randomBytes(16).toString('hex')}`;
  const client = await openFakeMediaClient({
    connectTo: options.connectTo,
    headers: signature === null ? {} : { 'X-Twilio-Signature': signature },
    dialect: twilioDialect(options, streamSid),
    ...(options.onMessage ? { onMessage: options.onMessage } : {}),
  });
  return { ...client, streamSid };
}
