/**
 * What Twilio's and Telnyx's media streams write alike: JSON text messages named by `event`, the
 * caller's audio base64 in `media.payload` (its track in `media.track`), a mark's name in
 * `mark.name`, a key in `dtmf.digit`, `connected` and `stop`. Each provider's wire reads its own
 * `start` (and its other events) itself, the rest with `readMessage`.
 */
import type { ProviderError } from './errors.ts';
import type { MediaStreamEvent } from './types.ts';

/** The audio both carry: 8 kHz μ-law (G.711 PCMU). */
export const PHONE_LINE = { encoding: 'mulaw', sampleRate: 8000 } as const;

export type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
export const isText = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The text values of a message's custom parameters (our call id and token among them); anything else is dropped. */
export const textParameters = (custom: unknown): Record<string, string> =>
  Object.fromEntries(
    Object.entries(isObject(custom) ? custom : {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );

/** Says, in the provider's name, why a message is not one of its. */
export type Malformed = (why: string) => ProviderError;

/** One message as the JSON object it must be. */
export function parseMessage(message: string, malformed: Malformed): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    throw malformed('a message that is not JSON.');
  }
  if (!isObject(parsed)) throw malformed('a message that is not a JSON object.');
  return parsed;
}

/** `media`, `mark`, `dtmf` and `stop`, read the same for both providers; undefined for another event. */
function readCommonEvent(parsed: Json, malformed: Malformed): MediaStreamEvent | undefined {
  switch (parsed.event) {
    case 'media': {
      const media = parsed.media;
      if (!isObject(media) || typeof media.payload !== 'string') throw malformed('a media message without a payload.');
      // Only the caller's side: a stream of both tracks would echo the agent back to itself.
      if (media.track !== undefined && media.track !== 'inbound') return { type: 'other' };
      return { type: 'audio', audio: Buffer.from(media.payload, 'base64') };
    }
    case 'mark': {
      const mark = parsed.mark;
      if (!isObject(mark) || !isText(mark.name)) throw malformed('a mark message without its name.');
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
    default:
      return undefined;
  }
}

/**
 * One message, normalised: the events both write alike here, the provider's own (`start`, …) by
 * `readOwn` (undefined for an event it does not know); `connected` needs nothing; any other event is
 * not the provider's.
 */
export function readMessage(
  message: string,
  malformed: Malformed,
  readOwn: (parsed: Json) => MediaStreamEvent | undefined,
): MediaStreamEvent {
  const parsed = parseMessage(message, malformed);
  const event = readCommonEvent(parsed, malformed) ?? readOwn(parsed);
  if (event) return event;
  if (parsed.event === 'connected') return { type: 'other' };
  throw malformed(`an unknown event ${JSON.stringify(String(parsed.event)).slice(0, 40)}.`);
}
