/**
 * Telnyx Media Streaming over WebSocket, bidirectional in RTP mode
 * (https://developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket): for a
 * call dialled or answered with `stream_url`, Telnyx opens a WebSocket to us and sends JSON text
 * frames (`connected`, `start`, `media`, `dtmf`, `mark`, `error`, `stop`), the audio base64 in
 * `media.payload` (RTP payload without headers; PCMU 8 kHz, as we ask with `stream_codec`). With
 * `stream_bidirectional_mode: rtp` we send `media` (agent audio, 20 ms to 30 s a frame), `mark`
 * (Telnyx sends it back once the audio before it finished playing, or at once when nothing is
 * queued) and `clear` (drops queued audio, and Telnyx sends back the marks it dropped): the same
 * heard-audio tracking as Twilio's.
 *
 * Telnyx signs nothing about the stream. The call's `stream_auth_token` (ours: the HMAC token the
 * media module signs for the tenant and call) comes back as the upgrade's
 * `x-telnyx-streaming-auth-token` header; our call id comes back in `start.client_state` (the call's
 * client state, base64, as we set it when dialling or answering). The media module binds the stream
 * only when that token is the one signed for the call that `start.call_control_id` names.
 */
import { ProviderError } from '../errors.ts';
import { isObject, isText, PHONE_LINE, readMessage, type Json } from '../media-messages.ts';
import type { MediaStreamEvent, MediaStreamWire } from '../types.ts';

/** The upgrade header Telnyx carries a call's `stream_auth_token` in. */
export const STREAM_AUTH_HEADER = 'x-telnyx-streaming-auth-token';

/** Telnyx plays an RTP media frame of 20 ms to 30 s: 160 to 240,000 bytes of 8 kHz PCMU. */
const FRAME_BYTES = { min: 160, max: 240_000 } as const;

const malformed = (why: string) => new ProviderError(`Telnyx media stream: ${why}`, { retryable: false });

/** Our call id from the call's client state (base64 of the id), or undefined when it is not one. */
function callIdOf(clientState: unknown): string | undefined {
  if (!isText(clientState)) return undefined;
  const decoded = Buffer.from(clientState, 'base64');
  // Only a canonical encoding is ours: anything else decodes to bytes we never sent.
  return decoded.toString('base64') === clientState ? decoded.toString('utf8') : undefined;
}

function readStart(parsed: Json): MediaStreamEvent {
  const start = parsed.start;
  if (!isObject(start) || !isText(start.call_control_id) || !isText(parsed.stream_id))
    throw malformed('a start frame without its call_control_id or stream_id.');
  const format = isObject(start.media_format) ? start.media_format : {};
  if (format.encoding !== 'PCMU' || (format.sample_rate !== undefined && format.sample_rate !== 8000))
    throw malformed(`audio in ${String(format.encoding)} at ${String(format.sample_rate)} Hz, not 8 kHz PCMU.`);
  const callId = callIdOf(start.client_state);
  return {
    type: 'start',
    streamId: parsed.stream_id,
    providerCallId: start.call_control_id,
    // The token is not here: it came on the upgrade (upgradeParameters).
    parameters: callId === undefined ? {} : { callId },
    format: PHONE_LINE,
  };
}

/** Telnyx's `error` frame (its payload's code, title and detail): the stream goes on. */
function readError(parsed: Json): MediaStreamEvent {
  const payload = isObject(parsed.payload) ? parsed.payload : {};
  const words = [payload.title, payload.detail].filter(isText).join(': ') || 'no detail';
  const code = payload.code === undefined ? '' : ` ${String(payload.code)}`;
  return { type: 'error', message: `Telnyx media stream error${code}: ${words}` };
}

const readOwn = (parsed: Json) => (parsed.event === 'start' ? readStart(parsed) : parsed.event === 'error' ? readError(parsed) : undefined);

export const telnyxMediaStream: MediaStreamWire = {
  // Not a signature: our token, refused before the socket opens when absent.
  signatureHeader: STREAM_AUTH_HEADER,
  // Telnyx signs nothing over the upgrade, so there is nothing of the tenant's to check it with: the
  // stream is bound by our token (upgradeParameters) and the call its start names.
  verifyUpgrade: () => true,
  upgradeParameters(headers): Record<string, string> {
    const token = headers[STREAM_AUTH_HEADER];
    return typeof token === 'string' ? { token } : {};
  },
  read: (message) => readMessage(message, malformed, readOwn),
  frameBytes: FRAME_BYTES,
  audio: (streamId, audio) => JSON.stringify({ event: 'media', stream_id: streamId, media: { payload: audio.toString('base64') } }),
  mark: (streamId, name) => JSON.stringify({ event: 'mark', stream_id: streamId, mark: { name } }),
  clear: (streamId) => JSON.stringify({ event: 'clear', stream_id: streamId }),
};
