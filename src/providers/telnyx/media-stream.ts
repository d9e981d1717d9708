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
import type { MediaStreamEvent, MediaStreamWire } from '../types.ts';

/** The upgrade header Telnyx carries a call's `stream_auth_token` in. */
export const STREAM_AUTH_HEADER = 'x-telnyx-streaming-auth-token';

const PHONE_LINE = { encoding: 'mulaw', sampleRate: 8000 } as const;

/** Telnyx plays an RTP media frame of 20 ms to 30 s: 160 to 240,000 bytes of 8 kHz PCMU. */
const FRAME_BYTES = { min: 160, max: 240_000 } as const;

const malformed = (why: string) => new ProviderError(`Telnyx media stream: ${why}`, { retryable: false });

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** Our call id from the call's client state (base64 of the id), or undefined when it is not one. */
function callIdOf(clientState: unknown): string | undefined {
  if (!text(clientState)) return undefined;
  const decoded = Buffer.from(clientState, 'base64');
  // Only a canonical encoding is ours: anything else decodes to bytes we never sent.
  return decoded.toString('base64') === clientState ? decoded.toString('utf8') : undefined;
}

function readStart(parsed: Json): MediaStreamEvent {
  const start = parsed.start;
  if (!isObject(start) || !text(start.call_control_id) || !text(parsed.stream_id))
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

function read(message: string): MediaStreamEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    throw malformed('a frame that is not JSON.');
  }
  if (!isObject(parsed)) throw malformed('a frame that is not a JSON object.');
  switch (parsed.event) {
    case 'media': {
      const media = parsed.media;
      if (!isObject(media) || typeof media.payload !== 'string') throw malformed('a media frame without a payload.');
      // Only the caller's side: a stream of both tracks would echo the agent back to itself.
      if (media.track !== undefined && media.track !== 'inbound') return { type: 'other' };
      return { type: 'audio', audio: Buffer.from(media.payload, 'base64') };
    }
    case 'start':
      return readStart(parsed);
    case 'mark': {
      const mark = parsed.mark;
      if (!isObject(mark) || !text(mark.name)) throw malformed('a mark frame without its name.');
      return { type: 'mark', name: mark.name };
    }
    case 'dtmf': {
      const dtmf = parsed.dtmf;
      if (!isObject(dtmf) || typeof dtmf.digit !== 'string' || !/^[0-9*#A-D]$/.test(dtmf.digit))
        throw malformed('a dtmf frame without a key.');
      return { type: 'dtmf', digit: dtmf.digit };
    }
    case 'error': {
      const payload = isObject(parsed.payload) ? parsed.payload : {};
      const words = [payload.title, payload.detail].filter(text).join(': ') || 'no detail';
      return {
        type: 'error',
        message: `Telnyx media stream error${payload.code === undefined ? '' : ` ${String(payload.code)}`}: ${words}`,
      };
    }
    case 'stop':
      return { type: 'stop' };
    case 'connected':
      return { type: 'other' };
    default:
      throw malformed(`an unknown event ${JSON.stringify(String(parsed.event)).slice(0, 40)}.`);
  }
}

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
  read,
  frameBytes: FRAME_BYTES,
  audio: (streamId, audio) => JSON.stringify({ event: 'media', stream_id: streamId, media: { payload: audio.toString('base64') } }),
  mark: (streamId, name) => JSON.stringify({ event: 'mark', stream_id: streamId, mark: { name } }),
  clear: (streamId) => JSON.stringify({ event: 'clear', stream_id: streamId }),
};
