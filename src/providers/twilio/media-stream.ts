/**
 * Twilio Media Streams, bidirectional (`<Connect><Stream>`): Twilio opens a WebSocket to us and sends
 * JSON text messages (`connected`, `start`, `media`, `dtmf`, `mark`, `stop`); audio is 8 kHz μ-law,
 * base64 in `media.payload`. We answer with `media` (agent audio), `mark` (Twilio echoes it once the
 * audio before it was played) and `clear` (drop queued audio: barge-in). The upgrade is signed with
 * `X-Twilio-Signature` over the stream URL, with no parameters.
 * https://www.twilio.com/docs/voice/media-streams/websocket-messages
 */
import { ProviderError } from '../errors.ts';
import { isObject, isText, PHONE_LINE, readMessage, textParameters, type Json } from '../media-messages.ts';
import type { MediaStreamEvent, MediaStreamWire } from '../types.ts';
import { verifyTwilioSignature } from './telephony.ts';

const malformed = (why: string) => new ProviderError(`Twilio media stream: ${why}`, { retryable: false });

function readStart(parsed: Json): MediaStreamEvent {
  const start = parsed.start;
  if (!isObject(start) || !isText(start.callSid) || !isText(parsed.streamSid ?? start.streamSid))
    throw malformed('a start message without its callSid or streamSid.');
  const parameters = textParameters(start.customParameters);
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

export const twilioMediaStream: MediaStreamWire = {
  signatureHeader: 'x-twilio-signature',
  verifyUpgrade(url, headers, credentials) {
    const signature = headers['x-twilio-signature'];
    if (!credentials.authToken) return false;
    return verifyTwilioSignature(url, {}, typeof signature === 'string' ? signature : undefined, credentials.authToken);
  },
  read: (message) => readMessage(message, malformed, (parsed) => (parsed.event === 'start' ? readStart(parsed) : undefined)),
  audio: (streamSid, audio) => JSON.stringify({ event: 'media', streamSid, media: { payload: audio.toString('base64') } }),
  mark: (streamSid, name) => JSON.stringify({ event: 'mark', streamSid, mark: { name } }),
  clear: (streamSid) => JSON.stringify({ event: 'clear', streamSid }),
};
