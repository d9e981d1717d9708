/**
 * Calls through Twilio's Programmable Voice REST API
 * (https://www.twilio.com/docs/voice/api/call-resource): `POST /2010-04-01/Accounts/{AccountSid}/Calls.json`
 * to place a call with inline TwiML that streams its audio to us (or hands it to ConversationRelay), `POST …/Calls/{CallSid}.json`
 * with `Status=completed` to hang up (or `Twiml=…` to speak a voicemail and hang up); form-encoded,
 * HTTP Basic auth, Twilio's error JSON `{code, message, more_info, status}` on failure. Asynchronous
 * answering-machine detection (https://www.twilio.com/docs/voice/answering-machine-detection):
 * `MachineDetection=DetectMessageEnd` and `AsyncAmd=true` on the dial, the verdict (`AnsweredBy`,
 * `MachineDetectionDuration`) posted to `AsyncAmdStatusCallback`. Every callback is signed with
 * X-Twilio-Signature.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { parseForm } from '../../platform/form.ts';
import { asRecord, bodyExcerpt, isRetryableStatus, ProviderError, providerFetch, type ProviderResponse } from '../errors.ts';
import type {
  AnsweredBy,
  CallOutcome,
  CallUpdate,
  Connection,
  DialRequest,
  ConversationRelaySpeech,
  DialResult,
  IncomingCalls,
  ProviderWebhook,
  TelephonyChannel,
  TelephonyConnection,
} from '../types.ts';

/**
 * Twilio error codes (REST answer `code`, on a 4xx) meaning this number will never be dialable,
 * so the attempt must not be retried:
 *
 * - 21211 Invalid 'To' phone number.
 * - 21214 'To' phone number cannot be reached.
 * - 21215 Account not authorized to call this number (geographic permissions).
 * - 21216 Account not allowed to call this number (blocked / high-risk / premium destination).
 * - 21217 Phone number does not appear to be valid.
 * - 13223 Dial: invalid phone number format.
 * - 13224 Dial: invalid phone number (not a callable number).
 * - 21610 The recipient has opted out (replied STOP); they may not be contacted.
 */
export const TWILIO_PERMANENT_DIAL_ERROR_CODES: ReadonlySet<number> = new Set([21211, 21214, 21215, 21216, 21217, 13223, 13224, 21610]);

/** Twilio 21220 "Invalid call state": modifying a call that has already ended. */
const CALL_NOT_IN_PROGRESS = 21220;

/** The events we ask Twilio to report on the call's `StatusCallback`. */
const STATUS_CALLBACK_EVENTS = ['initiated', 'ringing', 'answered', 'completed'] as const;

export function connectTwilioTelephony(connection: Connection): TelephonyConnection {
  const { accountSid, authToken } = connection.credentials as { accountSid: string; authToken: string };
  const callsUrl = `${connection.settings.TWILIO_API_URL!.replace(/\/+$/, '')}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Calls`;
  const authorization = `Basic ${Buffer.from(`${accountSid}:${authToken}`, 'utf8').toString('base64')}`;
  const post = (url: string, form: URLSearchParams, label: string) =>
    providerFetch(
      label,
      url,
      {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
      },
      connection.timeoutMs,
    );

  /** `POST …/Calls/{CallSid}.json`: changes a live call; a call already over is left as it is. */
  const modifyLiveCall = async (providerCallId: string, form: URLSearchParams, what: string): Promise<void> => {
    const response = await post(`${callsUrl}/${encodeURIComponent(providerCallId)}.json`, form, `Twilio ${what}`);
    const { status } = response;
    if (status >= 200 && status < 300) return;
    // The call is gone or already over: nothing left to change.
    if (status === 404) return;
    const twilioError = errorOf(response);
    if (status === 400 && twilioError.code === CALL_NOT_IN_PROGRESS) return;
    throw new ProviderError(
      `Twilio ${what} of ${providerCallId} failed: HTTP ${status}${codeSuffix(twilioError.code)}: ${twilioError.message}`,
      {
        status,
        code: twilioError.code,
        retryable: isRetryableStatus(status),
        cause: { moreInfo: twilioError.moreInfo },
      },
    );
  };

  return {
    async dial(request: DialRequest): Promise<DialResult> {
      const form = new URLSearchParams();
      form.append('To', request.to);
      form.append('From', request.from);
      form.append('Timeout', String(request.dialTimeoutSec));
      form.append('StatusCallback', request.statusCallbackUrl);
      form.append('StatusCallbackMethod', 'POST');
      for (const event of STATUS_CALLBACK_EVENTS) form.append('StatusCallbackEvent', event);
      form.append(
        'Twiml',
        request.conversationRelay
          ? conversationRelayTwiml(request.conversationRelay, request.callId, request.mediaStreamToken)
          : streamTwiml(request.mediaStreamUrl, request.callId, request.mediaStreamToken),
      );
      if (request.answeringMachineDetection) {
        // DetectMessageEnd reports a machine once its greeting ended (after the beep), so a voicemail
        // spoken then is recorded whole; async keeps the call connected while detection runs.
        form.append('MachineDetection', 'DetectMessageEnd');
        form.append('AsyncAmd', 'true');
        form.append('AsyncAmdStatusCallback', request.answeringMachineDetection.callbackUrl);
        form.append('AsyncAmdStatusCallbackMethod', 'POST');
      }

      const response = await post(`${callsUrl}.json`, form, 'Twilio dial');
      const { status } = response;
      if (status >= 200 && status < 300) {
        const sid = asRecord(response.json)?.sid;
        if (typeof sid !== 'string' || sid === '') {
          // Not retryable: Twilio may have placed the call, and a retry could ring the person twice.
          throw new ProviderError(`Twilio dial answered HTTP ${status} without a call sid`, { status, retryable: false });
        }
        return { providerCallId: sid };
      }
      const twilioError = errorOf(response);
      const permanent =
        status >= 400 && status < 500 && twilioError.code !== undefined && TWILIO_PERMANENT_DIAL_ERROR_CODES.has(twilioError.code);
      throw new ProviderError(
        permanent ? twilioError.message : `Twilio dial failed: HTTP ${status}${codeSuffix(twilioError.code)}: ${twilioError.message}`,
        {
          status,
          code: twilioError.code,
          permanent,
          retryable: !permanent && isRetryableStatus(status),
          cause: { moreInfo: twilioError.moreInfo },
        },
      );
    },

    hangup: (providerCallId) => modifyLiveCall(providerCallId, new URLSearchParams({ Status: 'completed' }), 'hangup'),
    speakAndHangUp: (providerCallId, speech) =>
      modifyLiveCall(providerCallId, new URLSearchParams({ Twiml: sayAndHangUpTwiml(speech.text, speech.language) }), 'voicemail'),
    // New TwiML ends the media stream and dials the target; the caller stays on the line.
    transfer: (providerCallId, to, whisperUrl) =>
      modifyLiveCall(providerCallId, new URLSearchParams({ Twiml: transferTwiml(to, whisperUrl) }), 'transfer'),
  };
}

/** TwiML is XML; Twilio reads `text/xml` and `application/xml` alike. */
const twiml = (body: string) => ({ contentType: 'text/xml; charset=utf-8', body });

/**
 * A call to one of the account's numbers: Twilio requests the number's "A call comes in" webhook
 * (https://www.twilio.com/docs/usage/webhooks/voice-webhooks), form-encoded and signed like every
 * callback, with `CallSid`, `AccountSid`, `From`, `To`, `CallStatus=ringing`, `Direction=inbound`,
 * and executes the TwiML it is answered with.
 */
export const twilioIncomingCalls: IncomingCalls = {
  read: (webhook) => {
    const params = flatForm(webhook);
    const present = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);
    return {
      providerCallId: present(params.CallSid),
      from: present(params.From),
      to: present(params.To),
      accountId: present(params.AccountSid),
    };
  },
  accountIdOf: (credentials) => credentials.accountSid,
  stream: (mediaStreamUrl, callId, token) => twiml(streamTwiml(mediaStreamUrl, callId, token)),
  turnAway: (text, language) => twiml(sayAndHangUpTwiml(text, language)),
  conversationRelay: (speech, callId, token) => twiml(conversationRelayTwiml(speech, callId, token)),
};

/** Twilio voice: dial and hang up over REST, status callbacks signed with the account's Auth Token. */
export const twilioTelephony: TelephonyChannel = {
  connect: connectTwilioTelephony,
  answeringMachineDetection: true,
  callbacks: {
    signatureHeader: 'X-Twilio-Signature',
    callIdOf: (webhook) => {
      const callSid = flatForm(webhook).CallSid;
      return callSid === '' ? undefined : callSid;
    },
    verify: (webhook, credentials) =>
      verifyTwilioSignature(webhook.url, parseForm(webhook.rawBody), headerOf(webhook, 'x-twilio-signature'), credentials.authToken!),
    read: (webhook, answeredBefore) => {
      const params = flatForm(webhook);
      try {
        return twilioCallUpdate(params, answeredBefore);
      } catch {
        throw new ProviderError(`CallStatus "${params.CallStatus ?? ''}" is not a Twilio call status.`, { retryable: false });
      }
    },
    readAnsweredBy: (webhook) => {
      const params = flatForm(webhook);
      const answeredBy = normaliseAnsweredBy(params.AnsweredBy);
      if (!answeredBy) {
        throw new ProviderError(`AnsweredBy "${params.AnsweredBy ?? ''}" is not a Twilio answering-machine verdict.`, { retryable: false });
      }
      return { answeredBy, detectionMs: parseDuration(params.MachineDetectionDuration) };
    },
    incoming: twilioIncomingCalls,
    whisper: (text, language) => twiml(sayTwiml(text, language)),
  },
};

/**
 * Twilio's `AnsweredBy` in our four words: `machine_start` (MachineDetection=Enable) and the
 * `machine_end_*` verdicts of DetectMessageEnd (beep, silence, other) are all a machine.
 */
export function normaliseAnsweredBy(raw: string | undefined): AnsweredBy | undefined {
  switch (raw) {
    case 'human':
    case 'fax':
    case 'unknown':
      return raw;
    case 'machine_start':
    case 'machine_end_beep':
    case 'machine_end_silence':
    case 'machine_end_other':
      return 'machine';
    default:
      return undefined;
  }
}

/** A form body with each repeated field's last value. */
function flatForm(webhook: ProviderWebhook): Record<string, string | undefined> {
  const params = parseForm(webhook.rawBody);
  return Object.fromEntries(Object.entries(params).map(([name, value]) => [name, Array.isArray(value) ? value[value.length - 1] : value]));
}

export function headerOf(webhook: ProviderWebhook, name: string): string | undefined {
  const value = webhook.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * TwiML that connects the answered call to our media stream, passing our call id and its signed
 * token as custom parameters (a stream URL may carry no query string), so the stream binds to the call.
 */
export function streamTwiml(mediaStreamUrl: string, callId: string, token: string): string {
  return (
    `<Response><Connect><Stream url="${xmlAttr(mediaStreamUrl)}">` +
    `<Parameter name="callId" value="${xmlAttr(callId)}"/>` +
    `<Parameter name="token" value="${xmlAttr(token)}"/>` +
    `</Stream></Connect></Response>`
  );
}

/**
 * TwiML that bridges the caller to `to`; the caller ID stays the number they were called from. With
 * `whisperUrl`, Twilio fetches what `to` hears once they answer, before the two are connected
 * (`<Number url>`, a warm transfer).
 */
export function transferTwiml(to: string, whisperUrl?: string): string {
  if (!whisperUrl) return `<Response><Dial>${xmlAttr(to)}</Dial></Response>`;
  return `<Response><Dial><Number url="${xmlAttr(whisperUrl)}">${xmlAttr(to)}</Number></Dial></Response>`;
}

/** TwiML that says `text` in `language` and goes on (to the bridge, for a transfer's whisper). */
export const sayTwiml = (text: string, language: string): string =>
  `<Response><Say language="${xmlAttr(language)}">${xmlAttr(text)}</Say></Response>`;

/** TwiML that speaks `text` and hangs up: the voicemail, said in the agent's language. */
export function sayAndHangUpTwiml(text: string, language: string): string {
  return `<Response><Say language="${xmlAttr(language)}">${xmlAttr(text)}</Say><Hangup/></Response>`;
}

/** Our providers as ConversationRelay names them (`ttsProvider`, `transcriptionProvider`). */
const TWILIO_SPEECH_PROVIDERS: Record<string, string> = { ELEVENLABS: 'ElevenLabs', DEEPGRAM: 'Deepgram' };

function twilioSpeechProvider(name: string): string {
  const twilioName = TWILIO_SPEECH_PROVIDERS[name];
  if (!twilioName) throw new ProviderError(`Twilio ConversationRelay does not run ${name}.`, { retryable: false });
  return twilioName;
}

/**
 * TwiML that hands the answered call to ConversationRelay with the agent's speech, passing our call
 * id and its signed token as parameters (they come back in `setup`). Keys pressed are reported
 * (`dtmfDetection`), the caller's speech or keys stop the agent (`interruptible`), and prompts are
 * reported while the caller talks (`partialPrompts`), so silence is not mistaken while they do.
 * Nothing follows `<Connect>`: when the session ends, the call ends.
 */
export function conversationRelayTwiml(speech: ConversationRelaySpeech, callId: string, token: string): string {
  const attributes: [string, string | undefined][] = [
    ['url', speech.url],
    ['language', speech.language],
    ['ttsProvider', twilioSpeechProvider(speech.tts.provider)],
    ['voice', speech.tts.voice ?? undefined],
    ['transcriptionProvider', twilioSpeechProvider(speech.stt.provider)],
    ['speechModel', speech.stt.model],
    ['interruptible', 'any'],
    ['dtmfDetection', 'true'],
    ['partialPrompts', 'true'],
  ];
  const attributeText = attributes
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => ` ${name}="${xmlAttr(value)}"`)
    .join('');
  return (
    `<Response><Connect><ConversationRelay${attributeText}>` +
    `<Parameter name="callId" value="${xmlAttr(callId)}"/>` +
    `<Parameter name="token" value="${xmlAttr(token)}"/>` +
    `</ConversationRelay></Connect></Response>`
  );
}

function xmlAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

function errorOf(response: ProviderResponse): { code: number | undefined; message: string; moreInfo: string | undefined } {
  const json = asRecord(response.json);
  const code =
    typeof json?.code === 'number' ? json.code : typeof json?.code === 'string' && /^\d+$/.test(json.code) ? Number(json.code) : undefined;
  const message = typeof json?.message === 'string' && json.message !== '' ? json.message : bodyExcerpt(response.text);
  const moreInfo = typeof json?.more_info === 'string' ? json.more_info : undefined;
  return { code, message, moreInfo };
}

function codeSuffix(code: number | undefined): string {
  return code === undefined ? '' : ` (Twilio error ${code})`;
}

// ---------------------------------------------------------------------------------------------
// Webhook signatures (https://www.twilio.com/docs/usage/security#validating-requests)
// ---------------------------------------------------------------------------------------------

/**
 * Twilio's `X-Twilio-Signature`: take the full URL Twilio requested (scheme, host, path and query
 * string, exactly as configured), append every POST parameter sorted by name (case-sensitive,
 * code-unit order) as name followed by value with no delimiters (a repeated name contributes
 * name+value once per value, in the order given), HMAC-SHA1 that with the auth token, base64.
 */
export function twilioSignature(url: string, params: Record<string, string | string[]>, authToken: string): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name];
    const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
    for (const v of values) data += name + v;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Checks an `X-Twilio-Signature` header in constant time. A missing or empty header fails. */
export function verifyTwilioSignature(
  url: string,
  params: Record<string, string | string[]>,
  signatureHeader: string | undefined,
  authToken: string,
): boolean {
  if (typeof signatureHeader !== 'string' || signatureHeader === '') return false;
  const expected = Buffer.from(twilioSignature(url, params, authToken), 'utf8');
  const given = Buffer.from(signatureHeader, 'utf8');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}

// ---------------------------------------------------------------------------------------------
// Status callbacks
// ---------------------------------------------------------------------------------------------

/**
 * Maps a status callback's `CallStatus` to our call state. `answeredBefore` is whether we already
 * saw the call `in-progress`, since Twilio's `completed` alone does not say whether anyone answered.
 * `AnsweredBy` (answering-machine detection) is accepted but does not change the mapping.
 */
export function twilioCallUpdate(
  params: { CallStatus?: string | undefined; CallDuration?: string | undefined; AnsweredBy?: string | undefined },
  answeredBefore: boolean,
): CallUpdate {
  const status = params.CallStatus;
  const ended = (outcome: CallOutcome): CallUpdate => ({
    status: 'ENDED',
    outcome,
    durationSec: parseDuration(params.CallDuration),
    ...(outcome === 'FAILED' ? { failureReason: 'Twilio could not connect the call.' } : {}),
  });
  switch (status) {
    case 'queued':
    case 'initiated':
      return { status: 'QUEUED' };
    case 'ringing':
      return { status: 'RINGING' };
    case 'in-progress':
      return { status: 'IN_PROGRESS' };
    case 'completed': {
      const durationSec = parseDuration(params.CallDuration);
      return ended(answeredBefore || (durationSec !== null && durationSec > 0) ? 'ANSWERED' : 'UNANSWERED');
    }
    case 'busy':
      return ended('BUSY');
    case 'no-answer':
    case 'canceled':
      return ended('UNANSWERED');
    case 'failed':
      return ended('FAILED');
    default:
      throw new Error(
        status === undefined ? 'Twilio status callback without CallStatus' : `Unknown Twilio CallStatus: ${JSON.stringify(status)}`,
      );
  }
}

function parseDuration(raw: string | undefined): number | null {
  if (raw === undefined || !/^\d+$/.test(raw.trim())) return null;
  return Number(raw.trim());
}
