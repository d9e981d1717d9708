/**
 * Calls through Telnyx Call Control v2 (https://developers.telnyx.com/api-reference/call-commands):
 * `POST /v2/calls` places a call on the tenant's Call Control application (`connection_id`),
 * streams its audio to us (media-stream.ts) and reports its events to our webhook URL; `POST
 * /v2/calls/{call_control_id}/actions/hangup` hangs it up. A call to one of the tenant's numbers
 * rings the application's webhook URL (`call.initiated`, direction `incoming`): `actions/answer`
 * answers it with the same stream, `actions/reject` turns it away. Events arrive as signed JSON
 * webhooks (https://developers.telnyx.com/api-reference/callbacks/call-hangup).
 */
import { isRetryableStatus, ProviderError } from '../errors.ts';
import type {
  CallInstructions,
  CallOutcome,
  CallUpdate,
  Connection,
  DialRequest,
  DialResult,
  IncomingCalls,
  RingingCall,
  TelephonyChannel,
  TelephonyConnection,
} from '../types.ts';
import { dataOf, telnyxCodeSuffix, telnyxErrorOf, telnyxPost } from './api.ts';
import { eventOf, requireEvent, SIGNATURE_HEADER, verifyTelnyxWebhook } from './webhooks.ts';

/**
 * Telnyx error codes (https://developers.telnyx.com/development/api-fundamentals/api-errors) that,
 * about the `to` number, mean it will never be callable, so the attempt is not retried:
 *
 * - 10002 Invalid phone number.
 * - 10016 Phone number must be in +E.164 format.
 *
 * The same codes about another field (our `from` number) are our configuration's fault, not the
 * contact's, and stay ordinary failures.
 */
export const TELNYX_PERMANENT_DIAL_ERROR_CODES: ReadonlySet<number> = new Set([10002, 10016]);

/** Telnyx 90018 "Call has already ended": a command on a call that is over. */
const CALL_ALREADY_ENDED = 90018;

/**
 * How a call's audio is streamed to us, the same for a dialled and an answered call: the other
 * party's track (what the agent listens to) in PCMU 8 kHz, bidirectional in RTP mode (we play the
 * agent's PCMU back, with marks and clears), our call id in the client state Telnyx echoes in the
 * stream's `start`, and the stream's signed token as its `stream_auth_token` (the upgrade's
 * `x-telnyx-streaming-auth-token`).
 */
function streamFields(mediaStreamUrl: string, callId: string, token: string) {
  return {
    client_state: Buffer.from(callId, 'utf8').toString('base64'),
    stream_url: mediaStreamUrl,
    stream_track: 'inbound_track',
    stream_codec: 'PCMU',
    stream_bidirectional_mode: 'rtp',
    stream_bidirectional_codec: 'PCMU',
    stream_auth_token: token,
  };
}

/**
 * `POST /v2/calls/{call_control_id}/actions/{action}`; a call already over (Telnyx 90018) is left
 * as it is, any other failure thrown.
 */
async function callAction(connection: Connection, providerCallId: string, action: string, body: object): Promise<void> {
  const label = `Telnyx ${action}`;
  const response = await telnyxPost(connection, `/v2/calls/${encodeURIComponent(providerCallId)}/actions/${action}`, body, label);
  const { status } = response;
  if (status >= 200 && status < 300) return;
  const error = telnyxErrorOf(response);
  if (error.code === CALL_ALREADY_ENDED) return;
  throw new ProviderError(`${label} of ${providerCallId} failed: HTTP ${status}${telnyxCodeSuffix(error.code)}: ${error.message}`, {
    status,
    code: error.code,
    retryable: isRetryableStatus(status),
  });
}

export function connectTelnyxTelephony(connection: Connection): TelephonyConnection {
  const connectionId = connection.credentials.connectionId!;
  return {
    async dial(request: DialRequest): Promise<DialResult> {
      const response = await telnyxPost(
        connection,
        '/v2/calls',
        {
          connection_id: connectionId,
          to: request.to,
          from: request.from,
          timeout_secs: request.dialTimeoutSec,
          webhook_url: request.statusCallbackUrl,
          webhook_url_method: 'POST',
          ...streamFields(request.mediaStreamUrl, request.callId, request.mediaStreamToken),
        },
        'Telnyx dial',
      );
      const { status } = response;
      if (status >= 200 && status < 300) {
        const callControlId = dataOf(response)?.call_control_id;
        if (typeof callControlId !== 'string' || callControlId === '') {
          // Not retryable: Telnyx may have placed the call, and a retry could ring the person twice.
          throw new ProviderError(`Telnyx dial answered HTTP ${status} without a call_control_id`, { status, retryable: false });
        }
        return { providerCallId: callControlId };
      }
      const error = telnyxErrorOf(response);
      const aboutTo = error.pointer === undefined || error.pointer === '/to';
      const permanent =
        status >= 400 &&
        status < 500 &&
        !isRetryableStatus(status) &&
        aboutTo &&
        error.code !== undefined &&
        TELNYX_PERMANENT_DIAL_ERROR_CODES.has(error.code);
      throw new ProviderError(
        permanent
          ? `Telnyx: ${error.message}${telnyxCodeSuffix(error.code)}`
          : `Telnyx dial failed: HTTP ${status}${telnyxCodeSuffix(error.code)}: ${error.message}`,
        { status, code: error.code, permanent, retryable: !permanent && isRetryableStatus(status) },
      );
    },

    hangup: (providerCallId) => callAction(connection, providerCallId, 'hangup', {}),
    // Telnyx's keys are RFC 2833 events on the call's media (250 ms each); its pause is `w`, as ours.
    sendDigits: (providerCallId, digits) => callAction(connection, providerCallId, 'send_dtmf', { digits, duration_millis: 250 }),
  };
}

/** Telnyx reads nothing in the reply to its webhook: what a call does next is asked for by request. */
const NOTHING_TO_SAY: CallInstructions = { contentType: 'text/plain; charset=utf-8', body: '' };

const present = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * Calls to the tenant's numbers, on the Call Control application's webhook URL (every event of a
 * call not yet answered by us goes there). `call.initiated` with direction `incoming` rings; our
 * answer names the status URL for the call's later events, and its `command_id` (our call id) makes
 * a retried webhook's second answer one Telnyx ignores.
 */
export const telnyxIncomingCalls: IncomingCalls = {
  read: (webhook) => {
    const payload = eventOf(webhook)?.payload ?? {};
    return {
      providerCallId: present(payload.call_control_id),
      from: present(payload.from),
      to: present(payload.to),
      accountId: present(payload.connection_id),
    };
  },
  isStatusEvent: (webhook) => {
    const event = eventOf(webhook);
    return !(event?.eventType === 'call.initiated' && event.payload.direction === 'incoming');
  },
  // The application the call came in on: the one the tenant connected.
  accountIdOf: (credentials) => credentials.connectionId,
  async stream(mediaStreamUrl, callId, token, call: RingingCall) {
    await callAction(call.connection, call.providerCallId, 'answer', {
      command_id: callId,
      webhook_url: call.statusCallbackUrl,
      webhook_url_method: 'POST',
      ...streamFields(mediaStreamUrl, callId, token),
    });
    return NOTHING_TO_SAY;
  },
  // Call Control cannot say a sentence and hang up in one request: the call is rejected busy, never answered.
  async turnAway(_text, _language, call: RingingCall) {
    await callAction(call.connection, call.providerCallId, 'reject', { command_id: call.callId, cause: 'USER_BUSY' });
    return NOTHING_TO_SAY;
  },
};

/** Telnyx voice: Call Control over REST, call events as JSON webhooks signed with the account's Ed25519 key. */
export const telnyxTelephony: TelephonyChannel = {
  connect: connectTelnyxTelephony,
  callbacks: {
    signatureHeader: SIGNATURE_HEADER,
    callIdOf: (webhook) => {
      const id = eventOf(webhook)?.payload.call_control_id;
      return typeof id === 'string' && id !== '' ? id : undefined;
    },
    verify: verifyTelnyxWebhook,
    read: (webhook, answeredBefore) => {
      const event = requireEvent(webhook);
      return telnyxCallUpdate(event.eventType, event.payload, answeredBefore);
    },
    incoming: telnyxIncomingCalls,
  },
};

// ---------------------------------------------------------------------------------------------
// Call events

/** Hang-up causes of a call nobody answered that are not failures of the line. */
const UNANSWERED_CAUSES: ReadonlySet<string> = new Set(['timeout', 'no_answer', 'originator_cancel', 'normal_clearing']);

/**
 * A call event as our call state. `call.initiated` is QUEUED, not RINGING: it says Telnyx has
 * started the call, not that a phone rings (Call Control sends no ringing event for outgoing calls),
 * and the call is already RINGING here since Telnyx accepted the dial. A call that was answered
 * ended ANSWERED whatever the cause of its hang-up; one that was not ended by its cause. The payload
 * dates the call's start (`start_time`, the same on every event) and the event, not the answer, so
 * the talk time is not in it: `durationSec` is null and the answer we saw dates the talk.
 */
export function telnyxCallUpdate(eventType: string, payload: Record<string, unknown>, answeredBefore: boolean): CallUpdate | null {
  switch (eventType) {
    case 'call.initiated':
      return { status: 'QUEUED' };
    case 'call.answered':
      return { status: 'IN_PROGRESS' };
    case 'call.hangup':
      return hangupUpdate(payload, answeredBefore);
    default:
      return null;
  }
}

function hangupUpdate(payload: Record<string, unknown>, answeredBefore: boolean): CallUpdate {
  const cause = typeof payload.hangup_cause === 'string' && payload.hangup_cause !== '' ? payload.hangup_cause : 'unspecified';
  const ended = (outcome: CallOutcome, failureReason?: string): CallUpdate => ({
    status: 'ENDED',
    outcome,
    durationSec: null,
    ...(failureReason === undefined ? {} : { failureReason }),
  });
  if (answeredBefore) return ended('ANSWERED');
  if (cause === 'user_busy') return ended('BUSY');
  if (UNANSWERED_CAUSES.has(cause)) return ended('UNANSWERED');
  const sip = typeof payload.sip_hangup_cause === 'string' && payload.sip_hangup_cause !== '' ? ` (SIP ${payload.sip_hangup_cause})` : '';
  return ended('FAILED', `Telnyx ended the call: ${cause}${sip}.`);
}
