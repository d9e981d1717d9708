import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure } from '../expect-failure.ts';
import { listenOnLoopback, readBody } from '../fake-server.ts';
import type { DialRequest, ProviderWebhook } from '../types.ts';
import { startFakeTelnyx, telnyxError, type FakeTelnyx } from './fake.ts';
import { telnyx } from './index.ts';
import { telnyxSmsUpdate } from './sms.ts';
import { connectTelnyxTelephony, telnyxCallUpdate } from './telephony.ts';
import { verifyTelnyxSignature } from './webhooks.ts';

const API_KEY = 'KEY0123456789ABCDEF_fake-telnyx-key';
const CONNECTION_ID = '1494404757140276705';
const INVALID_NUMBER = '+15005550001';
const MEDIA_STREAM_URL = 'wss://voice.callforge.test/api/v1/telephony/telnyx/media';
/** How a dialled or answered call streams to us: the callee's track, both ways in PCMU, with our token. */
const streamFields = (token: string) => ({
  stream_url: MEDIA_STREAM_URL,
  stream_track: 'inbound_track',
  stream_codec: 'PCMU',
  stream_bidirectional_mode: 'rtp',
  stream_bidirectional_codec: 'PCMU',
  stream_auth_token: token,
});

let fake: FakeTelnyx;
let receiver: { url: string; received: ProviderWebhook[]; close(): Promise<void> };

const connection = (overrides: { apiKey?: string; baseUrl?: string; timeoutMs?: number } = {}) => ({
  credentials: { apiKey: overrides.apiKey ?? API_KEY, connectionId: CONNECTION_ID, publicKey: fake.publicKey },
  settings: { TELNYX_API_URL: overrides.baseUrl ?? fake.url },
  publicUrl: 'https://callforge.test',
  timeoutMs: overrides.timeoutMs ?? 10_000,
});
const voice = (overrides: Parameters<typeof connection>[0] = {}) => connectTelnyxTelephony(connection(overrides));
const sms = (overrides: Parameters<typeof connection>[0] = {}) => telnyx.sms!.connect(connection(overrides));
const callbacks = telnyx.telephony!.callbacks!;
const smsCallbacks = telnyx.sms!.callbacks!;

function dialRequest(overrides: Partial<DialRequest> = {}): DialRequest {
  return {
    callId: '0195f3c2-7a10-7000-8000-000000000001',
    from: '+15550001000',
    to: '+15550002000',
    dialTimeoutSec: 30,
    statusCallbackUrl: `${receiver.url}/api/v1/telephony/telnyx/status`,
    mediaStreamUrl: MEDIA_STREAM_URL,
    mediaStreamToken: 'token_01',
    ...overrides,
  };
}

async function listen(server: Server) {
  return listenOnLoopback(server);
}

beforeAll(async () => {
  fake = await startFakeTelnyx({ apiKey: API_KEY, invalidNumbers: [INVALID_NUMBER] });
  // Records each webhook as the API would hand it to the provider, and answers 204 when our verification accepts it.
  const received: ProviderWebhook[] = [];
  let origin = '';
  const server = createServer((req, res) => {
    void readBody(req).then((rawBody) => {
      const webhook = { url: `${origin}${req.url ?? '/'}`, headers: req.headers, rawBody, receivedAt: new Date() };
      received.push(webhook);
      res.writeHead(callbacks.verify(webhook, { publicKey: fake.publicKey }) ? 204 : 403).end();
    });
  });
  const listening = await listen(server);
  origin = listening.url;
  receiver = { url: origin, received, close: listening.close };
});

afterAll(async () => {
  await fake?.close();
  await receiver?.close();
});

describe('Telnyx dial', () => {
  it('POSTs /v2/calls with Bearer auth, the Call Control fields, our call id as client_state and a bidirectional PCMU stream carrying our token', async () => {
    const before = fake.requests.length;
    const { providerCallId } = await voice().dial(dialRequest());

    const request = fake.requests[before]!;
    expect(request).toMatchObject({ method: 'POST', path: '/v2/calls', authorized: true });
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toEqual({
      connection_id: CONNECTION_ID,
      to: '+15550002000',
      from: '+15550001000',
      timeout_secs: 30,
      webhook_url: `${receiver.url}/api/v1/telephony/telnyx/status`,
      webhook_url_method: 'POST',
      client_state: Buffer.from('0195f3c2-7a10-7000-8000-000000000001').toString('base64'),
      ...streamFields('token_01'),
    });
    expect(providerCallId).toMatch(/^v3:[0-9a-f]{32}$/);
    expect(fake.calls.get(providerCallId)).toMatchObject({ to: '+15550002000', timeoutSecs: 30, connectionId: CONNECTION_ID });
  });

  it.each([
    ['an invalid number', () => {}, INVALID_NUMBER, 'Telnyx: Invalid phone number: The phone number is invalid. (Telnyx error 10002)'],
    [
      'a number not in E.164',
      () => {},
      '5550002000',
      'Telnyx: Phone number must be in +E.164 format: The specified phone number parameter must be in +E.164 format. (Telnyx error 10016)',
    ],
  ])('fails permanently, not retryable, for %s', async (_name, arrange, to, message) => {
    arrange();
    const error = await failure(voice().dial(dialRequest({ to })));
    expect(error).toMatchObject({ permanent: true, retryable: false, status: 422, message });
  });

  it('is not permanent when the refused number is our own (from)', async () => {
    fake.failNext(422, telnyxError(10016, 'Phone number must be in +E.164 format', 'from must be +E.164.', '/from'));
    expect(await failure(voice().dial(dialRequest()))).toMatchObject({ permanent: false, retryable: false, code: 10016 });
  });

  it.each([429, 500, 503])('is retryable, never permanent, on HTTP %i (even with a permanent code)', async (status) => {
    fake.failNext(status, telnyxError(10002, 'Invalid phone number', 'odd'));
    const error = await failure(voice().dial(dialRequest()));
    expect(error).toMatchObject({ permanent: false, retryable: true, status });
    expect(error.message).toContain(`HTTP ${status}`);
  });

  it("says Telnyx's words, without the key, for a wrong API key (401, not retryable)", async () => {
    const error = await failure(voice({ apiKey: 'KEYwrong-wrong-wrong-wrong' }).dial(dialRequest()));
    expect(fake.requests.at(-1)?.authorized).toBe(false);
    expect(error).toMatchObject({ status: 401, retryable: false, permanent: false, code: 10009 });
    expect(error.message).toMatch(/^Telnyx dial failed: HTTP 401 \(Telnyx error 10009\): Authentication failed/);
    expect(error.message).not.toContain('wrong');
  });

  it('is not retryable when a 2xx carries no call_control_id (the call may exist)', async () => {
    fake.failNext(200, { data: {} });
    expect(await failure(voice().dial(dialRequest()))).toMatchObject({ retryable: false, status: 200 });
  });

  it('times out within timeoutMs, retryable', async () => {
    const silent = await listen(
      createServer(() => {
        /* never answers */
      }),
    );
    try {
      const started = Date.now();
      const error = await failure(voice({ baseUrl: silent.url, timeoutMs: 100 }).dial(dialRequest()));
      expect(error).toMatchObject({ retryable: true, permanent: false });
      expect(error.message).toMatch(/timed out after 100 ms/);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await silent.close();
    }
  });
});

describe('Telnyx hangup', () => {
  it('POSTs the hangup action for the call_control_id', async () => {
    const line = voice();
    const { providerCallId } = await line.dial(dialRequest());
    await line.hangup(providerCallId);
    const request = fake.requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', path: `/v2/calls/${providerCallId}/actions/hangup`, authorized: true, body: {} });
    expect(fake.calls.get(providerCallId)?.ended).toBe(true);
  });

  it('takes 90018 "Call has already ended" as done', async () => {
    const line = voice();
    const { providerCallId } = await line.dial(dialRequest());
    await line.hangup(providerCallId);
    await expect(line.hangup(providerCallId)).resolves.toBeUndefined();
    expect(fake.requests.at(-1)?.path).toBe(`/v2/calls/${providerCallId}/actions/hangup`);
  });

  it('throws on other failures', async () => {
    fake.failNext(500, telnyxError(10007, 'Unexpected error', 'An unexpected error occured.'));
    expect(await failure(voice().hangup('v3:gone'))).toMatchObject({ retryable: true, status: 500 });
    expect(await failure(voice().hangup('v3:unknown'))).toMatchObject({ retryable: false, status: 404 });
  });
});

describe('Telnyx incoming calls', () => {
  const incoming = callbacks.incoming!;
  const ringing = async () => {
    const before = receiver.received.length;
    const { callControlId, status } = await fake.ringNumber({
      webhookUrl: `${receiver.url}/api/v1/telephony/telnyx/incoming`,
      from: '+15550003000',
      to: '+15550001000',
      connectionId: CONNECTION_ID,
    });
    expect(status).toBe(204); // signed like every Telnyx webhook
    const webhook = receiver.received[before]!;
    const call = { providerCallId: callControlId, callId: '0195f3c2-7a10-7000-8000-0000000000aa', connection: connection() };
    return { webhook, callControlId, call: { ...call, statusCallbackUrl: `${receiver.url}/api/v1/telephony/telnyx/status` } };
  };

  it('reads call.initiated (direction incoming) as a ringing call on the tenant’s application', async () => {
    const { webhook, callControlId } = await ringing();
    expect(incoming.read(webhook)).toEqual({
      providerCallId: callControlId,
      from: '+15550003000',
      to: '+15550001000',
      accountId: CONNECTION_ID,
    });
    expect(incoming.accountIdOf(connection().credentials)).toBe(CONNECTION_ID);
    expect(incoming.isStatusEvent!(webhook)).toBe(false);
    const hangup = { ...webhook, rawBody: webhook.rawBody.replace('"call.initiated"', '"call.hangup"') };
    expect(incoming.isStatusEvent!(hangup)).toBe(true);
  });

  it('answers with the stream (our token, call id and status URL), once however often it is asked', async () => {
    const { callControlId, call } = await ringing();
    const reply = await incoming.stream(MEDIA_STREAM_URL, call.callId, 'token_02', call);
    expect(reply).toEqual({ contentType: 'text/plain; charset=utf-8', body: '' });
    const request = fake.requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', path: `/v2/calls/${callControlId}/actions/answer`, authorized: true });
    expect(request.body).toEqual({
      command_id: call.callId,
      webhook_url: call.statusCallbackUrl,
      webhook_url_method: 'POST',
      client_state: Buffer.from(call.callId).toString('base64'),
      ...streamFields('token_02'),
    });
    expect(fake.calls.get(callControlId)).toMatchObject({ answered: true, webhookUrl: call.statusCallbackUrl });
    // A retried webhook answers again with the same command_id: Telnyx ignores it.
    await expect(incoming.stream(MEDIA_STREAM_URL, call.callId, 'token_02', call)).resolves.toBeDefined();
  });

  it('turns a call away rejected busy, unanswered', async () => {
    const { callControlId, call } = await ringing();
    await incoming.turnAway('Sorry.', 'en-US', call);
    expect(fake.requests.at(-1)).toMatchObject({
      path: `/v2/calls/${callControlId}/actions/reject`,
      body: { command_id: call.callId, cause: 'USER_BUSY' },
    });
    expect(fake.calls.get(callControlId)).toMatchObject({ answered: false, rejectedWith: 'USER_BUSY', ended: true });
  });

  it('takes a call the caller already hung up as done, and throws on other failures', async () => {
    const { callControlId, call } = await ringing();
    await fake.sendCallEvent(callControlId, 'call.hangup', { hangup_cause: 'originator_cancel' });
    await expect(incoming.stream(MEDIA_STREAM_URL, 'another-call-id', 'token_03', call)).resolves.toBeDefined();
    fake.failNext(500, telnyxError(10007, 'Unexpected error', 'An unexpected error occured.'));
    expect(await failure(Promise.resolve(incoming.turnAway('Sorry.', 'en-US', call)))).toMatchObject({ retryable: true, status: 500 });
  });
});

describe('Telnyx SMS', () => {
  it('POSTs /v2/messages {from, to, text, webhook_url} and returns data.id', async () => {
    const sent = await sms().send({
      from: '+15550001000',
      to: '+15550003000',
      body: 'Thanks for your time',
      statusCallbackUrl: `${receiver.url}/api/v1/messages/telnyx-status?tenant=t&message=m`,
    });
    const request = fake.requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', path: '/v2/messages', authorized: true });
    expect(request.body).toEqual({
      from: '+15550001000',
      to: '+15550003000',
      text: 'Thanks for your time',
      webhook_url: `${receiver.url}/api/v1/messages/telnyx-status?tenant=t&message=m`,
    });
    expect(sent).toEqual({ providerMessageId: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued' });
    expect(fake.messages.get(sent.providerMessageId)?.text).toBe('Thanks for your time');
  });

  it("maps Telnyx's errors: 4xx not retryable, 429 and 5xx retryable", async () => {
    const refused = await failure(sms().send({ from: '+15550001000', to: INVALID_NUMBER, body: 'x' }));
    expect(refused).toMatchObject({ retryable: false, status: 400, code: 40310 });
    expect(refused.message).toBe("Telnyx SMS: HTTP 400 (Telnyx error 40310): Invalid 'to' address: The 'to' address is invalid.");
    fake.failNext(429, telnyxError(10011, 'Too many requests', 'You have exceeded the maximum number of allowed requests.'));
    expect(await failure(sms().send({ from: '+15550001000', to: '+15550003000', body: 'x' }))).toMatchObject({
      retryable: true,
      status: 429,
    });
  });
});

describe('Telnyx webhook signatures (Ed25519 over `${timestamp}|${body}`)', () => {
  const body = JSON.stringify({ data: { event_type: 'call.answered', payload: { call_control_id: 'v3:x' } } });

  it('accepts the genuine signature and refuses a wrong key, a tampered body or timestamp, and missing headers', () => {
    const pair = generateKeyPairSync('ed25519');
    const publicKey = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');
    const signature = sign(null, Buffer.from(`1700000000|${body}`), pair.privateKey).toString('base64');
    expect(verifyTelnyxSignature(body, signature, '1700000000', publicKey)).toBe(true);

    const other = generateKeyPairSync('ed25519');
    const otherKey = Buffer.from(other.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');
    expect(verifyTelnyxSignature(body, signature, '1700000000', otherKey)).toBe(false);
    expect(verifyTelnyxSignature(body.replace('answered', 'hangup'), signature, '1700000000', publicKey)).toBe(false);
    expect(verifyTelnyxSignature(body, signature, '1700000001', publicKey)).toBe(false);
    expect(verifyTelnyxSignature(body, undefined, '1700000000', publicKey)).toBe(false);
    expect(verifyTelnyxSignature(body, signature, undefined, publicKey)).toBe(false);
    expect(verifyTelnyxSignature(body, '', '1700000000', publicKey)).toBe(false);
    expect(verifyTelnyxSignature(body, signature.slice(0, 40), '1700000000', publicKey)).toBe(false);
    expect(verifyTelnyxSignature(body, signature, '1700000000', 'not-a-key')).toBe(false);
    expect(verifyTelnyxSignature(body, signature, '1700000000', '')).toBe(false);
  });

  it("verifies the fake's signed call events (independent implementation) and refuses a forger's", async () => {
    const { providerCallId } = await voice().dial(dialRequest());
    const before = receiver.received.length;
    expect(await fake.sendCallEvent(providerCallId, 'call.answered')).toBe(204);
    expect(await fake.sendCallEvent(providerCallId, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(204);
    const forger = generateKeyPairSync('ed25519');
    expect(await fake.sendCallEvent(providerCallId, 'call.hangup', {}, { privateKey: forger.privateKey })).toBe(403);

    const [answered, hangup] = receiver.received.slice(before);
    expect(answered!.headers['telnyx-timestamp']).toMatch(/^\d+$/);
    expect(callbacks.callIdOf(answered!)).toBe(providerCallId);
    expect(callbacks.read(answered!, false)).toEqual({ status: 'IN_PROGRESS' });
    expect(callbacks.read(hangup!, true)).toEqual({ status: 'ENDED', outcome: 'ANSWERED', durationSec: null });
    const payload = JSON.parse(hangup!.rawBody).data.payload;
    expect(Buffer.from(payload.client_state, 'base64').toString()).toBe(dialRequest().callId);

    // The same webhook with one byte changed, or checked with another account's key, fails.
    expect(
      callbacks.verify(
        { ...hangup!, rawBody: hangup!.rawBody.replace('normal_clearing', 'normal_clearinG') },
        { publicKey: fake.publicKey },
      ),
    ).toBe(false);
    const otherKey = Buffer.from(forger.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');
    expect(callbacks.verify(hangup!, { publicKey: otherKey })).toBe(false);
    const { 'telnyx-signature-ed25519': _dropped, ...unsigned } = hangup!.headers;
    expect(callbacks.verify({ ...hangup!, headers: unsigned }, { publicKey: fake.publicKey })).toBe(false);

    // A genuine webhook received more than five minutes from its signed time is a replay.
    const signedAt = Number(hangup!.headers['telnyx-timestamp']) * 1000;
    const receivedAt = (offsetSeconds: number) => ({ ...hangup!, receivedAt: new Date(signedAt + offsetSeconds * 1000) });
    expect(callbacks.verify(receivedAt(300), { publicKey: fake.publicKey })).toBe(true);
    expect(callbacks.verify(receivedAt(301), { publicKey: fake.publicKey })).toBe(false);
    expect(callbacks.verify(receivedAt(-301), { publicKey: fake.publicKey })).toBe(false);
  });

  it('names the signature header and what signs SMS webhooks', () => {
    expect(callbacks.signatureHeader).toBe('telnyx-signature-ed25519');
    expect(smsCallbacks.signatureHeader).toBe('telnyx-signature-ed25519');
    expect(smsCallbacks.signedWith).toBe('public key');
  });
});

describe('telnyxCallUpdate', () => {
  it.each([
    ['call.initiated', {}, false, { status: 'QUEUED' }],
    ['call.answered', {}, false, { status: 'IN_PROGRESS' }],
    ['call.hangup', { hangup_cause: 'normal_clearing' }, true, { status: 'ENDED', outcome: 'ANSWERED', durationSec: null }],
    ['call.hangup', { hangup_cause: 'time_limit' }, true, { status: 'ENDED', outcome: 'ANSWERED', durationSec: null }],
    ['call.hangup', { hangup_cause: 'normal_clearing' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: null }],
    ['call.hangup', { hangup_cause: 'user_busy' }, false, { status: 'ENDED', outcome: 'BUSY', durationSec: null }],
    ['call.hangup', { hangup_cause: 'timeout' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: null }],
    ['call.hangup', { hangup_cause: 'no_answer' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: null }],
    ['call.hangup', { hangup_cause: 'originator_cancel' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: null }],
    [
      'call.hangup',
      { hangup_cause: 'call_rejected', sip_hangup_cause: '603' },
      false,
      { status: 'ENDED', outcome: 'FAILED', durationSec: null, failureReason: 'Telnyx ended the call: call_rejected (SIP 603).' },
    ],
    [
      'call.hangup',
      { hangup_cause: 'unallocated_number' },
      false,
      { status: 'ENDED', outcome: 'FAILED', durationSec: null, failureReason: 'Telnyx ended the call: unallocated_number.' },
    ],
    [
      'call.hangup',
      { hangup_cause: 'not_found', sip_hangup_cause: '404' },
      false,
      { status: 'ENDED', outcome: 'FAILED', durationSec: null, failureReason: 'Telnyx ended the call: not_found (SIP 404).' },
    ],
    [
      'call.hangup',
      {},
      false,
      { status: 'ENDED', outcome: 'FAILED', durationSec: null, failureReason: 'Telnyx ended the call: unspecified.' },
    ],
    ['call.bridged', {}, false, null],
    ['streaming.started', {}, true, null],
    ['call.machine.detection.ended', {}, false, null],
  ] as const)('%s %o (answeredBefore=%s) → %o', (eventType, payload, answeredBefore, expected) => {
    expect(telnyxCallUpdate(eventType, payload, answeredBefore)).toEqual(expected);
  });

  it('refuses a body that is not a Telnyx event, saying why', () => {
    const webhook = (rawBody: string) => ({ url: 'https://x.test', headers: {}, rawBody, receivedAt: new Date() });
    expect(() => callbacks.read(webhook('CallStatus=completed'), false)).toThrow(/not a Telnyx event/);
    expect(() => callbacks.read(webhook('{"data":{"payload":{}}}'), false)).toThrow(/not a Telnyx event/);
    expect(callbacks.callIdOf(webhook('not json'))).toBeUndefined();
  });
});

describe('telnyxSmsUpdate', () => {
  const payload = (status: string, extra: Record<string, unknown> = {}) => ({
    id: 'msg-1',
    to: [{ phone_number: '+15550003000', status }],
    ...extra,
  });

  it.each([
    ['message.sent', 'queued', null],
    ['message.sent', 'sending', null],
    ['message.sent', 'sent', { providerMessageId: 'msg-1', status: 'SENT', failureReason: null }],
    ['message.finalized', 'delivered', { providerMessageId: 'msg-1', status: 'DELIVERED', failureReason: null }],
    ['message.finalized', 'delivery_unconfirmed', { providerMessageId: 'msg-1', status: 'SENT', failureReason: null }],
    [
      'message.finalized',
      'sending_failed',
      { providerMessageId: 'msg-1', status: 'FAILED', failureReason: 'Telnyx: the message was sending failed.' },
    ],
    ['message.received', 'delivered', null],
  ] as const)('%s with %s → %o', (eventType, status, expected) => {
    expect(telnyxSmsUpdate(eventType, payload(status))).toEqual(expected);
  });

  it("names Telnyx's delivery error", () => {
    expect(
      telnyxSmsUpdate('message.finalized', payload('delivery_failed', { errors: [{ code: '40001', title: 'Not routable' }] })),
    ).toEqual({
      providerMessageId: 'msg-1',
      status: 'FAILED',
      failureReason: 'Telnyx: the message was delivery failed: Not routable (error 40001).',
    });
  });
});
