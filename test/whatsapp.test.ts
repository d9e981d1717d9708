import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import {
  graphError,
  signedWhatsAppWebhook,
  startFakeWhatsApp,
  statusWebhookPayload,
  type FakeWhatsApp,
} from '../src/providers/whatsapp-cloud/fake.ts';
import { apiAs } from './voice-fixtures.ts';

// Seed §2.5, §2.9, §4.1, §8 and contract §6: WhatsApp campaigns, the webhook token and callback,
// and the sender numbers fetched live from a local fake of the Graph API.
const ACCESS_TOKEN = 'EAAG-test-access-token-0123456789';
const APP_SECRET = 'app-secret-0123456789abcdef';
const WABA_ID = '102290129340398';
const DEFAULT_SENDER = '106540352242922';

let t: TestApp;
let graph: FakeWhatsApp;

beforeAll(async () => {
  graph = await startFakeWhatsApp({
    accessToken: ACCESS_TOKEN,
    businessAccountId: WABA_ID,
    phoneNumbers: [
      { id: DEFAULT_SENDER, displayPhoneNumber: '+1 555-000-1234', verifiedName: 'Acme Clinic', qualityRating: 'GREEN' },
      { id: '106540352242923', displayPhoneNumber: '+1 555-000-1235', verifiedName: 'Acme Clinic', qualityRating: 'YELLOW' },
      { id: '106540352242924', displayPhoneNumber: '+1 555-000-1236', verifiedName: 'Acme Billing', qualityRating: 'UNKNOWN' },
    ],
  });
  t = await startTestApp({ env: { WHATSAPP_API_URL: graph.url } });
});
afterAll(async () => {
  await t.close();
  await graph.close();
});

async function tenant() {
  const session = (await signUp(t.app)).token;
  const key = (await createKey(t.app, session)).key;
  const api = apiAs(t.app, key);
  const agent = (await api('POST', '/agents', { name: 'Reminder agent' })).json();
  return { session, key, api, agentId: agent.id as string };
}

const connectWhatsApp = (session: string) =>
  t.app.inject({
    method: 'PUT',
    url: '/api/v1/integrations/whatsapp',
    headers: bearer(session),
    payload: { businessAccountId: WABA_ID, accessToken: ACCESS_TOKEN, appSecret: APP_SECRET, phoneNumberId: DEFAULT_SENDER },
  });

const PAIRS = ['INCOMING', 'OUTGOING'].flatMap((process) =>
  ['ANSWERED', 'UNANSWERED', 'FAILED', 'BUSY'].map((callStatus) => ({ process, callStatus })),
);
/** `n` distinct mappings: the 8 (process, callStatus) pairs in as many languages as needed. */
const mappings = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    templateName: `follow_up_${i}`,
    languageCode: ['en_US', 'es_ES', 'pt_BR'][Math.floor(i / 8)],
    ...PAIRS[i % 8]!,
  }));

describe('WhatsApp campaigns', () => {
  it('creates a campaign with service ids and en_US as the default language', async () => {
    const { api, agentId } = await tenant();
    const response = await api('POST', '/whatsapp/campaigns', {
      agentId,
      name: 'Follow-ups',
      templates: [{ templateName: 'thanks', process: 'OUTGOING', callStatus: 'ANSWERED' }],
    });
    expect(response.statusCode).toBe(201);
    const campaign = response.json();
    expect(campaign).toMatchObject({ agentId, name: 'Follow-ups', phoneNumberId: null, isActive: true });
    expect(campaign.templates).toEqual([
      {
        id: expect.any(String),
        templateName: 'thanks',
        languageCode: 'en_US',
        process: 'OUTGOING',
        callStatus: 'ANSWERED',
        bodyParameters: [],
      },
    ]);
    expect((await api('GET', `/whatsapp/campaigns/${campaign.id}`)).json()).toEqual(campaign);
  });

  it('accepts 20 template mappings and refuses a 21st, on create and on update', async () => {
    const { api, agentId } = await tenant();
    const twentyOne = await api('POST', '/whatsapp/campaigns', { agentId, templates: mappings(21) });
    expect(twentyOne.statusCode).toBe(400);
    expect(twentyOne.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: '/templates' })] });
    const twenty = await api('POST', '/whatsapp/campaigns', { agentId, templates: mappings(20) });
    expect(twenty.statusCode).toBe(201);
    expect(twenty.json().templates).toHaveLength(20);
    const put = await api('PUT', `/whatsapp/campaigns/${twenty.json().id}`, { templates: mappings(21) });
    expect(put.statusCode).toBe(400);
    expect((await api('GET', `/whatsapp/campaigns/${twenty.json().id}`)).json().templates).toHaveLength(20);
  });

  it('allows one mapping per (process, callStatus, languageCode), several languages per pair', async () => {
    const { api, agentId } = await tenant();
    const twice = await api('POST', '/whatsapp/campaigns', {
      agentId,
      templates: [
        { templateName: 'a', process: 'OUTGOING', callStatus: 'BUSY' },
        { templateName: 'b', process: 'OUTGOING', callStatus: 'BUSY', languageCode: 'en_US' },
      ],
    });
    expect(twice.statusCode).toBe(400);
    expect(twice.json().details).toEqual([
      { path: '/templates/1', message: expect.stringContaining('one mapping per process, callStatus and languageCode') },
    ]);
    const languages = await api('POST', '/whatsapp/campaigns', {
      agentId,
      templates: [
        { templateName: 'a', process: 'OUTGOING', callStatus: 'BUSY' },
        { templateName: 'b', process: 'OUTGOING', callStatus: 'BUSY', languageCode: 'es' },
      ],
    });
    expect(languages.statusCode).toBe(201);
  });

  it('refuses a second campaign for the agent and points at PUT', async () => {
    const { api, agentId } = await tenant();
    const first = (await api('POST', '/whatsapp/campaigns', { agentId, templates: [] })).json();
    const second = await api('POST', '/whatsapp/campaigns', { agentId, templates: [] });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({
      code: 'WHATSAPP_CAMPAIGN_EXISTS',
      message: expect.stringContaining(`PUT /api/v1/whatsapp/campaigns/${first.id}`),
    });
  });

  it('validates the body: required fields, enums, unknown properties, the agent', async () => {
    const { api, agentId } = await tenant();
    const cases: [unknown, number, string][] = [
      [{ agentId }, 400, '/templates'],
      [{ templates: [] }, 400, '/agentId'],
      [{ agentId, templates: [{ process: 'OUTGOING', callStatus: 'ANSWERED' }] }, 400, '/templates/0/templateName'],
      [{ agentId, templates: [{ templateName: 'x', callStatus: 'ANSWERED' }] }, 400, '/templates/0/process'],
      [{ agentId, templates: [{ templateName: 'x', process: 'OUTGOING' }] }, 400, '/templates/0/callStatus'],
      [{ agentId, templates: [{ templateName: 'x', process: 'OUTBOUND', callStatus: 'ANSWERED' }] }, 400, '/templates/0/process'],
      [{ agentId, templates: [{ templateName: 'x', process: 'OUTGOING', callStatus: 'VOICEMAIL' }] }, 400, '/templates/0/callStatus'],
      [{ agentId, templates: [], colour: 'red' }, 400, '/colour'],
    ];
    for (const [body, status, path] of cases) {
      const response = await api('POST', '/whatsapp/campaigns', body);
      expect(response.statusCode, JSON.stringify(body)).toBe(status);
      expect(
        response.json().details.map((d: { path: string }) => d.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    const unknownAgent = await api('POST', '/whatsapp/campaigns', { agentId: '00000000-0000-4000-8000-000000000000', templates: [] });
    expect(unknownAgent.statusCode).toBe(404);
  });

  it('replaces the templates wholesale on PUT, defaulting languageCode to en_US, and keeps them when absent', async () => {
    const { api, agentId } = await tenant();
    const created = (await api('POST', '/whatsapp/campaigns', { agentId, templates: mappings(3) })).json();
    const replaced = await api('PUT', `/whatsapp/campaigns/${created.id}`, {
      templates: [{ templateName: 'only_one', process: 'INCOMING', callStatus: 'FAILED' }],
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json().templates).toEqual([
      {
        id: expect.any(String),
        templateName: 'only_one',
        languageCode: 'en_US',
        process: 'INCOMING',
        callStatus: 'FAILED',
        bodyParameters: [],
      },
    ]);
    expect(created.templates.map((m: { id: string }) => m.id)).not.toContain(replaced.json().templates[0].id);
    const renamed = (
      await api('PUT', `/whatsapp/campaigns/${created.id}`, { name: 'Renamed', isActive: false, phoneNumberId: '106540352242923' })
    ).json();
    expect(renamed).toMatchObject({
      name: 'Renamed',
      isActive: false,
      phoneNumberId: '106540352242923',
      templates: replaced.json().templates,
    });
  });

  it('lists, filters by agent, deletes', async () => {
    const { api, agentId } = await tenant();
    const otherAgent = (await api('POST', '/agents', { name: 'Second agent' })).json().id;
    const a = (await api('POST', '/whatsapp/campaigns', { agentId, templates: [] })).json();
    const b = (await api('POST', '/whatsapp/campaigns', { agentId: otherAgent, templates: [] })).json();
    expect((await api('GET', '/whatsapp/campaigns')).json()).toMatchObject({
      total: 2,
      page: 1,
      limit: 25,
      data: [{ id: b.id }, { id: a.id }],
    });
    expect((await api('GET', `/whatsapp/campaigns?agentId=${agentId}`)).json()).toMatchObject({ total: 1, data: [{ id: a.id }] });
    expect((await api('DELETE', `/whatsapp/campaigns/${a.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/whatsapp/campaigns/${a.id}`)).statusCode).toBe(404);
    expect((await api('DELETE', `/whatsapp/campaigns/${a.id}`)).statusCode).toBe(404);
  });

  it("keeps each tenant's campaigns to itself (404, never 403)", async () => {
    const mine = await tenant();
    const theirs = await tenant();
    const campaign = (await mine.api('POST', '/whatsapp/campaigns', { agentId: mine.agentId, templates: [] })).json();
    expect((await theirs.api('GET', `/whatsapp/campaigns/${campaign.id}`)).statusCode).toBe(404);
    expect((await theirs.api('PUT', `/whatsapp/campaigns/${campaign.id}`, { name: 'Mine now' })).statusCode).toBe(404);
    expect((await theirs.api('DELETE', `/whatsapp/campaigns/${campaign.id}`)).statusCode).toBe(404);
    expect((await theirs.api('GET', '/whatsapp/campaigns')).json().total).toBe(0);
    expect((await theirs.api('POST', '/whatsapp/campaigns', { agentId: mine.agentId, templates: [] })).statusCode).toBe(404);
    expect((await mine.api('GET', `/whatsapp/campaigns/${campaign.id}`)).json().name).toBe(campaign.name);
  });
});

describe('the WhatsApp webhook token and subscription handshake', () => {
  it('issues one token per tenant and returns the same one after', async () => {
    const mine = await tenant();
    const first = await mine.api('POST', '/whatsapp/webhook-token', {});
    expect(first.statusCode).toBe(201);
    const again = await mine.api('POST', '/whatsapp/webhook-token', {});
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ token: first.json().token });
    expect(first.json().token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const theirs = (await (await tenant()).api('POST', '/whatsapp/webhook-token', {})).json().token;
    expect(theirs).not.toBe(first.json().token);
  });

  it('gives concurrent first requests one token, issued once', async () => {
    const { api } = await tenant();
    const responses = await Promise.all(Array.from({ length: 5 }, () => api('POST', '/whatsapp/webhook-token', {})));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 201]);
    expect(new Set(responses.map((r) => r.json().token)).size).toBe(1);
  });

  it('answers the verification with the challenge for a right token, 403 otherwise', async () => {
    const { token } = (await (await tenant()).api('POST', '/whatsapp/webhook-token', {})).json();
    const verify = (query: string) => t.app.inject({ method: 'GET', url: `/api/v1/whatsapp/webhook?${query}` });
    const right = await verify(`hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`);
    expect(right.statusCode).toBe(200);
    expect(right.body).toBe('1158201444');
    expect(right.headers['content-type']).toMatch(/^text\/plain/);
    // Each says what is wrong: the token only when it is the token.
    for (const [query, says] of [
      [`hub.mode=subscribe&hub.verify_token=wrong-${token}&hub.challenge=1`, 'The verify token does not match'],
      [`hub.mode=unsubscribe&hub.verify_token=${token}&hub.challenge=1`, 'this request has hub.mode=unsubscribe.'],
      [`hub.verify_token=${token}&hub.challenge=1`, 'this request has no hub.mode.'],
      [`hub.mode=subscribe&hub.challenge=1`, 'this request has no hub.verify_token.'],
      [`hub.mode=subscribe&hub.verify_token=${token}`, 'this request has no hub.challenge.'],
    ]) {
      const wrong = await verify(query!);
      expect(wrong.statusCode, query).toBe(403);
      expect(wrong.json().code).toBe('WEBHOOK_VERIFICATION_FAILED');
      expect(wrong.json().message).toContain(says);
    }
  });

  it('refuses a delivery whose X-Hub-Signature-256 is forged, missing or made with another secret', async () => {
    const { session } = await tenant();
    expect((await connectWhatsApp(session)).statusCode).toBe(200);
    const payload = statusWebhookPayload({
      phoneNumberId: DEFAULT_SENDER,
      wabaId: WABA_ID,
      statuses: [{ id: 'wamid.forged', status: 'read', recipientId: '14155550100', timestamp: new Date() }],
    });
    const signed = signedWhatsAppWebhook(APP_SECRET, payload);
    const post = (body: string, headers: Record<string, string>) =>
      t.app.inject({ method: 'POST', url: '/api/v1/whatsapp/webhook', headers, payload: body });
    const tampered = await post(signed.body.replace('"read"', '"delivered"'), signed.headers);
    expect(tampered.statusCode).toBe(401);
    expect(tampered.json().code).toBe('INVALID_SIGNATURE');
    const otherSecret = signedWhatsAppWebhook('not-the-app-secret-at-all', payload);
    expect((await post(otherSecret.body, otherSecret.headers)).statusCode).toBe(401);
    const { 'x-hub-signature-256': _dropped, ...unsigned } = signed.headers;
    expect((await post(signed.body, unsigned)).statusCode).toBe(401);
    expect((await post(signed.body, signed.headers)).statusCode).toBe(200);
    for (const body of ['null', '{"entry":{}}', '[]', '{"object":"whatsapp_business_account"}']) {
      const malformed = await post(body, { 'content-type': 'application/json' });
      expect(malformed.statusCode, body).toBe(400);
      expect(malformed.json().code, body).toBe('INVALID_WEBHOOK');
    }
  });
});

describe('GET /whatsapp/fetch-numbers', () => {
  it('says how to connect WhatsApp when it is not connected', async () => {
    const response = await (await tenant()).api('GET', '/whatsapp/fetch-numbers');
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({
      code: 'WHATSAPP_NOT_CONNECTED',
      message: expect.stringContaining('PUT /api/v1/integrations/whatsapp'),
    });
  });

  it("lists the account's numbers live from the Graph API, every page, mapped to seed §2.9", async () => {
    const { session, api } = await tenant();
    await connectWhatsApp(session);
    const before = graph.requests.length;
    const response = await api('GET', '/whatsapp/fetch-numbers');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([
      { id: DEFAULT_SENDER, displayPhoneNumber: '+1 555-000-1234', verifiedName: 'Acme Clinic', qualityRating: 'GREEN' },
      { id: '106540352242923', displayPhoneNumber: '+1 555-000-1235', verifiedName: 'Acme Clinic', qualityRating: 'YELLOW' },
      { id: '106540352242924', displayPhoneNumber: '+1 555-000-1236', verifiedName: 'Acme Billing', qualityRating: 'UNKNOWN' },
    ]);
    const requests = graph.requests.slice(before);
    expect(requests.length).toBe(2); // two pages of two
    expect(requests[0]).toMatchObject({ method: 'GET', path: `/v21.0/${WABA_ID}/phone_numbers` });
    expect(requests.every((request) => request.headers.authorization === `Bearer ${ACCESS_TOKEN}`)).toBe(true);
  });

  it("answers 502 carrying the provider's message when the Graph API refuses", async () => {
    const { session, api } = await tenant();
    await connectWhatsApp(session);
    graph.failNext(400, graphError('Error validating access token: Session has expired.', 'OAuthException', 190));
    const response = await api('GET', '/whatsapp/fetch-numbers');
    expect(response.statusCode).toBe(502);
    expect(response.json()).toMatchObject({ code: 'PROVIDER_ERROR', message: expect.stringContaining('Session has expired') });
  });
});
