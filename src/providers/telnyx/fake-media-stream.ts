/**
 * Telnyx's side of a media stream, for tests: connects to the call's `stream_url` as Telnyx does
 * (its `stream_auth_token` as the `x-telnyx-streaming-auth-token` header; Telnyx signs nothing),
 * sends `connected` and `start` (the call's call_control_id and client state, PCMU 8 kHz), the
 * caller's audio as 20 ms `media` frames, `dtmf` and `stop`, and records what comes back
 * (../fake-media-client.ts). The frames are written from Telnyx's AsyncAPI description, not from
 * the provider's code, so tests check one against the other.
 */
import { randomUUID } from 'node:crypto';
import { openFakeMediaClient, type FakeMediaClient, type MediaDialect, type StreamMessage } from '../fake-media-client.ts';
import type { FakeTelnyxCall } from './fake.ts';

export interface FakeTelnyxMediaStream extends FakeMediaClient {
  streamId: string;
}

export interface FakeTelnyxMediaStreamOptions {
  /** Where to connect (the test server's address, standing for the call's `stream_url`). */
  connectTo: string;
  /** The call as the fake Telnyx placed or answered it: its id, client state and stream's token. */
  call: FakeTelnyxCall;
  /** Overrides the token header (none: null). */
  token?: string | null;
  /** Overrides the client state in `start` (none: null). */
  clientState?: string | null;
  /** Called with each message as it arrives. */
  onMessage?: (message: StreamMessage) => void;
}

function telnyxDialect(call: FakeTelnyxCall, streamId: string, token: string | null, clientState: string | null): MediaDialect {
  let sequence = 0;
  const userId = randomUUID();
  const framed = (event: string, body: object) => ({ event, sequence_number: String(++sequence), stream_id: streamId, ...body });
  return {
    opening: () => [
      { event: 'connected', version: '1.0.0', ...(token === null ? {} : { connected: { 'x-telnyx-streaming-auth-token': token } }) },
      framed('start', {
        start: {
          user_id: userId,
          call_control_id: call.callControlId,
          call_session_id: call.callSessionId,
          from: call.from,
          to: call.to,
          tags: [],
          client_state: clientState,
          custom_parameters: {},
          media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
        },
      }),
    ],
    media: (payload, chunk) =>
      framed('media', { media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload } }),
    dtmf: (digit) => framed('dtmf', { occurred_at: new Date().toISOString(), dtmf: { digit } }),
    mark: (name) => framed('mark', { mark: { name } }),
    stop: () => framed('stop', { stop: { user_id: userId, call_control_id: call.callControlId } }),
  };
}

/** Opens the stream; rejects when the upgrade is refused (with the HTTP status in the message). */
export async function openFakeTelnyxMediaStream(options: FakeTelnyxMediaStreamOptions): Promise<FakeTelnyxMediaStream> {
  const token = options.token === undefined ? (options.call.stream?.authToken ?? null) : options.token;
  const clientState = options.clientState === undefined ? options.call.clientState : options.clientState;
  const streamId = randomUUID().toUpperCase();
  const client = await openFakeMediaClient({
    connectTo: options.connectTo,
    headers: token === null ? {} : { 'x-telnyx-streaming-auth-token': token },
    dialect: telnyxDialect(options.call, streamId, token, clientState),
    ...(options.onMessage ? { onMessage: options.onMessage } : {}),
  });
  return { ...client, streamId };
}
