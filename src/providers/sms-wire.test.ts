import { createServer } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMsg91Sms, type Msg91SmsOptions } from './msg91/sms.ts';
import { createTwilioSms, type TwilioSmsOptions } from './twilio/sms.ts';
import type { SmsSend } from './types.ts';
import { startFakeMsg91, type FakeMsg91 } from './msg91/fake.ts';
import { startFakeTwilio, type FakeTwilio } from './twilio/fake.ts';
import { listenOnLoopback } from './fake-server.ts';
import { failure } from './expect-failure.ts';

const ACCOUNT_SID = `AC${'89abcdef01234567'.repeat(2)}`;
const AUTH_TOKEN = 'fake-sms-auth-token-0123456789abcdef';
const INVALID_NUMBER = '+15005550001';
const MSG91_AUTH_KEY = '412345AbCdEfGhIjKlMnOp6543210';
const DLT_TEMPLATE_ID = '1107161234567890123';

let twilio: FakeTwilio;
let msg91: FakeMsg91;

/** Runs `body` against a server that accepts connections and never answers. */
async function withSilentServer(body: (url: string) => Promise<void>): Promise<void> {
  const server = createServer(() => {
    /* never answers */
  });
  const { url, close } = await listenOnLoopback(server);
  try {
    await body(url);
  } finally {
    await close();
  }
}

beforeAll(async () => {
  twilio = await startFakeTwilio({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, invalidNumbers: [INVALID_NUMBER] });
  msg91 = await startFakeMsg91({ authKey: MSG91_AUTH_KEY });
});

afterAll(async () => {
  await twilio.close();
  await msg91.close();
});

beforeEach(() => {
  twilio.requests.length = 0;
  msg91.requests.length = 0;
});

describe('createTwilioSms().send', () => {
  const sms = (overrides: Partial<TwilioSmsOptions> = {}) =>
    createTwilioSms({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, baseUrl: twilio.url, ...overrides });
  const message = (overrides: Partial<SmsSend> = {}): SmsSend => ({
    from: '+15550001000',
    to: '+15550002000',
    body: 'Your order ORD-1042 has shipped.',
    statusCallbackUrl: 'https://callforge.test/webhooks/twilio/sms-status?messageId=msg_01',
    ...overrides,
  });

  it('POSTs To, From, Body and StatusCallback to Messages.json with Basic auth', async () => {
    const result = await sms().send(message({ dltSenderId: 'CALLFG', dltTemplateId: DLT_TEMPLATE_ID }));

    expect(twilio.requests).toHaveLength(1);
    const request = twilio.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`);
    expect(request.authorized).toBe(true);
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`);
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    // DLT ids are not Twilio parameters.
    expect([...request.form.entries()]).toEqual([
      ['To', '+15550002000'],
      ['From', '+15550001000'],
      ['Body', 'Your order ORD-1042 has shipped.'],
      ['StatusCallback', 'https://callforge.test/webhooks/twilio/sms-status?messageId=msg_01'],
    ]);

    expect(result.providerMessageId).toMatch(/^SM[0-9a-f]{32}$/);
    expect(result.status).toBe('queued');
    expect(twilio.messages.get(result.providerMessageId)).toMatchObject({
      to: '+15550002000',
      from: '+15550001000',
      body: 'Your order ORD-1042 has shipped.',
      statusCallback: 'https://callforge.test/webhooks/twilio/sms-status?messageId=msg_01',
      numSegments: 1,
    });
  });

  it('sends no StatusCallback when none is given', async () => {
    await sms().send(message({ statusCallbackUrl: undefined }));
    expect([...twilio.requests[0]!.form.keys()]).toEqual(['To', 'From', 'Body']);
  });

  it.each([
    [{ to: INVALID_NUMBER }, 21211, `Invalid 'To' Phone Number: ${INVALID_NUMBER}`],
    [{ to: '5550002000' }, 21211, "Invalid 'To' Phone Number: 5550002000"],
    [{ body: '' }, 21602, 'Message body is required.'],
    [{ to: '' }, 21604, "A 'To' phone number is required."],
  ] as const)('maps Twilio 400 %o to a non-retryable ProviderError with code %i', async (overrides, code, text) => {
    const error = await failure(sms().send(message(overrides)));
    expect(error.message).toBe(`Twilio SMS: ${text} (Twilio error ${code})`);
    expect(error).toMatchObject({ status: 400, code, retryable: false });
  });

  it('maps bad credentials (20003) to a non-retryable error without leaking the token', async () => {
    const error = await failure(sms({ authToken: 'wrong-token' }).send(message()));
    expect(twilio.requests[0]!.authorized).toBe(false);
    expect(error).toMatchObject({ status: 401, code: 20003, retryable: false });
    expect(error.message).toBe('Twilio SMS: Authenticate (Twilio error 20003)');
    expect(error.message).not.toContain('wrong-token');
  });

  it('treats 5xx and 429 as retryable', async () => {
    twilio.failNext(500, {
      code: 20500,
      message: 'Internal Server Error',
      more_info: 'https://www.twilio.com/docs/errors/20500',
      status: 500,
    });
    expect(await failure(sms().send(message()))).toMatchObject({
      status: 500,
      code: 20500,
      retryable: true,
      message: 'Twilio SMS: Internal Server Error (Twilio error 20500)',
    });
    twilio.failNext(429, { code: 20429, message: 'Too Many Requests', more_info: 'https://www.twilio.com/docs/errors/20429', status: 429 });
    expect(await failure(sms().send(message()))).toMatchObject({ status: 429, code: 20429, retryable: true });
  });

  it('times out within timeoutMs as a retryable error', async () => {
    await withSilentServer(async (url) => {
      const started = Date.now();
      const error = await failure(sms({ baseUrl: url, timeoutMs: 100 }).send(message()));
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error).toMatchObject({ retryable: true, status: undefined, message: 'Twilio SMS: request timed out after 100 ms' });
    });
  });

  it('counts segments in the fake like Twilio does', async () => {
    const { providerMessageId } = await sms().send(message({ body: 'न'.repeat(71) }));
    expect(twilio.messages.get(providerMessageId)?.numSegments).toBe(2);
  });
});

describe('createMsg91Sms().send', () => {
  const sms = (overrides: Partial<Msg91SmsOptions> = {}) => createMsg91Sms({ authKey: MSG91_AUTH_KEY, baseUrl: msg91.url, ...overrides });
  const message = (overrides: Partial<SmsSend> = {}): SmsSend => ({
    from: '+919800000001',
    to: '+919876543210',
    body: 'Dear Asha, your order ORD-1042 has shipped. - Callforge',
    dltSenderId: 'CALLFG',
    dltTemplateId: DLT_TEMPLATE_ID,
    statusCallbackUrl: 'https://callforge.test/ignored',
    ...overrides,
  });

  it('GETs /api/v2/sendsms with the DLT template id, sender, digits-only mobile, route and country', async () => {
    const result = await sms().send(message());

    expect(msg91.requests).toHaveLength(1);
    const request = msg91.requests[0]!;
    expect(request.method).toBe('GET');
    expect(request.path).toBe('/api/v2/sendsms');
    expect(request.query).toEqual({
      authkey: MSG91_AUTH_KEY,
      mobiles: '919876543210',
      message: 'Dear Asha, your order ORD-1042 has shipped. - Callforge',
      sender: 'CALLFG',
      route: '4',
      country: '0',
      DLT_TE_ID: DLT_TEMPLATE_ID,
      response: 'json',
    });

    expect(result).toEqual({ providerMessageId: expect.stringMatching(/^[0-9a-f]{24}$/), status: 'queued' });
    expect(msg91.sent.at(-1)).toEqual({
      requestId: result.providerMessageId,
      mobiles: ['919876543210'],
      message: 'Dear Asha, your order ORD-1042 has shipped. - Callforge',
      sender: 'CALLFG',
      route: '4',
      country: '0',
      unicode: false,
      dltTemplateId: DLT_TEMPLATE_ID,
    });
  });

  it('sets unicode=1 for text that needs UCS-2, and uses the configured route', async () => {
    await sms({ route: '1' }).send(message({ body: 'नमस्ते आशा, आपका ऑर्डर ORD-1042 भेज दिया गया है।' }));
    expect(msg91.requests[0]!.query).toMatchObject({ unicode: '1', route: '1', message: 'नमस्ते आशा, आपका ऑर्डर ORD-1042 भेज दिया गया है।' });
    expect(msg91.sent.at(-1)?.unicode).toBe(true);

    await sms().send(message({ body: 'Price: €5 {promo}' }));
    expect(msg91.requests[1]!.query).not.toHaveProperty('unicode');
  });

  it('falls back to `from` as the sender when there is no DLT sender id', async () => {
    await sms().send(message({ from: 'CFORGE', dltSenderId: null }));
    expect(msg91.requests[0]!.query.sender).toBe('CFORGE');
  });

  it('refuses a message without a DLT template id before any request', async () => {
    for (const dltTemplateId of [undefined, null, '', '  ']) {
      const error = await failure(sms().send(message({ dltTemplateId })));
      expect(error.message).toMatch(/DLT template id is required for MSG91/);
      expect(error.retryable).toBe(false);
      expect(error.status).toBeUndefined();
    }
    expect(msg91.requests).toHaveLength(0);
  });

  it("maps a type:error answer on HTTP 200 to a non-retryable ProviderError with MSG91's message and code", async () => {
    const badKey = await failure(sms({ authKey: 'wrong-auth-key' }).send(message()));
    expect(badKey).toMatchObject({
      status: 200,
      code: '207',
      retryable: false,
      message: 'MSG91: Invalid authentication key (MSG91 error 207)',
    });
    expect(badKey.message).not.toContain('wrong-auth-key');

    // A phone number is no DLT header.
    const badSender = await failure(sms().send(message({ dltSenderId: undefined })));
    expect(badSender).toMatchObject({ status: 200, code: '203', retryable: false, message: 'MSG91: Invalid sender ID (MSG91 error 203)' });

    const badMobile = await failure(sms().send(message({ to: '+91123' })));
    expect(badMobile).toMatchObject({ code: '202', retryable: false });

    msg91.failNext(200, { type: 'error', message: 'Insufficient balance to send SMS', code: '301' });
    expect(await failure(sms().send(message()))).toMatchObject({
      code: '301',
      retryable: false,
      message: 'MSG91: Insufficient balance to send SMS (MSG91 error 301)',
    });
  });

  it("treats 5xx, 429 and MSG91's system errors as retryable", async () => {
    msg91.failNext(502, { type: 'error', message: 'Bad gateway' });
    expect(await failure(sms().send(message()))).toMatchObject({ status: 502, retryable: true, message: 'MSG91: Bad gateway' });
    msg91.failNext(429, { type: 'error', message: 'Too many requests', code: '429' });
    expect(await failure(sms().send(message()))).toMatchObject({ status: 429, retryable: true });
    msg91.failNext(200, { type: 'error', message: 'Internal error.Please contact support for details', code: '601' });
    expect(await failure(sms().send(message()))).toMatchObject({ status: 200, code: '601', retryable: true });
  });

  it('reports an answer in neither shape', async () => {
    const server = createServer((_req, res) => res.writeHead(503, { 'content-type': 'text/html' }).end('<html>Service Unavailable</html>'));
    const { url, close } = await listenOnLoopback(server);
    try {
      const error = await failure(sms({ baseUrl: url }).send(message()));
      expect(error.message).toMatch(/^MSG91: unexpected answer: HTTP 503: .*Service Unavailable/);
      expect(error.retryable).toBe(true);
    } finally {
      await close();
    }
  });

  it('times out within timeoutMs as a retryable error, without the auth key in the message', async () => {
    await withSilentServer(async (url) => {
      const started = Date.now();
      const error = await failure(sms({ baseUrl: url, timeoutMs: 100 }).send(message()));
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error).toMatchObject({ retryable: true, status: undefined, message: 'MSG91: request timed out after 100 ms' });
      expect(error.message).not.toContain(MSG91_AUTH_KEY);
    });
  });

  it('treats a refused connection as retryable', async () => {
    const server = createServer();
    const { url, close } = await listenOnLoopback(server);
    await close();
    const error = await failure(sms({ baseUrl: url }).send(message()));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/^MSG91: request failed: /);
    expect(error.message).not.toContain(MSG91_AUTH_KEY);
  });
});

describe('fake MSG91 wire checks', () => {
  it('answers without response=json in plain text, as MSG91 does', async () => {
    const query = new URLSearchParams({ authkey: MSG91_AUTH_KEY, mobiles: '919876543210', message: 'hi', sender: 'CALLFG', route: '4' });
    const response = await fetch(`${msg91.url}/api/v2/sendsms?${query.toString()}`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/^[0-9a-f]{24}$/);

    const missing = await fetch(`${msg91.url}/api/v2/sendsms?response=json`);
    expect(await missing.json()).toEqual({ type: 'error', message: 'Missing Authentication Key', code: '106' });
  });
});
