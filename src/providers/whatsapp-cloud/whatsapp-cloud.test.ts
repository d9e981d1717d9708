import { createServer } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createWhatsAppCloud, verifyWhatsAppSignature, whatsappSignature, type WhatsAppCloudOptions } from './cloud-api.ts';
import type { WhatsAppSenderNumber, WhatsAppTemplateSend } from '../types.ts';
import { signedWhatsAppWebhook, startFakeWhatsApp, statusWebhookPayload, type FakeWhatsApp } from './fake.ts';
import { listenOnLoopback } from '../fake-server.ts';
import { failure } from '../expect-failure.ts';

const ACCESS_TOKEN = 'EAAG-fake-system-user-token-0123456789';
const WABA_ID = '102290129340398';
const PHONE_NUMBER_ID = '106540352242922';
const NOT_ALLOWED = '15550009999';

const NUMBERS: WhatsAppSenderNumber[] = [
  { id: PHONE_NUMBER_ID, displayPhoneNumber: '+1 555-000-1234', verifiedName: 'Callforge Demo', qualityRating: 'GREEN' },
  { id: '106540352242923', displayPhoneNumber: '+91 98765 43210', verifiedName: 'Callforge India', qualityRating: 'YELLOW' },
  { id: '106540352242924', displayPhoneNumber: '+44 7700 900123', verifiedName: 'Callforge UK', qualityRating: 'RED' },
  { id: '106540352242925', displayPhoneNumber: '+49 1512 3456789', verifiedName: 'Callforge DE', qualityRating: 'UNKNOWN' },
  { id: '106540352242926', displayPhoneNumber: '+61 412 345 678', verifiedName: 'Callforge AU', qualityRating: 'GREEN' },
];

let fake: FakeWhatsApp;

function cloud(overrides: Partial<WhatsAppCloudOptions> = {}) {
  return createWhatsAppCloud({ accessToken: ACCESS_TOKEN, baseUrl: fake.url, ...overrides });
}

function templateSend(overrides: Partial<WhatsAppTemplateSend> = {}): WhatsAppTemplateSend {
  return {
    phoneNumberId: PHONE_NUMBER_ID,
    to: '+15550002000',
    templateName: 'order_shipped',
    languageCode: 'en_US',
    bodyParameters: ['Asha', 'ORD-1042'],
    ...overrides,
  };
}

beforeAll(async () => {
  fake = await startFakeWhatsApp({
    accessToken: ACCESS_TOKEN,
    businessAccountId: WABA_ID,
    phoneNumbers: NUMBERS,
    disallowedRecipients: [NOT_ALLOWED],
  });
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  fake.requests.length = 0;
});

describe('createWhatsAppCloud().sendText', () => {
  it('POSTs a free-text message with our id to echo back, and reports the message id', async () => {
    const { providerMessageId } = await cloud().sendText({
      phoneNumberId: PHONE_NUMBER_ID,
      to: '+15550002000',
      body: 'Your booking: Tue 10:00.',
      callbackData: 'msg-1',
    });
    expect(fake.requests[0]!.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '15550002000',
      type: 'text',
      text: { preview_url: false, body: 'Your booking: Tue 10:00.' },
      biz_opaque_callback_data: 'msg-1',
    });
    expect(fake.messages.at(-1)).toMatchObject({ id: providerMessageId, text: 'Your booking: Tue 10:00.', templateName: null });
  });

  it('refuses an empty body before asking Graph', async () => {
    await expect(cloud().sendText({ phoneNumberId: PHONE_NUMBER_ID, to: '+15550002000', body: ' ' })).rejects.toThrow(/body/);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('createWhatsAppCloud().sendTemplate', () => {
  it('POSTs the template message to /{version}/{phoneNumberId}/messages with the bearer token', async () => {
    const { providerMessageId } = await cloud().sendTemplate(templateSend());

    expect(fake.requests).toHaveLength(1);
    const request = fake.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe(`/v21.0/${PHONE_NUMBER_ID}/messages`);
    expect(request.query).toEqual({});
    expect(request.headers.authorization).toBe(`Bearer ${ACCESS_TOKEN}`);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '15550002000',
      type: 'template',
      template: {
        name: 'order_shipped',
        language: { code: 'en_US' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Asha' },
              { type: 'text', text: 'ORD-1042' },
            ],
          },
        ],
      },
    });

    expect(providerMessageId).toMatch(/^wamid\.[A-Za-z0-9+/=]+$/);
    expect(fake.messages.at(-1)).toEqual({
      id: providerMessageId,
      phoneNumberId: PHONE_NUMBER_ID,
      to: '15550002000',
      templateName: 'order_shipped',
      languageCode: 'en_US',
      bodyParameters: ['Asha', 'ORD-1042'],
    });
  });

  it('omits components for a template without parameters, and honours apiVersion and a trailing slash on baseUrl', async () => {
    await cloud({ apiVersion: 'v22.0', baseUrl: `${fake.url}/` }).sendTemplate(
      templateSend({ templateName: 'hello_world', bodyParameters: [], languageCode: 'hi' }),
    );
    const request = fake.requests.at(-1)!;
    expect(request.path).toBe(`/v22.0/${PHONE_NUMBER_ID}/messages`);
    expect(request.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '15550002000',
      type: 'template',
      template: { name: 'hello_world', language: { code: 'hi' } },
    });
    expect(request.body).not.toHaveProperty('template.components');
  });

  it("maps Graph's 131030 (recipient not in allowed list) to a non-retryable ProviderError with Graph's message", async () => {
    const error = await failure(cloud().sendTemplate(templateSend({ to: `+${NOT_ALLOWED}` })));
    expect(error.message).toContain('WhatsApp Cloud API: (#131030) Recipient phone number not in allowed list');
    expect(error.message).toContain('Add recipient phone number to recipient list and try again.');
    expect(error.status).toBe(400);
    expect(error.code).toBe(131030);
    expect(error.retryable).toBe(false);
  });

  it('maps a bad token (401 OAuthException 190) to a non-retryable ProviderError without leaking the token', async () => {
    const error = await failure(cloud({ accessToken: 'EAAG-wrong-token' }).sendTemplate(templateSend()));
    expect(fake.requests.at(-1)?.headers.authorization).toBe('Bearer EAAG-wrong-token');
    expect(error.message).toBe('WhatsApp Cloud API: (#190) Invalid OAuth access token - Cannot parse access token');
    expect(error.status).toBe(401);
    expect(error.code).toBe(190);
    expect(error.retryable).toBe(false);
    expect(error.message).not.toContain('wrong-token');
  });

  it('maps an unknown phone number id (GraphMethodException 100) to a non-retryable error', async () => {
    const error = await failure(cloud().sendTemplate(templateSend({ phoneNumberId: '999' })));
    expect(error.message).toMatch(/^WhatsApp Cloud API: \(#100\) Unsupported post request\. Object with ID '999' does not exist/);
    expect(error.code).toBe(100);
    expect(error.retryable).toBe(false);
  });

  it("treats 5xx and 429 as retryable, keeping Graph's message", async () => {
    fake.failNext(500, { error: { message: 'An unknown error has occurred.', type: 'OAuthException', code: 1, fbtrace_id: 'AbC' } });
    const serverError = await failure(cloud().sendTemplate(templateSend()));
    expect(serverError).toMatchObject({ status: 500, code: 1, retryable: true });
    expect(serverError.message).toBe('WhatsApp Cloud API: (#1) An unknown error has occurred.');

    fake.failNext(429, {
      error: { message: '(#4) Application request limit reached', type: 'OAuthException', code: 4, fbtrace_id: 'AbC' },
    });
    const tooMany = await failure(cloud().sendTemplate(templateSend()));
    expect(tooMany).toMatchObject({ status: 429, code: 4, retryable: true });
    expect(tooMany.message).toBe('WhatsApp Cloud API: (#4) Application request limit reached');
  });

  it("treats Graph's throttling codes as retryable even on a 400", async () => {
    fake.failNext(400, {
      error: {
        message: '(#130429) Rate limit hit',
        type: 'OAuthException',
        code: 130429,
        error_data: { messaging_product: 'whatsapp', details: 'Cloud API message throughput has been reached.' },
        fbtrace_id: 'AbC',
      },
    });
    const error = await failure(cloud().sendTemplate(templateSend()));
    expect(error).toMatchObject({ status: 400, code: 130429, retryable: true });
    expect(error.message).toBe('WhatsApp Cloud API: (#130429) Rate limit hit (Cloud API message throughput has been reached.)');
  });

  it('reports a non-JSON error page with its status', async () => {
    const server = createServer((_req, res) =>
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>'),
    );
    const { url, close } = await listenOnLoopback(server);
    try {
      const error = await failure(cloud({ baseUrl: url }).sendTemplate(templateSend()));
      expect(error.message).toMatch(/^WhatsApp Cloud API: HTTP 502: .*Bad Gateway/);
      expect(error).toMatchObject({ status: 502, retryable: true });
    } finally {
      await close();
    }
  });

  it('does not retry a 200 without a message id (the message may have gone out)', async () => {
    fake.failNext(200, { messaging_product: 'whatsapp', contacts: [], messages: [] });
    const error = await failure(cloud().sendTemplate(templateSend()));
    expect(error).toMatchObject({ status: 200, retryable: false });
    expect(error.message).toMatch(/without a message id/);
  });

  it('times out within timeoutMs as a retryable error when Graph never answers', async () => {
    const server = createServer(() => {
      /* never answers */
    });
    const { url, close } = await listenOnLoopback(server);
    try {
      const started = Date.now();
      const error = await failure(cloud({ baseUrl: url, timeoutMs: 100 }).sendTemplate(templateSend()));
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error.message).toBe('WhatsApp Cloud API: request timed out after 100 ms');
      expect(error.retryable).toBe(true);
      expect(error.status).toBeUndefined();
    } finally {
      await close();
    }
  });

  it('treats a refused connection as retryable', async () => {
    const server = createServer();
    const { url, close } = await listenOnLoopback(server);
    await close();
    const error = await failure(cloud({ baseUrl: url }).sendTemplate(templateSend()));
    expect(error.message).toMatch(/^WhatsApp Cloud API: request failed: /);
    expect(error.retryable).toBe(true);
  });

  it('rejects a recipient that is not a phone number before sending anything', async () => {
    const error = await failure(cloud().sendTemplate(templateSend({ to: 'not-a-number' })));
    expect(error.retryable).toBe(false);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('createWhatsAppCloud().listPhoneNumbers', () => {
  it('follows paging.next until the last page and maps every number', async () => {
    const numbers = await cloud().listPhoneNumbers(WABA_ID);
    expect(numbers).toEqual(NUMBERS);

    // Five numbers, two per page: three requests, each with the bearer token.
    expect(fake.requests).toHaveLength(3);
    for (const request of fake.requests) {
      expect(request.method).toBe('GET');
      expect(request.path).toBe(`/v21.0/${WABA_ID}/phone_numbers`);
      expect(request.headers.authorization).toBe(`Bearer ${ACCESS_TOKEN}`);
      expect(request.query.fields).toBe('id,display_phone_number,verified_name,quality_rating');
    }
    expect(fake.requests[0]!.query).toEqual({ fields: 'id,display_phone_number,verified_name,quality_rating' });
    expect(fake.requests[1]!.query.after).toBeTruthy();
    expect(fake.requests[2]!.query.after).toBeTruthy();
    expect(fake.requests[2]!.query.after).not.toBe(fake.requests[1]!.query.after);
  });

  it('returns one page when everything fits', async () => {
    const single = await startFakeWhatsApp({ accessToken: ACCESS_TOKEN, businessAccountId: WABA_ID, phoneNumbers: NUMBERS.slice(0, 2) });
    try {
      expect(await cloud({ baseUrl: single.url }).listPhoneNumbers(WABA_ID)).toEqual(NUMBERS.slice(0, 2));
      expect(single.requests).toHaveLength(1);
    } finally {
      await single.close();
    }
  });

  it('maps an unknown business account to a non-retryable ProviderError', async () => {
    const error = await failure(cloud().listPhoneNumbers('1234'));
    expect(error).toMatchObject({ status: 400, code: 100, retryable: false });
    expect(error.message).toContain("Object with ID '1234' does not exist");
  });

  it('does not follow paging.next to another origin (it would carry our token)', async () => {
    fake.failNext(200, {
      data: [{ id: '1', display_phone_number: '+1 555', verified_name: 'X', quality_rating: 'GREEN' }],
      paging: { next: 'https://evil.example/v21.0/1/phone_numbers?after=x' },
    });
    const error = await failure(cloud().listPhoneNumbers(WABA_ID));
    expect(error.message).toMatch(/not following it/);
    expect(fake.requests).toHaveLength(1);
  });

  it('stops at a cursor that loops back, and caps the walk at 20 pages', async () => {
    const loopUrl = `${fake.url}/v21.0/${WABA_ID}/phone_numbers?fields=id,display_phone_number,verified_name,quality_rating`;
    fake.failNext(200, {
      data: [{ id: '7', display_phone_number: '+1 555 7', verified_name: 'Loop', quality_rating: 'GREEN' }],
      paging: { next: loopUrl },
    });
    expect(await cloud().listPhoneNumbers(WABA_ID)).toEqual([
      { id: '7', displayPhoneNumber: '+1 555 7', verifiedName: 'Loop', qualityRating: 'GREEN' },
    ]);
    expect(fake.requests).toHaveLength(1);

    let served = 0;
    let origin = '';
    const endless = createServer((_req, res) => {
      served++;
      const body = JSON.stringify({
        data: [{ id: String(served), display_phone_number: 'n', verified_name: 'v', quality_rating: 'GREEN' }],
        paging: { next: `${origin}/v21.0/${WABA_ID}/phone_numbers?after=${served}` },
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    const listening = await listenOnLoopback(endless);
    origin = listening.url;
    try {
      const numbers = await cloud({ baseUrl: origin }).listPhoneNumbers(WABA_ID);
      expect(served).toBe(20);
      expect(numbers).toHaveLength(20);
    } finally {
      await listening.close();
    }
  });

  it('treats a 503 as retryable', async () => {
    fake.failNext(503, { error: { message: '(#2) Service temporarily unavailable', type: 'OAuthException', code: 2, fbtrace_id: 'AbC' } });
    const error = await failure(cloud().listPhoneNumbers(WABA_ID));
    expect(error).toMatchObject({ status: 503, code: 2, retryable: true });
    expect(error.message).toBe('WhatsApp Cloud API: (#2) Service temporarily unavailable');
  });
});

describe('whatsappSignature / verifyWhatsAppSignature', () => {
  const APP_SECRET = 'f3d2c1b0a9e8d7c6b5a4f3e2d1c0b9a8';
  const payload = statusWebhookPayload({
    phoneNumberId: PHONE_NUMBER_ID,
    wabaId: WABA_ID,
    statuses: [
      {
        id: 'wamid.HBgLMTU1NTAwMDIwMDAVAgARGBI=',
        status: 'delivered',
        recipientId: '+15550002000',
        timestamp: new Date('2026-11-23T10:00:05Z'),
      },
    ],
  });

  it("accepts the fake's independently signed delivery", () => {
    const { body, headers } = signedWhatsAppWebhook(APP_SECRET, payload);
    const header = headers['x-hub-signature-256'];
    expect(header).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(whatsappSignature(APP_SECRET, body)).toBe(header);
    expect(verifyWhatsAppSignature(APP_SECRET, body, header)).toBe(true);
    expect(verifyWhatsAppSignature(APP_SECRET, Buffer.from(body, 'utf8'), header)).toBe(true);
    expect(verifyWhatsAppSignature(APP_SECRET, body, header!.toUpperCase().replace('SHA256=', 'sha256='))).toBe(true);
  });

  it('rejects a wrong secret, a tampered body, and missing or malformed headers', () => {
    const { body, headers } = signedWhatsAppWebhook(APP_SECRET, payload);
    const header = headers['x-hub-signature-256']!;
    expect(verifyWhatsAppSignature('another-app-secret', body, header)).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body.replace('"delivered"', '"read"'), header)).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, `${body} `, header)).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body, undefined)).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body, '')).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body, header.slice('sha256='.length))).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body, header.replace('sha256=', 'sha1='))).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body, header.slice(0, -2))).toBe(false);
    expect(verifyWhatsAppSignature(APP_SECRET, body, `${header.slice(0, -1)}z`)).toBe(false);
    expect(verifyWhatsAppSignature('', body, whatsappSignature('', body))).toBe(false);
  });
});

describe('fake WhatsApp wire checks', () => {
  it("builds Meta's status webhook payload", () => {
    const sent = new Date('2026-11-23T10:00:00Z');
    expect(
      statusWebhookPayload({
        phoneNumberId: PHONE_NUMBER_ID,
        wabaId: WABA_ID,
        displayPhoneNumber: '15550001234',
        statuses: [
          { id: 'wamid.A', status: 'sent', recipientId: '+15550002000', timestamp: sent },
          {
            id: 'wamid.B',
            status: 'failed',
            recipientId: '15550002001',
            timestamp: '1795428000',
            errors: [{ code: 131026, title: 'Message undeliverable' }],
          },
        ],
      }),
    ).toEqual({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: WABA_ID,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550001234', phone_number_id: PHONE_NUMBER_ID },
                statuses: [
                  {
                    id: 'wamid.A',
                    status: 'sent',
                    timestamp: String(sent.getTime() / 1000),
                    recipient_id: '15550002000',
                    conversation: {
                      id: expect.any(String),
                      expiration_timestamp: String(sent.getTime() / 1000 + 86_400),
                      origin: { type: 'marketing' },
                    },
                    pricing: { billable: true, pricing_model: 'CBP', category: 'marketing' },
                  },
                  {
                    id: 'wamid.B',
                    status: 'failed',
                    timestamp: '1795428000',
                    recipient_id: '15550002001',
                    errors: [
                      {
                        code: 131026,
                        title: 'Message undeliverable',
                        message: 'Message undeliverable',
                        error_data: { details: 'Message undeliverable' },
                        href: expect.any(String),
                      },
                    ],
                  },
                ],
              },
            },
          ],
        },
      ],
    });
  });

  it('answers a malformed send body with a Graph 400 error', async () => {
    const response = await fetch(`${fake.url}/v21.0/${PHONE_NUMBER_ID}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACCESS_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messaging_product: 'whatsapp', to: '15550002000', type: 'template', template: { name: 'x' } }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: {
        message: '(#100) The parameter template[language][code] is required.',
        type: 'OAuthException',
        code: 100,
        fbtrace_id: expect.any(String),
      },
    });

    const notJson = await fetch(`${fake.url}/v21.0/${PHONE_NUMBER_ID}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACCESS_TOKEN}`, 'content-type': 'application/json' },
      body: '{"messaging_product":',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: 100, type: 'OAuthException' } });
  });

  it('answers a missing token with a 401 OAuthException', async () => {
    const response = await fetch(`${fake.url}/v21.0/${WABA_ID}/phone_numbers`);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { type: 'OAuthException', code: 2500 } });
  });
});
