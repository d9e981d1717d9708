import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../errors.ts';
import type { DialRequest } from '../types.ts';
import {
  connectTwilioTelephony,
  normaliseAnsweredBy,
  twilioCallUpdate,
  twilioSignature,
  twilioTelephony,
  verifyTwilioSignature,
} from './telephony.ts';
import { startFakeTwilio, type FakeTwilio } from './fake.ts';

const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`;
const AUTH_TOKEN = 'fake-auth-token-0123456789abcdef';
const MEDIA_STREAM_URL = 'wss://voice.callforge.test/media-stream';
const INVALID_NUMBER = '+15005550001';

let fake: FakeTwilio;
let receiver: {
  url: string;
  server: Server;
  received: Array<{ url: string; params: Record<string, string | string[]>; signature: string | undefined }>;
};

function dialRequest(overrides: Partial<DialRequest> = {}): DialRequest {
  return {
    callId: 'call_01',
    from: '+15550001000',
    to: '+15550002000',
    dialTimeoutSec: 30,
    statusCallbackUrl: `${receiver.url}/webhooks/twilio/status?callId=call_01`,
    mediaStreamUrl: MEDIA_STREAM_URL,
    mediaStreamToken: 'token_01',
    ...overrides,
  };
}

function provider(overrides: { authToken?: string; baseUrl?: string; timeoutMs?: number } = {}) {
  return connectTwilioTelephony({
    credentials: { accountSid: ACCOUNT_SID, authToken: overrides.authToken ?? AUTH_TOKEN },
    settings: { TWILIO_API_URL: overrides.baseUrl ?? fake.url },
    publicUrl: 'https://callforge.test',
    timeoutMs: overrides.timeoutMs ?? 10_000,
  });
}

/** A refusal that says the number can never be called, so the attempt is not retried. */
const isPermanent = (error: unknown) => error instanceof ProviderError && error.permanent;

function formToParams(form: URLSearchParams): Record<string, string | string[]> {
  const params: Record<string, string | string[]> = {};
  for (const name of new Set(form.keys())) {
    const values = form.getAll(name);
    params[name] = values.length === 1 ? (values[0] as string) : values;
  }
  return params;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

beforeAll(async () => {
  fake = await startFakeTwilio({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, invalidNumbers: [INVALID_NUMBER] });

  // A tiny status-callback endpoint that checks X-Twilio-Signature with our implementation.
  const received: typeof receiver.received = [];
  let origin = '';
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const url = `${origin}${req.url ?? '/'}`;
      const params = formToParams(new URLSearchParams(body));
      const header = req.headers['x-twilio-signature'];
      const signature = typeof header === 'string' ? header : undefined;
      received.push({ url, params, signature });
      res.writeHead(verifyTwilioSignature(url, params, signature, AUTH_TOKEN) ? 204 : 403).end();
    });
  });
  origin = await listen(server);
  receiver = { url: origin, server, received };
});

afterAll(async () => {
  await fake?.close();
  if (receiver) await closeServer(receiver.server);
});

describe('createTwilioTelephony().dial', () => {
  it('POSTs exactly the Twilio form fields with Basic auth and returns the call sid', async () => {
    const before = fake.requests.length;
    const result = await provider().dial(dialRequest());

    expect(result.providerCallId).toMatch(/^CA[0-9a-f]{32}$/);
    const request = fake.requests[before];
    expect(request).toBeDefined();
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Calls.json`);
    expect(request?.authorized).toBe(true);

    const form = request!.form;
    expect([...new Set(form.keys())].sort()).toEqual(
      ['From', 'StatusCallback', 'StatusCallbackEvent', 'StatusCallbackMethod', 'Timeout', 'To', 'Twiml'].sort(),
    );
    expect(form.getAll('To')).toEqual(['+15550002000']);
    expect(form.getAll('From')).toEqual(['+15550001000']);
    expect(form.getAll('Timeout')).toEqual(['30']);
    expect(form.getAll('StatusCallback')).toEqual([`${receiver.url}/webhooks/twilio/status?callId=call_01`]);
    expect(form.getAll('StatusCallbackMethod')).toEqual(['POST']);
    expect(form.getAll('StatusCallbackEvent')).toEqual(['initiated', 'ringing', 'answered', 'completed']);
    expect(form.getAll('Twiml')).toEqual([
      `<Response><Connect><Stream url="${MEDIA_STREAM_URL}"><Parameter name="callId" value="call_01"/><Parameter name="token" value="token_01"/></Stream></Connect></Response>`,
    ]);

    const call = fake.calls.get(result.providerCallId);
    expect(call).toMatchObject({ to: '+15550002000', from: '+15550001000', timeout: 30, status: 'queued' });
  });

  it.each([10, 300])('carries Timeout=%i', async (dialTimeoutSec) => {
    const { providerCallId } = await provider().dial(dialRequest({ dialTimeoutSec }));
    expect(fake.requests.at(-1)?.form.get('Timeout')).toBe(String(dialTimeoutSec));
    expect(fake.calls.get(providerCallId)?.timeout).toBe(dialTimeoutSec);
  });

  it('XML-escapes the stream URL and call id inside the TwiML', async () => {
    await provider().dial(dialRequest({ callId: `c<1>&'x'`, mediaStreamUrl: 'wss://voice.test/stream?a=1&b="2"' }));
    expect(fake.requests.at(-1)?.form.get('Twiml')).toBe(
      '<Response><Connect><Stream url="wss://voice.test/stream?a=1&amp;b=&quot;2&quot;">' +
        '<Parameter name="callId" value="c&lt;1&gt;&amp;&apos;x&apos;"/><Parameter name="token" value="token_01"/></Stream></Connect></Response>',
    );
  });

  it("throws a permanent ProviderError with Twilio's message for an invalid number", async () => {
    const error = await provider()
      .dial(dialRequest({ to: INVALID_NUMBER }))
      .catch((e: unknown) => e);
    expect(isPermanent(error)).toBe(true);
    expect((error as Error).message).toBe(`The 'To' number ${INVALID_NUMBER} is not a valid phone number.`);
  });

  it.each([21214, 21215, 21216, 21217, 13223, 13224, 21610])('treats Twilio error %i as permanent', async (code) => {
    fake.failNext(400, { code, message: `refused ${code}`, more_info: `https://www.twilio.com/docs/errors/${code}`, status: 400 });
    await expect(provider().dial(dialRequest())).rejects.toMatchObject({ permanent: true });
  });

  it('throws a retryable, not permanent ProviderError for a 500', async () => {
    fake.failNext(500, {
      code: 20500,
      message: 'Internal Server Error',
      more_info: 'https://www.twilio.com/docs/errors/20500',
      status: 500,
    });
    const error = await provider()
      .dial(dialRequest())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(isPermanent(error)).toBe(false);
    expect((error as Error).message).toContain('500');
    expect((error as Error).message).toContain('Internal Server Error');
  });

  it('throws a plain Error for a 401 (wrong credentials)', async () => {
    const error = await provider({ authToken: 'wrong-token' })
      .dial(dialRequest())
      .catch((e: unknown) => e);
    expect(fake.requests.at(-1)?.authorized).toBe(false);
    expect(error).toBeInstanceOf(Error);
    expect(isPermanent(error)).toBe(false);
    expect((error as Error).message).toContain('401');
    expect((error as Error).message).toContain('Authenticate');
    expect((error as Error).message).not.toContain('wrong-token');
  });

  it('throws a plain Error for other 4xx codes and for a permanent code on a 5xx', async () => {
    fake.failNext(429, { code: 20429, message: 'Too Many Requests', more_info: 'https://www.twilio.com/docs/errors/20429', status: 429 });
    const rateLimited = await provider()
      .dial(dialRequest())
      .catch((e: unknown) => e);
    expect(isPermanent(rateLimited)).toBe(false);
    expect((rateLimited as Error).message).toMatch(/429.*Too Many Requests/);

    fake.failNext(503, { code: 21211, message: 'odd', status: 503 });
    await expect(provider().dial(dialRequest())).rejects.toMatchObject({ permanent: false });
  });

  it('throws a plain Error for a non-JSON error body', async () => {
    const server = createServer((_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>'));
    const url = await listen(server);
    try {
      const error = await provider({ baseUrl: url })
        .dial(dialRequest())
        .catch((e: unknown) => e);
      expect(isPermanent(error)).toBe(false);
      expect((error as Error).message).toMatch(/502.*Bad Gateway/);
    } finally {
      await closeServer(server);
    }
  });

  it('throws a plain Error within timeoutMs when Twilio never answers', async () => {
    const server = createServer(() => {
      /* never answers */
    });
    const url = await listen(server);
    try {
      const started = Date.now();
      const error = await provider({ baseUrl: url, timeoutMs: 100 })
        .dial(dialRequest())
        .catch((e: unknown) => e);
      const elapsed = Date.now() - started;
      expect(error).toBeInstanceOf(Error);
      expect(isPermanent(error)).toBe(false);
      expect((error as Error).message).toMatch(/timed out/);
      expect(elapsed).toBeLessThan(2_000);
    } finally {
      await closeServer(server);
    }
  });

  it('throws a plain Error when the connection is refused', async () => {
    const server = createServer();
    const url = await listen(server);
    await closeServer(server);
    const error = await provider({ baseUrl: url })
      .dial(dialRequest())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(isPermanent(error)).toBe(false);
  });
});

describe('createTwilioTelephony().hangup', () => {
  it('POSTs Status=completed to the call resource', async () => {
    const telephony = provider();
    const { providerCallId } = await telephony.dial(dialRequest());
    await telephony.hangup(providerCallId);

    const request = fake.requests.at(-1);
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/${providerCallId}.json`);
    expect(request?.authorized).toBe(true);
    expect([...request!.form.entries()]).toEqual([['Status', 'completed']]);
    expect(fake.calls.get(providerCallId)?.status).toBe('completed');
  });

  it('ignores 404 (the call is already gone)', async () => {
    await expect(provider().hangup(`CA${'f'.repeat(32)}`)).resolves.toBeUndefined();
    expect(fake.requests.at(-1)?.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/CA${'f'.repeat(32)}.json`);
  });

  it('throws on other failures', async () => {
    fake.failNext(500, { code: 20500, message: 'Internal Server Error', status: 500 });
    await expect(provider().hangup(`CA${'e'.repeat(32)}`)).rejects.toThrow(/500.*Internal Server Error/);
  });
});

describe('answering-machine detection', () => {
  const amdUrl = () => `${receiver.url}/webhooks/twilio/answered-by`;

  it('asks for asynchronous DetectMessageEnd with our callback only when the dial request says so', async () => {
    const { providerCallId } = await provider().dial(dialRequest({ answeringMachineDetection: { callbackUrl: amdUrl() } }));
    const form = fake.requests.at(-1)!.form;
    expect(form.getAll('MachineDetection')).toEqual(['DetectMessageEnd']);
    expect(form.getAll('AsyncAmd')).toEqual(['true']);
    expect(form.getAll('AsyncAmdStatusCallback')).toEqual([amdUrl()]);
    expect(form.getAll('AsyncAmdStatusCallbackMethod')).toEqual(['POST']);
    expect(fake.calls.get(providerCallId)?.machineDetection).toEqual({
      mode: 'DetectMessageEnd',
      asyncAmd: 'true',
      statusCallback: amdUrl(),
      statusCallbackMethod: 'POST',
    });
    const plain = await provider().dial(dialRequest());
    expect([...fake.requests.at(-1)!.form.keys()].filter((name) => /Amd|MachineDetection/.test(name))).toEqual([]);
    expect(fake.calls.get(plain.providerCallId)?.machineDetection).toBeNull();
  });

  it("reads the fake's signed verdict: AnsweredBy normalised, MachineDetectionDuration in milliseconds", async () => {
    const { providerCallId } = await provider().dial(dialRequest({ answeringMachineDetection: { callbackUrl: amdUrl() } }));
    expect(await fake.sendAnsweredBy(providerCallId, 'machine_end_beep', { detectionMs: 5120 })).toBe(204);
    const verdict = receiver.received.at(-1)!;
    expect(verdict.url).toBe(amdUrl());
    expect(verdict.params).toEqual({
      AccountSid: ACCOUNT_SID,
      CallSid: providerCallId,
      AnsweredBy: 'machine_end_beep',
      MachineDetectionDuration: '5120',
    });
    const webhook = {
      url: verdict.url,
      headers: {},
      rawBody: new URLSearchParams(verdict.params as Record<string, string>).toString(),
      receivedAt: new Date(),
    };
    expect(twilioTelephony.callbacks!.callIdOf(webhook)).toBe(providerCallId);
    expect(twilioTelephony.callbacks!.readAnsweredBy!(webhook)).toEqual({ answeredBy: 'machine', detectionMs: 5120 });
    // Signed with another tenant's token, it does not verify.
    expect(await fake.sendAnsweredBy(providerCallId, 'human', { authToken: 'another-tenants-token' })).toBe(403);
  });

  it('normalises every AnsweredBy Twilio sends into human, machine, fax or unknown, and refuses others', () => {
    const normalised = ['human', 'machine_start', 'machine_end_beep', 'machine_end_silence', 'machine_end_other', 'fax', 'unknown'].map(
      normaliseAnsweredBy,
    );
    expect(normalised).toEqual(['human', 'machine', 'machine', 'machine', 'machine', 'fax', 'unknown']);
    const webhook = { url: amdUrl(), headers: {}, rawBody: 'CallSid=CA1&AnsweredBy=robot', receivedAt: new Date() };
    expect(() => twilioTelephony.callbacks!.readAnsweredBy!(webhook)).toThrow(
      'AnsweredBy "robot" is not a Twilio answering-machine verdict.',
    );
  });

  it('leaves a voicemail by updating the live call with XML-escaped TwiML that speaks and hangs up', async () => {
    const telephony = provider();
    const { providerCallId } = await telephony.dial(dialRequest());
    await telephony.speakAndHangUp!(providerCallId, { text: 'Hi Ana & co, call <us> "back"', language: 'es-ES' });
    const request = fake.requests.at(-1)!;
    expect(request.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/${providerCallId}.json`);
    expect([...request.form.entries()]).toEqual([
      ['Twiml', '<Response><Say language="es-ES">Hi Ana &amp; co, call &lt;us&gt; &quot;back&quot;</Say><Hangup/></Response>'],
    ]);
    expect(fake.calls.get(providerCallId)?.twimlUpdates).toHaveLength(1);
    // A call already over answers 21220: nothing left to say, not an error.
    await telephony.hangup(providerCallId);
    await expect(telephony.speakAndHangUp!(providerCallId, { text: 'Too late', language: 'en-US' })).resolves.toBeUndefined();
    expect(fake.calls.get(providerCallId)?.twimlUpdates).toHaveLength(1);
  });
});

describe('twilioSignature / verifyTwilioSignature', () => {
  // Twilio's worked example (https://www.twilio.com/docs/usage/security#validating-requests), as
  // also used by Twilio's helper libraries' tests: this URL, token and params sign to
  // 0/KCTR6DLpKmkAf8muzZqo1nDgQ=. (The brief suggested GHRGxWtZ6QG5IyWg2QU1/00bSkc=; the scheme,
  // computed independently, does not give that for any URL form tried, so it is not used.)
  const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
  const token = '12345';
  const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
  const expected = '0/KCTR6DLpKmkAf8muzZqo1nDgQ=';

  it("matches Twilio's published example", () => {
    expect(twilioSignature(url, params, token)).toBe(expected);
    // Parameter order in the object does not matter: names are sorted.
    const reversed = Object.fromEntries(Object.entries(params).reverse());
    expect(twilioSignature(url, reversed, token)).toBe(expected);
  });

  it('appends repeated names once per value, in order', () => {
    // url + "A1" + "B2" + "B3" is the same string as url + "A" + "1B2B3".
    expect(twilioSignature('https://x.test/cb', { B: ['2', '3'], A: '1' }, 'k')).toBe(
      twilioSignature('https://x.test/cb', { A: '1B2B3' }, 'k'),
    );
    expect(twilioSignature('https://x.test/cb', { A: '1', B: ['2', '3'] }, 'k')).not.toBe(
      twilioSignature('https://x.test/cb', { A: '1', B: ['3', '2'] }, 'k'),
    );
  });

  it('accepts the genuine signature and rejects tampering, a missing header and a wrong token', () => {
    expect(verifyTwilioSignature(url, params, expected, token)).toBe(true);
    expect(verifyTwilioSignature(url, { ...params, Digits: '9999' }, expected, token)).toBe(false);
    expect(verifyTwilioSignature(url, { ...params, Extra: '' }, expected, token)).toBe(false);
    expect(verifyTwilioSignature('https://mycompany.com/myapp.php?foo=1&bar=3', params, expected, token)).toBe(false);
    expect(verifyTwilioSignature(url, params, undefined, token)).toBe(false);
    expect(verifyTwilioSignature(url, params, '', token)).toBe(false);
    expect(verifyTwilioSignature(url, params, expected.slice(0, -1), token)).toBe(false);
    expect(verifyTwilioSignature(url, params, expected, '54321')).toBe(false);
  });

  it("verifies the fake's signed status callbacks (independent implementation)", async () => {
    const { providerCallId } = await provider().dial(dialRequest());
    const before = receiver.received.length;

    expect(await fake.sendStatus(providerCallId, 'ringing')).toBe(204);
    expect(await fake.sendStatus(providerCallId, 'in-progress')).toBe(204);
    expect(await fake.sendStatus(providerCallId, 'completed', { CallDuration: '42', AnsweredBy: 'human' })).toBe(204);

    const callbacks = receiver.received.slice(before);
    expect(callbacks.map((c) => c.params.CallStatus)).toEqual(['ringing', 'in-progress', 'completed']);
    const last = callbacks.at(-1)!;
    expect(last.url).toBe(`${receiver.url}/webhooks/twilio/status?callId=call_01`);
    expect(last.params).toMatchObject({
      CallSid: providerCallId,
      AccountSid: ACCOUNT_SID,
      To: '+15550002000',
      From: '+15550001000',
      CallDuration: '42',
    });
    expect(twilioCallUpdate(last.params as Record<string, string>, true)).toEqual({
      status: 'ENDED',
      outcome: 'ANSWERED',
      durationSec: 42,
    });

    // The same callback fails verification under another token or with a changed param.
    expect(verifyTwilioSignature(last.url, last.params, last.signature, 'other-token')).toBe(false);
    expect(verifyTwilioSignature(last.url, { ...last.params, CallDuration: '43' }, last.signature, AUTH_TOKEN)).toBe(false);
  });

  it('rejects a callback signed with another account token', async () => {
    const impostor = await startFakeTwilio({ accountSid: ACCOUNT_SID, authToken: 'not-our-token' });
    try {
      const telephony = provider({ authToken: 'not-our-token', baseUrl: impostor.url });
      const { providerCallId } = await telephony.dial(dialRequest());
      expect(await impostor.sendStatus(providerCallId, 'completed', { CallDuration: '5' })).toBe(403);
    } finally {
      await impostor.close();
    }
  });
});

describe('fake Twilio wire checks', () => {
  it('answers missing required fields with a Twilio 400 error', async () => {
    const response = await fetch(`${fake.url}/2010-04-01/Accounts/${ACCOUNT_SID}/Calls.json`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ From: '+15550001000', Timeout: '30' }).toString(),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 21201, status: 400 });
  });

  it('answers bad credentials with Twilio 20003', async () => {
    const response = await fetch(`${fake.url}/2010-04-01/Accounts/${ACCOUNT_SID}/Calls.json`, { method: 'POST' });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      code: 20003,
      message: 'Authenticate',
      more_info: 'https://www.twilio.com/docs/errors/20003',
      status: 401,
    });
  });
});

describe('twilioCallUpdate', () => {
  it.each([
    [{ CallStatus: 'queued' }, false, { status: 'QUEUED' }],
    [{ CallStatus: 'initiated' }, false, { status: 'QUEUED' }],
    [{ CallStatus: 'ringing' }, false, { status: 'RINGING' }],
    [{ CallStatus: 'in-progress' }, false, { status: 'IN_PROGRESS' }],
    [{ CallStatus: 'completed', CallDuration: '17' }, false, { status: 'ENDED', outcome: 'ANSWERED', durationSec: 17 }],
    [{ CallStatus: 'completed', CallDuration: '0' }, true, { status: 'ENDED', outcome: 'ANSWERED', durationSec: 0 }],
    [{ CallStatus: 'completed' }, true, { status: 'ENDED', outcome: 'ANSWERED', durationSec: null }],
    [{ CallStatus: 'completed', CallDuration: '0' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: 0 }],
    [{ CallStatus: 'completed' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: null }],
    [{ CallStatus: 'busy', CallDuration: '0' }, false, { status: 'ENDED', outcome: 'BUSY', durationSec: 0 }],
    [{ CallStatus: 'no-answer', CallDuration: '0' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: 0 }],
    [{ CallStatus: 'canceled' }, false, { status: 'ENDED', outcome: 'UNANSWERED', durationSec: null }],
    [
      { CallStatus: 'failed' },
      false,
      { status: 'ENDED', outcome: 'FAILED', durationSec: null, failureReason: 'Twilio could not connect the call.' },
    ],
  ] as const)('%o (answeredBefore=%s) → %o', (params, answeredBefore, expected) => {
    expect(twilioCallUpdate(params, answeredBefore)).toEqual(expected);
  });

  it('throws on an unknown or missing CallStatus', () => {
    expect(() => twilioCallUpdate({ CallStatus: 'exploded' }, false)).toThrow(/exploded/);
    expect(() => twilioCallUpdate({ CallStatus: 'COMPLETED' }, false)).toThrow();
    expect(() => twilioCallUpdate({}, false)).toThrow(/CallStatus/);
  });
});
