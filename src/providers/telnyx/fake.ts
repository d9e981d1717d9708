/**
 * A local stand-in for Telnyx's v2 API (the subset callforge uses: Call Control dial, answer, reject
 * and hangup, calls ringing a number, Messaging send) speaking Telnyx's wire format: JSON with Bearer auth, answers in `{data}`,
 * failures as `{errors: [{code, title, detail, source}]}`, and JSON webhooks signed with its own
 * Ed25519 key pair.
 *
 * The signing here is deliberately written independently of ./webhooks.ts (a DER key, not a JWK)
 * so the tests check one implementation against the other.
 */
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, sendJson } from '../fake-server.ts';

export interface FakeTelnyxOptions {
  apiKey: string;
  /** `to` numbers refused with Telnyx error 10002 (invalid phone number), for calls and messages. */
  invalidNumbers?: string[];
  /** The time its webhooks are signed at (the service's clock in tests that move time); real time by default. */
  now?: () => Date;
}

export interface FakeTelnyxRequest {
  method: string;
  path: string;
  /** The JSON body, or undefined when it was not JSON. */
  body: Record<string, unknown> | undefined;
  authorized: boolean;
  headers: IncomingHttpHeaders;
}

/** The media stream a call was dialled or answered with (the request's `stream_*` fields). */
export interface FakeTelnyxStream {
  url: string;
  track: string | null;
  codec: string | null;
  bidirectionalMode: string | null;
  bidirectionalCodec: string | null;
  authToken: string | null;
}

export interface FakeTelnyxCall {
  callControlId: string;
  callLegId: string;
  callSessionId: string;
  connectionId: string;
  direction: 'outgoing' | 'incoming';
  to: string;
  from: string;
  timeoutSecs: number;
  webhookUrl: string;
  clientState: string | null;
  streamUrl: string | null;
  stream: FakeTelnyxStream | null;
  startTime: string;
  /** An incoming call answered with `actions/answer` (outgoing calls are answered by the callee). */
  answered: boolean;
  /** How an incoming call was rejected (`actions/reject` cause), when it was. */
  rejectedWith: string | null;
  ended: boolean;
  /** The `command_id`s seen: Telnyx ignores a command whose id it has seen for the call. */
  commandIds: string[];
  /** The keys pressed on the call (`actions/send_dtmf`'s `digits`), in order. */
  digits: string[];
}

export interface RingOptions {
  /** The Call Control application's webhook URL, where Telnyx posts a call to one of its numbers. */
  webhookUrl: string;
  from: string;
  to: string;
  /** The application (connection) the number belongs to. */
  connectionId: string;
  /** The same call again: Telnyx retrying its webhook. */
  callControlId?: string;
  delivery?: SignedDelivery;
}

export interface FakeTelnyxMessage {
  id: string;
  to: string;
  from: string;
  text: string;
  webhookUrl: string | null;
  status: string;
}

export interface SignedDelivery {
  /** Overrides the timestamp header (seconds), e.g. to sign an old event. */
  timestamp?: number;
  /** Signs with another key pair (a forger's), so verification must fail. */
  privateKey?: KeyObject;
}

export interface FakeTelnyx {
  url: string;
  /** The account's Ed25519 public key as Telnyx shows it: the raw 32 bytes, base64. */
  publicKey: string;
  requests: FakeTelnyxRequest[];
  calls: Map<string, FakeTelnyxCall>;
  messages: Map<string, FakeTelnyxMessage>;
  /** Posts a signed `call.initiated` (direction incoming) for a new call to a number, as Telnyx rings an application; resolves with the call and the receiver's status. */
  ringNumber(options: RingOptions): Promise<{ callControlId: string; status: number }>;
  /** Posts a signed call event (`call.answered`, `call.hangup`, …) to the call's webhook_url; resolves with the receiver's status. */
  sendCallEvent(callControlId: string, eventType: string, extra?: Record<string, unknown>, delivery?: SignedDelivery): Promise<number>;
  /** Posts a signed `message.sent` / `message.finalized` with this recipient status to the message's webhook_url. */
  sendMessageEvent(
    messageId: string,
    eventType: string,
    recipientStatus: string,
    extra?: Record<string, unknown>,
    delivery?: SignedDelivery,
  ): Promise<number>;
  /** Posts a signed `message.received` (an SMS a person sent to one of the account's numbers) to the messaging profile's webhook URL. */
  receiveMessage(webhookUrl: string, message: { from: string; to: string; text: string }, delivery?: SignedDelivery): Promise<number>;
  /** The next request (whatever it is) is answered with this status and body. */
  failNext(status: number, body: object): void;
  close(): Promise<void>;
}

export function telnyxError(code: number, title: string, detail: string, pointer?: string): object {
  return { errors: [{ code: String(code), title, detail, ...(pointer ? { source: { pointer } } : {}) }] };
}

/** The raw public key: the last 32 bytes of its SPKI DER encoding (a fixed 12-byte prefix for Ed25519). */
function rawPublicKeyBase64(publicKey: KeyObject): string {
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32).toString('base64');
}

/** Delivers a JSON webhook as Telnyx does: signature over `${timestamp}|${body}`. */
async function postSigned(url: string, event: object, privateKey: KeyObject, timestamp: number): Promise<number> {
  const body = JSON.stringify(event);
  const signature = sign(null, Buffer.concat([Buffer.from(`${timestamp}|`), Buffer.from(body)]), privateKey).toString('base64');
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'telnyx-webhooks',
      'telnyx-signature-ed25519': signature,
      'telnyx-timestamp': String(timestamp),
    },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

const E164 = /^\+[1-9]\d{6,14}$/;

/** The `stream_*` fields of a dial or answer, or null without a `stream_url`. */
function streamOf(body: Record<string, unknown>): FakeTelnyxStream | null {
  const field = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : null);
  const url = field('stream_url');
  if (url === null) return null;
  return {
    url,
    track: field('stream_track'),
    codec: field('stream_codec'),
    bidirectionalMode: field('stream_bidirectional_mode'),
    bidirectionalCodec: field('stream_bidirectional_codec'),
    authToken: field('stream_auth_token'),
  };
}

export async function startFakeTelnyx(options: FakeTelnyxOptions): Promise<FakeTelnyx> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const invalidNumbers = new Set(options.invalidNumbers ?? []);
  const requests: FakeTelnyxRequest[] = [];
  const calls = new Map<string, FakeTelnyxCall>();
  const messages = new Map<string, FakeTelnyxMessage>();
  const failures: Array<{ status: number; body: object }> = [];
  const expectedAuth = `Bearer ${options.apiKey}`;
  const nowSeconds = () => Math.floor((options.now?.() ?? new Date()).getTime() / 1000);

  function callResource(call: FakeTelnyxCall): object {
    return {
      call_control_id: call.callControlId,
      call_leg_id: call.callLegId,
      call_session_id: call.callSessionId,
      client_state: call.clientState,
      is_alive: !call.ended,
      record_type: 'call',
      start_time: call.startTime,
    };
  }

  function messageResource(message: FakeTelnyxMessage): object {
    return {
      record_type: 'message',
      direction: 'outbound',
      id: message.id,
      type: 'SMS',
      from: { phone_number: message.from, carrier: 'Telnyx', line_type: 'Wireless' },
      to: [{ phone_number: message.to, status: message.status, carrier: 'T-Mobile USA', line_type: 'Wireless' }],
      text: message.text,
      encoding: 'GSM-7',
      parts: 1,
      webhook_url: message.webhookUrl,
      errors: [],
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let body: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = raw === '' ? undefined : JSON.parse(raw);
      body = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      body = undefined;
    }
    const authorized = req.headers.authorization === expectedAuth;
    // Recorded decoded: `v3:…` ids arrive percent-encoded (`v3%3A…`) or not, as the client chooses.
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://fake').pathname);
    requests.push({ method: req.method ?? 'GET', path, body, authorized, headers: req.headers });

    const failure = failures.shift();
    if (failure) return sendJson(res, failure.status, failure.body);
    if (!authorized) {
      return sendJson(
        res,
        401,
        telnyxError(
          10009,
          'Authentication failed',
          'The required authentication headers were either invalid or not included in the request.',
        ),
      );
    }
    const notFound = () =>
      sendJson(res, 404, telnyxError(10005, 'Resource not found', `The requested resource ${path} could not be found.`));
    if (req.method !== 'POST') return notFound();
    if (!body) return sendJson(res, 400, telnyxError(10015, 'Bad Request', 'The request failed because it was not well-formed.'));
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : undefined);
    const missing = (name: string) =>
      sendJson(res, 422, telnyxError(10004, 'Missing required parameter', `The '${name}' parameter is required.`, `/${name}`));

    if (path === '/v2/calls') {
      for (const name of ['connection_id', 'to', 'from']) if (!text(name)) return missing(name);
      const to = text('to')!;
      if (!E164.test(to))
        return sendJson(
          res,
          422,
          telnyxError(
            10016,
            'Phone number must be in +E.164 format',
            'The specified phone number parameter must be in +E.164 format.',
            '/to',
          ),
        );
      if (invalidNumbers.has(to))
        return sendJson(res, 422, telnyxError(10002, 'Invalid phone number', 'The phone number is invalid.', '/to'));
      const timeout = body.timeout_secs;
      if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 5 || timeout > 600)) {
        return sendJson(res, 422, telnyxError(10015, 'Invalid value', 'timeout_secs must be an integer from 5 to 600.', '/timeout_secs'));
      }
      const clientState = text('client_state') ?? null;
      if (clientState !== null && Buffer.from(clientState, 'base64').toString('base64') !== clientState) {
        return sendJson(
          res,
          422,
          telnyxError(90053, 'Invalid client_state', 'client_state must be a valid Base-64 encoded string.', '/client_state'),
        );
      }
      const call: FakeTelnyxCall = {
        ...newCall('outgoing', text('connection_id')!, text('from')!, to),
        timeoutSecs: typeof timeout === 'number' ? timeout : 30,
        webhookUrl: text('webhook_url') ?? '',
        clientState,
        streamUrl: text('stream_url') ?? null,
        stream: streamOf(body),
      };
      calls.set(call.callControlId, call);
      return sendJson(res, 200, { data: callResource(call) });
    }

    const action = /^\/v2\/calls\/([^/]+)\/actions\/(answer|reject)$/.exec(path);
    if (action) {
      const call = calls.get(action[1]!);
      if (!call) return sendJson(res, 404, telnyxError(10005, 'Resource not found', 'Call not found.'));
      const commandId = text('command_id');
      if (commandId && call.commandIds.includes(commandId)) return sendJson(res, 200, { data: { result: 'ok' } });
      if (call.ended)
        return sendJson(
          res,
          422,
          telnyxError(90018, 'Call has already ended', "This call is no longer active and can't receive commands."),
        );
      if (call.direction !== 'incoming' || call.answered)
        return sendJson(res, 422, telnyxError(10015, 'Bad Request', 'The call is not an incoming call waiting to be answered.'));
      if (commandId) call.commandIds.push(commandId);
      if (action[2] === 'reject') {
        call.rejectedWith = text('cause') ?? 'CALL_REJECTED';
        call.ended = true;
        return sendJson(res, 200, { data: { result: 'ok' } });
      }
      call.answered = true;
      call.webhookUrl = text('webhook_url') ?? call.webhookUrl;
      call.clientState = text('client_state') ?? call.clientState;
      call.streamUrl = text('stream_url') ?? null;
      call.stream = streamOf(body);
      return sendJson(res, 200, { data: { result: 'ok' } });
    }

    const dtmf = /^\/v2\/calls\/([^/]+)\/actions\/send_dtmf$/.exec(path);
    if (dtmf) {
      const call = calls.get(dtmf[1]!);
      if (!call) return sendJson(res, 404, telnyxError(10005, 'Resource not found', 'Call not found.'));
      const digits = text('digits');
      if (!digits || !/^[0-9*#wWABCD]+$/.test(digits)) return missing('digits');
      call.digits.push(digits);
      return sendJson(res, 200, { data: { result: 'ok' } });
    }

    const hangup = /^\/v2\/calls\/([^/]+)\/actions\/hangup$/.exec(path);
    if (hangup) {
      const call = calls.get(hangup[1]!);
      if (!call) return sendJson(res, 404, telnyxError(10005, 'Resource not found', 'Call not found.'));
      if (call.ended)
        return sendJson(
          res,
          422,
          telnyxError(90018, 'Call has already ended', "This call is no longer active and can't receive commands."),
        );
      call.ended = true;
      return sendJson(res, 200, { data: { result: 'ok' } });
    }

    if (path === '/v2/messages') {
      for (const name of ['from', 'to', 'text']) if (!text(name)) return missing(name);
      const to = text('to')!;
      if (!E164.test(to) || invalidNumbers.has(to)) {
        return sendJson(res, 400, telnyxError(40310, "Invalid 'to' address", "The 'to' address is invalid.", '/to'));
      }
      const message: FakeTelnyxMessage = {
        id: randomUUID(),
        to,
        from: text('from')!,
        text: text('text')!,
        webhookUrl: text('webhook_url') ?? null,
        status: 'queued',
      };
      messages.set(message.id, message);
      return sendJson(res, 200, { data: messageResource(message) });
    }

    return notFound();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, telnyxError(10007, 'Unexpected error', `Fake Telnyx crashed: ${String(error)}`));
      else res.destroy();
    });
  });
  const listening = await listenOnLoopback(server);

  function newCall(direction: FakeTelnyxCall['direction'], connectionId: string, from: string, to: string): FakeTelnyxCall {
    return {
      callControlId: `v3:${randomUUID().replaceAll('-', '')}`,
      callLegId: randomUUID(),
      callSessionId: randomUUID(),
      connectionId,
      direction,
      to,
      from,
      timeoutSecs: 30,
      webhookUrl: '',
      clientState: null,
      streamUrl: null,
      stream: null,
      startTime: new Date().toISOString(),
      answered: false,
      rejectedWith: null,
      ended: false,
      commandIds: [],
      digits: [],
    };
  }

  const envelope = (eventType: string, payload: object) => ({
    data: { record_type: 'event', id: randomUUID(), event_type: eventType, occurred_at: new Date().toISOString(), payload },
    meta: { attempt: 1 },
  });

  return {
    url: listening.url,
    publicKey: rawPublicKeyBase64(publicKey),
    requests,
    calls,
    messages,

    async ringNumber(ring) {
      const known = ring.callControlId ? calls.get(ring.callControlId) : undefined;
      const call = known ?? { ...newCall('incoming', ring.connectionId, ring.from, ring.to), webhookUrl: ring.webhookUrl };
      calls.set(call.callControlId, call);
      const payload = {
        call_control_id: call.callControlId,
        call_leg_id: call.callLegId,
        call_session_id: call.callSessionId,
        connection_id: call.connectionId,
        client_state: null,
        caller_id_name: call.from,
        calling_party_type: 'pstn',
        from: call.from,
        to: call.to,
        direction: 'incoming',
        start_time: call.startTime,
        state: 'parked',
      };
      const status = await postSigned(
        ring.webhookUrl,
        envelope('call.initiated', payload),
        ring.delivery?.privateKey ?? privateKey,
        ring.delivery?.timestamp ?? nowSeconds(),
      );
      return { callControlId: call.callControlId, status };
    },

    async sendCallEvent(callControlId, eventType, extra = {}, delivery = {}) {
      const call = calls.get(callControlId);
      if (!call) throw new Error(`fake Telnyx: no call ${callControlId}`);
      if (eventType === 'call.hangup') call.ended = true;
      const payload = {
        call_control_id: call.callControlId,
        call_leg_id: call.callLegId,
        call_session_id: call.callSessionId,
        connection_id: call.connectionId,
        client_state: call.clientState,
        from: call.from,
        to: call.to,
        direction: call.direction,
        start_time: call.startTime,
        state: eventType === 'call.hangup' ? 'hangup' : eventType.replace(/^call\./, ''),
        ...extra,
      };
      return postSigned(
        call.webhookUrl,
        envelope(eventType, payload),
        delivery.privateKey ?? privateKey,
        delivery.timestamp ?? nowSeconds(),
      );
    },

    async sendMessageEvent(messageId, eventType, recipientStatus, extra = {}, delivery = {}) {
      const message = messages.get(messageId);
      if (!message?.webhookUrl) throw new Error(`fake Telnyx: no message ${messageId} with a webhook_url`);
      message.status = recipientStatus;
      const payload = { ...messageResource(message), ...extra };
      return postSigned(
        message.webhookUrl,
        envelope(eventType, payload),
        delivery.privateKey ?? privateKey,
        delivery.timestamp ?? nowSeconds(),
      );
    },

    async receiveMessage(webhookUrl, message, delivery = {}) {
      const payload = {
        record_type: 'message',
        direction: 'inbound',
        id: randomUUID(),
        type: 'SMS',
        from: { phone_number: message.from, carrier: 'T-MOBILE USA, INC.', line_type: 'Wireless' },
        to: [{ phone_number: message.to, status: 'delivered', carrier: 'TELNYX LLC', line_type: 'VoIP' }],
        text: message.text,
        encoding: 'GSM-7',
        parts: 1,
      };
      return postSigned(
        webhookUrl,
        envelope('message.received', payload),
        delivery.privateKey ?? privateKey,
        delivery.timestamp ?? nowSeconds(),
      );
    },

    failNext(status, body) {
      failures.push({ status, body });
    },

    close: listening.close,
  };
}
