/**
 * A local stand-in for Twilio's REST API (the subset callforge uses: Calls and Messages) speaking Twilio's wire format:
 * form-encoded requests with HTTP Basic auth, JSON resources and Twilio's error JSON
 * (`{code, message, more_info, status}`), and signed form-encoded status callbacks.
 *
 * The signature code here is deliberately written independently of src/providers/telephony/twilio.ts
 * so the tests check one implementation against the other.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { SegmentedMessage } from 'sms-segments-calculator';
import { listenOnLoopback, readBody, sendJson } from '../fake-server.ts';
import { unescapeXml } from './fake-media-stream.ts';

export interface FakeTwilioOptions {
  accountSid: string;
  authToken: string;
  /** `To` numbers answered with Twilio error 21211 (invalid phone number), for calls and messages. */
  invalidNumbers?: string[];
}

export interface FakeTwilioRequest {
  method: string;
  /** Path and query string as requested. */
  path: string;
  form: URLSearchParams;
  authorized: boolean;
  /** The query string's parameters. */
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
}

export interface FakeTwilioCall {
  sid: string;
  to: string;
  from: string;
  timeout: number;
  statusCallback: string;
  status: string;
  /** The dial's answering-machine detection parameters, when it asked for detection. */
  machineDetection: {
    mode: string;
    asyncAmd: string | null;
    statusCallback: string | null;
    statusCallbackMethod: string | null;
  } | null;
  /** Each `Twiml` the live call was updated with (`POST …/Calls/{sid}.json`), in order. */
  twimlUpdates: string[];
}

export interface RingOptions {
  /** The number's "A call comes in" webhook URL. */
  voiceUrl: string;
  from: string;
  to: string;
  /** The number's "Call status changes" URL, if it has one. */
  statusCallback?: string;
  /** The call's sid; the same sid again is Twilio retrying the webhook. */
  sid?: string;
  /** Signs with another token (another account's), or sends no signature (null). */
  authToken?: string | null;
  /** Names another account. */
  accountSid?: string;
}

export interface FakeTwilioMessage {
  sid: string;
  to: string;
  from: string;
  body: string;
  statusCallback: string | null;
  status: string;
  numSegments: number;
}

export interface FakeTwilio {
  /** Origin to use as the provider's `baseUrl`, e.g. `http://127.0.0.1:54321`. */
  url: string;
  requests: FakeTwilioRequest[];
  calls: Map<string, FakeTwilioCall>;
  /** Messages accepted by `POST …/Messages.json`, by sid. */
  messages: Map<string, FakeTwilioMessage>;
  /**
   * Rings one of the account's numbers as Twilio does: posts the signed "A call comes in" webhook
   * (`CallSid`, `AccountSid`, `From`, `To`, `CallStatus=ringing`, `Direction=inbound`) to the
   * number's `voiceUrl` and resolves with the answer (status, content type, body: the TwiML). The
   * call is kept with the number's status callback, when it has one, for `sendStatus`.
   */
  ringNumber(options: RingOptions): Promise<{ sid: string; status: number; contentType: string; body: string }>;
  /** Posts a signed status callback for `sid` to its StatusCallback URL; resolves with the receiver's HTTP status. */
  sendStatus(sid: string, callStatus: string, extra?: Record<string, string>): Promise<number>;
  /**
   * Posts a signed asynchronous AMD verdict (`AnsweredBy`: human, machine_end_beep, fax…) for `sid`
   * to its AsyncAmdStatusCallback; `authToken` signs with another token (another tenant's). Resolves
   * with the receiver's HTTP status.
   */
  sendAnsweredBy(sid: string, answeredBy: string, options?: { detectionMs?: number; authToken?: string }): Promise<number>;
  /**
   * The transfer's target answered: Twilio fetches the `<Number url>` of the `<Dial>` call `sid` was
   * last updated with (a warm transfer's whisper), signed as it signs every request, with the new
   * leg's parameters; `authToken` signs with another token. Resolves with the receiver's answer.
   */
  answerTransfer(sid: string, options?: { authToken?: string }): Promise<{ status: number; body: string }>;
  /** Posts a signed status callback for message `sid` to its StatusCallback URL; resolves with the receiver's HTTP status. */
  sendMessageStatus(sid: string, messageStatus: string, extra?: Record<string, string>, authToken?: string): Promise<number>;
  /**
   * A person texts one of the account's numbers: posts the message, signed, to `url` (the number's
   * "A message comes in" webhook) as Twilio does; resolves with the receiver's answer.
   */
  receiveMessage(
    url: string,
    message: { from: string; to: string; body: string },
    authToken?: string,
  ): Promise<{ status: number; contentType: string | null; body: string }>;
  /** The next request (whatever it is) is answered with this status and JSON body. */
  failNext(status: number, body: object): void;
  /**
   * From now on a message is accepted (kept in `messages`) but its answer waits until the returned
   * release is called: the sender cannot know whether Twilio took it (a sender killed meanwhile).
   */
  holdMessageAnswers(): () => void;
  close(): Promise<void>;
}

const API_VERSION = '2010-04-01';

type FakeCallRecord = FakeTwilioCall & { direction: 'outbound-api' | 'inbound'; dateCreated: Date; dateUpdated: Date };

function twilioError(status: number, code: number, message: string): object {
  return { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status };
}

/** Twilio's RFC 2822 timestamps, e.g. `Tue, 31 Aug 2010 20:36:28 +0000`. */
function rfc2822(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}

/** A request Twilio makes to us (a callback, a TwiML fetch): form-encoded, signed with `signingToken` unless null. */
function postAsTwilio(url: string, form: URLSearchParams, signingToken: string | null, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': 'TwilioProxy/1.1',
      ...(signingToken === null ? {} : { 'x-twilio-signature': signLikeTwilio(signingToken, url, form) }),
      ...headers,
    },
    body: form.toString(),
  });
}

/** Independent implementation of Twilio's request-signing scheme. */
function signLikeTwilio(authToken: string, url: string, form: URLSearchParams): string {
  const pairs = [...form.entries()];
  // Stable sort by parameter name only: repeated names keep their order.
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const payload = url + pairs.map(([name, value]) => `${name}${value}`).join('');
  const hmac = createHmac('sha1', Buffer.from(authToken, 'utf8'));
  hmac.update(Buffer.from(payload, 'utf8'));
  return hmac.digest().toString('base64');
}

export async function startFakeTwilio(options: FakeTwilioOptions): Promise<FakeTwilio> {
  const { accountSid, authToken } = options;
  const invalidNumbers = new Set(options.invalidNumbers ?? []);
  const requests: FakeTwilioRequest[] = [];
  const calls = new Map<string, FakeCallRecord>();
  const messages = new Map<string, FakeTwilioMessage & { dateCreated: Date }>();
  let answersHeld: Promise<void> | undefined;
  const failures: Array<{ status: number; body: object }> = [];
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  const accountPrefix = `/${API_VERSION}/Accounts/${accountSid}`;

  function callResource(call: FakeCallRecord): object {
    const uri = `${accountPrefix}/Calls/${call.sid}.json`;
    const ended = ['completed', 'busy', 'no-answer', 'canceled', 'failed'].includes(call.status);
    return {
      sid: call.sid,
      account_sid: accountSid,
      parent_call_sid: null,
      to: call.to,
      to_formatted: call.to,
      from: call.from,
      from_formatted: call.from,
      phone_number_sid: null,
      status: call.status,
      start_time: null,
      end_time: ended ? rfc2822(call.dateUpdated) : null,
      duration: ended ? '0' : null,
      price: null,
      price_unit: 'USD',
      direction: call.direction,
      answered_by: null,
      api_version: API_VERSION,
      forwarded_from: null,
      group_sid: null,
      caller_name: null,
      queue_time: '0',
      trunk_sid: null,
      date_created: rfc2822(call.dateCreated),
      date_updated: rfc2822(call.dateUpdated),
      uri,
      subresource_uris: {
        notifications: `${accountPrefix}/Calls/${call.sid}/Notifications.json`,
        recordings: `${accountPrefix}/Calls/${call.sid}/Recordings.json`,
        payments: `${accountPrefix}/Calls/${call.sid}/Payments.json`,
        events: `${accountPrefix}/Calls/${call.sid}/Events.json`,
        siprec: `${accountPrefix}/Calls/${call.sid}/Siprec.json`,
        streams: `${accountPrefix}/Calls/${call.sid}/Streams.json`,
        user_defined_message_subscriptions: `${accountPrefix}/Calls/${call.sid}/UserDefinedMessageSubscriptions.json`,
        user_defined_messages: `${accountPrefix}/Calls/${call.sid}/UserDefinedMessages.json`,
      },
    };
  }

  function messageResource(message: FakeTwilioMessage & { dateCreated: Date }): object {
    const uri = `${accountPrefix}/Messages/${message.sid}.json`;
    return {
      account_sid: accountSid,
      api_version: API_VERSION,
      body: message.body,
      date_created: rfc2822(message.dateCreated),
      date_sent: null,
      date_updated: rfc2822(message.dateCreated),
      direction: 'outbound-api',
      error_code: null,
      error_message: null,
      from: message.from,
      messaging_service_sid: null,
      num_media: '0',
      num_segments: String(message.numSegments),
      price: null,
      price_unit: 'USD',
      sid: message.sid,
      status: message.status,
      subresource_uris: { media: `${accountPrefix}/Messages/${message.sid}/Media.json` },
      to: message.to,
      uri,
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    const form = contentType === 'application/x-www-form-urlencoded' ? new URLSearchParams(raw) : new URLSearchParams();
    const authorized = req.headers.authorization === expectedAuth;
    const path = req.url ?? '/';
    const query = Object.fromEntries(new URL(path, 'http://fake').searchParams);
    requests.push({ method: req.method ?? 'GET', path, form, authorized, query, headers: req.headers });

    const failure = failures.shift();
    if (failure) return sendJson(res, failure.status, failure.body);

    if (!authorized) {
      return sendJson(res, 401, twilioError(401, 20003, 'Authenticate'), { 'www-authenticate': 'Basic realm="Twilio API"' });
    }

    const pathname = new URL(path, 'http://fake').pathname;
    const notFound = () => sendJson(res, 404, twilioError(404, 20404, `The requested resource ${pathname} was not found`));
    if (req.method !== 'POST') return notFound();

    if (pathname === `${accountPrefix}/Calls.json`) {
      const to = form.get('To');
      const from = form.get('From');
      const timeout = form.get('Timeout');
      const statusCallback = form.get('StatusCallback');
      if (!to) return sendJson(res, 400, twilioError(400, 21201, "No 'To' number is specified"));
      if (!from) return sendJson(res, 400, twilioError(400, 21213, "No 'From' number is specified"));
      if (timeout === null || !/^\d+$/.test(timeout)) {
        return sendJson(res, 400, twilioError(400, 20001, `Timeout must be an integer, got ${JSON.stringify(timeout)}`));
      }
      if (!statusCallback) return sendJson(res, 400, twilioError(400, 20001, 'StatusCallback is required'));
      if (!form.get('Twiml') && !form.get('Url')) return sendJson(res, 400, twilioError(400, 21205, 'Url parameter is required.'));
      if (invalidNumbers.has(to)) {
        return sendJson(res, 400, twilioError(400, 21211, `The 'To' number ${to} is not a valid phone number.`));
      }
      const machineDetection = form.get('MachineDetection');
      if (machineDetection !== null && machineDetection !== 'Enable' && machineDetection !== 'DetectMessageEnd') {
        return sendJson(res, 400, twilioError(400, 20001, `MachineDetection must be Enable or DetectMessageEnd, got ${machineDetection}`));
      }
      if (form.get('AsyncAmd') === 'true' && !form.get('AsyncAmdStatusCallback')) {
        return sendJson(res, 400, twilioError(400, 20001, 'AsyncAmdStatusCallback is required when AsyncAmd is true'));
      }
      const now = new Date();
      const call = {
        sid: `CA${randomBytes(16).toString('hex')}`,
        to,
        from,
        timeout: Number(timeout),
        statusCallback,
        status: 'queued',
        machineDetection:
          machineDetection === null
            ? null
            : {
                mode: machineDetection,
                asyncAmd: form.get('AsyncAmd'),
                statusCallback: form.get('AsyncAmdStatusCallback'),
                statusCallbackMethod: form.get('AsyncAmdStatusCallbackMethod'),
              },
        twimlUpdates: [],
        direction: 'outbound-api' as const,
        dateCreated: now,
        dateUpdated: now,
      };
      calls.set(call.sid, call);
      return sendJson(res, 201, callResource(call));
    }

    if (pathname === `${accountPrefix}/Messages.json`) {
      const to = form.get('To');
      const from = form.get('From');
      const body = form.get('Body');
      if (!to) return sendJson(res, 400, twilioError(400, 21604, "A 'To' phone number is required."));
      if (!from && !form.get('MessagingServiceSid'))
        return sendJson(res, 400, twilioError(400, 21603, "A 'From' phone number is required."));
      if (!body && !form.get('MediaUrl') && !form.get('ContentSid'))
        return sendJson(res, 400, twilioError(400, 21602, 'Message body is required.'));
      if (!/^\+[1-9]\d{6,14}$/.test(to) || invalidNumbers.has(to)) {
        return sendJson(res, 400, twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`));
      }
      if (body !== null && body.length > 1600) {
        return sendJson(res, 400, twilioError(400, 21617, 'The concatenated message body exceeds the 1600 character limit.'));
      }
      const statusCallback = form.get('StatusCallback');
      const message = {
        sid: `SM${randomBytes(16).toString('hex')}`,
        to,
        from: from ?? '',
        body: body ?? '',
        statusCallback,
        status: 'queued',
        numSegments: new SegmentedMessage(body ?? '').segmentsCount,
        dateCreated: new Date(),
      };
      messages.set(message.sid, message);
      await answersHeld;
      return sendJson(res, 201, messageResource(message));
    }

    const callsPrefix = `${accountPrefix}/Calls/`;
    if (pathname.startsWith(callsPrefix) && pathname.endsWith('.json')) {
      const call = calls.get(pathname.slice(callsPrefix.length, -'.json'.length));
      if (!call) return notFound();
      const twiml = form.get('Twiml');
      if (twiml !== null) {
        if (['completed', 'busy', 'no-answer', 'canceled', 'failed'].includes(call.status)) {
          return sendJson(res, 400, twilioError(400, 21220, 'Call is not in-progress. Cannot redirect.'));
        }
        call.twimlUpdates.push(twiml);
        call.dateUpdated = new Date();
      }
      const status = form.get('Status');
      if (status !== null) {
        if (status !== 'completed' && status !== 'canceled') {
          return sendJson(res, 400, twilioError(400, 20001, `Invalid Status: ${status}`));
        }
        call.status = status;
        call.dateUpdated = new Date();
      }
      return sendJson(res, 200, callResource(call));
    }

    return notFound();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, twilioError(500, 20500, `Fake Twilio crashed: ${String(error)}`));
      else res.destroy();
    });
  });
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    requests,
    calls,
    messages,

    async receiveMessage(url, message, signingToken = authToken) {
      const sid = `SM${randomBytes(16).toString('hex')}`;
      const form = new URLSearchParams({
        ToCountry: 'US',
        SmsMessageSid: sid,
        NumMedia: '0',
        SmsSid: sid,
        SmsStatus: 'received',
        Body: message.body,
        To: message.to,
        NumSegments: '1',
        MessageSid: sid,
        AccountSid: accountSid,
        From: message.from,
        ApiVersion: API_VERSION,
      });
      const response = await postAsTwilio(url, form, signingToken);
      return { status: response.status, contentType: response.headers.get('content-type'), body: await response.text() };
    },
    holdMessageAnswers() {
      let release!: () => void;
      answersHeld = new Promise((resolve) => (release = resolve));
      return () => {
        answersHeld = undefined;
        release();
      };
    },

    async sendMessageStatus(sid, messageStatus, extra = {}, signingToken = authToken) {
      const message = messages.get(sid);
      if (!message?.statusCallback) throw new Error(`fake Twilio: no message ${sid} with a StatusCallback`);
      message.status = messageStatus;
      const form = new URLSearchParams({
        AccountSid: accountSid,
        ApiVersion: API_VERSION,
        MessageSid: sid,
        SmsSid: sid,
        MessageStatus: messageStatus,
        SmsStatus: messageStatus,
        To: message.to,
        From: message.from,
        ...extra,
      });
      const response = await postAsTwilio(message.statusCallback, form, signingToken, {
        'i-twilio-idempotency-token': randomBytes(16).toString('hex'),
      });
      await response.text();
      return response.status;
    },

    async ringNumber(ring) {
      const sid = ring.sid ?? `CA${randomBytes(16).toString('hex')}`;
      const now = new Date();
      calls.set(sid, {
        sid,
        to: ring.to,
        from: ring.from,
        timeout: 0,
        statusCallback: ring.statusCallback ?? '',
        status: 'ringing',
        machineDetection: null,
        twimlUpdates: [],
        direction: 'inbound',
        dateCreated: now,
        dateUpdated: now,
      });
      const form = new URLSearchParams({
        AccountSid: ring.accountSid ?? accountSid,
        ApiVersion: API_VERSION,
        CallSid: sid,
        CallStatus: 'ringing',
        Called: ring.to,
        Caller: ring.from,
        Direction: 'inbound',
        From: ring.from,
        To: ring.to,
      });
      const signingToken = ring.authToken === undefined ? authToken : ring.authToken;
      const response = await postAsTwilio(ring.voiceUrl, form, signingToken);
      return { sid, status: response.status, contentType: response.headers.get('content-type') ?? '', body: await response.text() };
    },

    async sendStatus(sid, callStatus, extra = {}) {
      const call = calls.get(sid);
      if (!call) throw new Error(`fake Twilio: no call ${sid}`);
      call.status = callStatus;
      call.dateUpdated = new Date();
      const form = new URLSearchParams({
        AccountSid: accountSid,
        ApiVersion: API_VERSION,
        CallSid: sid,
        CallStatus: callStatus,
        Called: call.to,
        Caller: call.from,
        Direction: call.direction,
        From: call.from,
        To: call.to,
        Timestamp: rfc2822(call.dateUpdated),
      });
      for (const [name, value] of Object.entries(extra)) form.set(name, value);
      const response = await postAsTwilio(call.statusCallback, form, authToken);
      await response.arrayBuffer();
      return response.status;
    },

    async sendAnsweredBy(sid, answeredBy, options = {}) {
      const call = calls.get(sid);
      const url = call?.machineDetection?.statusCallback;
      if (!call || !url) throw new Error(`fake Twilio: no call ${sid} with an AsyncAmdStatusCallback`);
      const form = new URLSearchParams({
        AccountSid: accountSid,
        CallSid: sid,
        AnsweredBy: answeredBy,
        MachineDetectionDuration: String(options.detectionMs ?? 4200),
      });
      const response = await postAsTwilio(url, form, options.authToken ?? authToken);
      await response.arrayBuffer();
      return response.status;
    },

    async answerTransfer(sid, options = {}) {
      const call = calls.get(sid);
      const dial = call?.twimlUpdates.at(-1)?.match(/<Dial><Number url="([^"]+)">([^<]+)<\/Number><\/Dial>/);
      if (!call || !dial) throw new Error(`fake Twilio: call ${sid} was not transferred with a <Number url>`);
      const url = unescapeXml(dial[1]!);
      const form = new URLSearchParams({
        AccountSid: accountSid,
        ApiVersion: API_VERSION,
        CallSid: `CA${randomBytes(16).toString('hex')}`,
        ParentCallSid: sid,
        CallStatus: 'in-progress',
        Direction: 'outbound-dial',
        From: call.direction === 'inbound' ? call.from : call.to,
        To: unescapeXml(dial[2]!),
      });
      const response = await postAsTwilio(url, form, options.authToken ?? authToken);
      return { status: response.status, body: await response.text() };
    },

    failNext(status, body) {
      failures.push({ status, body });
    },

    close: listening.close,
  };
}
