/**
 * Twilio Media Streams, bidirectional (`<Connect><Stream>`): Twilio opens a WebSocket to us and sends
 * JSON text messages (`connected`, `start`, `media`, `dtmf`, `mark`, `stop`); audio is 8 kHz μ-law,
 * base64 in `media.payload`. We answer with `media` (agent audio), `mark` (Twilio echoes it once the
 * audio before it was played) and `clear` (drop queued audio: barge-in). The upgrade is signed with
 * `X-Twilio-Signature` over the stream URL, with no parameters.
 * https://www.twilio.com/docs/voice/media-streams/websocket-messages
 */
import { ProviderError } from '../errors.ts';
import type { MediaStreamEvent, MediaStreamWire } from '../types.ts';
import { verifyTwilioSignature } from './telephony.ts';

const PHONE_LINE = { encoding: 'mulaw', sampleRate: 8000 } as const;

const malformed = (why: string) => new ProviderError(`Twilio media stream: ${why}`, { retryable: false });

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** One of Twilio's socket messages: a JSON object, or `malformed` says why not. */
export function jsonObjectOf(message: string, malformed: (why: string) => Error): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    throw malformed('a message that is not JSON.');
  }
  if (!isObject(parsed)) throw malformed('a message that is not a JSON object.');
  return parsed;
}

/** Only the string values of a message's custom parameters (our call id and token among them). */
export const stringsOf = (custom: unknown): Record<string, string> =>
  Object.fromEntries(
    Object.entries(isObject(custom) ? custom : {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );

function read(message: string): MediaStreamEvent {
  const parsed = jsonObjectOf(message, malformed);
  switch (parsed.event) {
    case 'media': {
      const media = parsed.media;
      // Only the caller's side: a stream set to both tracks would echo the agent back to itself.
      if (!isObject(media) || typeof media.payload !== 'string') throw malformed('a media message without a payload.');
      if (media.track !== undefined && media.track !== 'inbound') return { type: 'other' };
      return { type: 'audio', audio: Buffer.from(media.payload, 'base64') };
    }
    case 'start': {
      const start = parsed.start;
      if (!isObject(start) || !text(start.callSid) || !text(parsed.streamSid ?? start.streamSid))
        throw malformed('a start message without its callSid or streamSid.');
      const parameters = stringsOf(start.customParameters);
      const format = isObject(start.mediaFormat) ? start.mediaFormat : {};
      if (
        (format.encoding !== undefined && format.encoding !== 'audio/x-mulaw') ||
        (format.sampleRate !== undefined && format.sampleRate !== 8000)
      )
        throw malformed(`audio in ${String(format.encoding)} at ${String(format.sampleRate)} Hz, not 8 kHz μ-law.`);
      return {
        type: 'start',
        streamId: String(parsed.streamSid ?? start.streamSid),
        providerCallId: start.callSid,
        parameters,
        format: PHONE_LINE,
      };
    }
    case 'mark': {
      const mark = parsed.mark;
      if (!isObject(mark) || !text(mark.name)) throw malformed('a mark message without its name.');
      return { type: 'mark', name: mark.name };
    }
    case 'dtmf': {
      const dtmf = parsed.dtmf;
      if (!isObject(dtmf) || typeof dtmf.digit !== 'string' || !/^[0-9*#A-D]$/.test(dtmf.digit))
        throw malformed('a dtmf message without a key.');
      return { type: 'dtmf', digit: dtmf.digit };
    }
    case 'stop':
      return { type: 'stop' };
    case 'connected':
      return { type: 'other' };
    default:
      throw malformed(`an unknown event ${JSON.stringify(String(parsed.event)).slice(0, 40)}.`);
  }
}

export const twilioMediaStream: MediaStreamWire = {
  signatureHeader: 'x-twilio-signature',
  verifyUpgrade(url, headers, credentials) {
    const signature = headers['x-twilio-signature'];
    if (!credentials.authToken) return false;
    return verifyTwilioSignature(url, {}, typeof signature === 'string' ? signature : undefined, credentials.authToken);
  },
  read,
  audio: (streamSid, audio) => JSON.stringify({ event: 'media', streamSid, media: { payload: audio.toString('base64') } }),
  mark: (streamSid, name) => JSON.stringify({ event: 'mark', streamSid, mark: { name } }),
  clear: (streamSid) => JSON.stringify({ event: 'clear', streamSid }),
};
