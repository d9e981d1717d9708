import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as messagingRepo from '../src/modules/messaging/repo.ts';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// Seed §2.6, §4.2 and contract §1, §6 (SMS campaigns, SMS provider integrations, the message
// log), through HTTP on a real database.
let t: TestApp;
let owner: Awaited<ReturnType<typeof signUp>>;
let api: ReturnType<typeof apiAs>;
let otherApi: ReturnType<typeof apiAs>;

beforeAll(async () => {
  t = await startTestApp();
  owner = await signUp(t.app);
  const other = await signUp(t.app);
  api = apiAs(t.app, (await createKey(t.app, owner.token)).key);
  otherApi = apiAs(t.app, (await createKey(t.app, other.token)).key);
});
afterAll(() => t.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface SmsTemplate {
  id: string;
  callStatus: 'ANSWERED' | 'UNANSWERED';
  messageBody: string;
  dltSenderId: string | null;
  dltTemplateId: string | null;
}
interface SmsCampaign {
  id: string;
  tenantId: string;
  agentId: string;
  name: string;
  senderNumber: string;
  senderProvider: string;
  isActive: boolean;
  templates: SmsTemplate[];
  createdAt: string;
  updatedAt: string;
}

async function newAgent(as = api) {
  const response = await as('POST', '/agents', { name: `SMS agent ${randomUUID().slice(0, 8)}` });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string; name: string };
}

const answered = { callStatus: 'ANSWERED', messageBody: 'Thanks for talking with us, {{name|there}}.' };
const unanswered = { callStatus: 'UNANSWERED', messageBody: 'Sorry we missed you, {{name|there}}; call us back.' };

async function newCampaign(body: Record<string, unknown> = {}, as = api) {
  const agentId = (body.agentId as string | undefined) ?? (await newAgent(as)).id;
  const response = await as('POST', '/sms-agent/campaigns', {
    senderNumber: '+14155550123',
    senderProvider: 'SIMULATOR',
    templates: [answered],
    ...body,
    agentId,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as SmsCampaign;
}

describe('POST /sms-agent/campaigns', () => {
  it('answers 201 with the full record: service template ids, null DLT fields, isActive true, provider upper-cased', async () => {
    const agent = await newAgent();
    const response = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      name: 'Missed-call follow-up',
      senderNumber: '+14155550123',
      senderProvider: 'twilio',
      templates: [answered, { ...unanswered, dltSenderId: 'CALLFG' }],
    });
    expect(response.statusCode, response.body).toBe(201);
    const campaign = response.json() as SmsCampaign;
    expect(campaign).toEqual({
      id: expect.stringMatching(UUID),
      tenantId: owner.tenantId,
      agentId: agent.id,
      name: 'Missed-call follow-up',
      senderNumber: '+14155550123',
      senderProvider: 'TWILIO',
      isActive: true,
      templates: [
        { id: expect.any(String), callStatus: 'ANSWERED', messageBody: answered.messageBody, dltSenderId: null, dltTemplateId: null },
        {
          id: expect.any(String),
          callStatus: 'UNANSWERED',
          messageBody: unanswered.messageBody,
          dltSenderId: 'CALLFG',
          dltTemplateId: null,
        },
      ],
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const [first, second] = campaign.templates;
    expect(first!.id).not.toBe('');
    expect(first!.id).not.toBe(second!.id);
    expect((await api('GET', `/sms-agent/campaigns/${campaign.id}`)).json()).toEqual(campaign);
  });

  it('takes isActive false and an alphanumeric sender id, and names the campaign after the agent when no name is given', async () => {
    const agent = await newAgent();
    const campaign = await newCampaign({ agentId: agent.id, isActive: false, senderNumber: 'CALLFG', templates: [] });
    expect(campaign).toMatchObject({ isActive: false, senderNumber: 'CALLFG', templates: [], name: expect.stringContaining(agent.name) });
  });

  it('refuses a provider the service does not support with 400 VALIDATION_FAILED naming /senderProvider', async () => {
    const agent = await newAgent();
    const response = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'ACME',
      templates: [answered],
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      code: 'VALIDATION_FAILED',
      requestId: expect.any(String),
    });
    expect(response.json().details).toEqual([{ path: '/senderProvider', message: expect.stringContaining('TWILIO') }]);
    expect(response.json().message).toContain('ACME');
    expect((await api('GET', `/sms-agent/campaigns?agentId=${agent.id}`)).json().total).toBe(0);
  });

  it('refuses a missing agentId, senderNumber or senderProvider with 400 naming the field', async () => {
    const agent = await newAgent();
    const full = { agentId: agent.id, senderNumber: '+14155550123', senderProvider: 'SIMULATOR' };
    for (const field of ['agentId', 'senderNumber', 'senderProvider'] as const) {
      const { [field]: _omitted, ...body } = full;
      const response = await api('POST', '/sms-agent/campaigns', body);
      expect(response.statusCode, field).toBe(400);
      expect(response.json().code, field).toBe('VALIDATION_FAILED');
      expect(response.json().details, field).toEqual([{ path: `/${field}`, message: 'is required' }]);
    }
    expect((await api('GET', `/sms-agent/campaigns?agentId=${agent.id}`)).json().total).toBe(0);
  });

  it('answers 404 for an agent that does not exist', async () => {
    const response = await api('POST', '/sms-agent/campaigns', {
      agentId: randomUUID(),
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
    });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND', message: 'Agent not found.' });
  });

  it('refuses an unknown body property with 400 naming it', async () => {
    const agent = await newAgent();
    const response = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
      sender: 'x',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().details).toEqual([{ path: '/sender', message: 'is not an accepted property' }]);
    const inTemplate = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
      templates: [{ ...answered, language: 'en' }],
    });
    expect(inTemplate.statusCode).toBe(400);
    expect(inTemplate.json().details).toEqual([{ path: '/templates/0/language', message: 'is not an accepted property' }]);
  });

  it('refuses a second SMS campaign for the same agent with 409 SMS_CAMPAIGN_EXISTS pointing at PUT of the existing one', async () => {
    const existing = await newCampaign();
    const response = await api('POST', '/sms-agent/campaigns', {
      agentId: existing.agentId,
      senderNumber: '+14155550199',
      senderProvider: 'TWILIO',
    });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ statusCode: 409, error: 'Conflict', code: 'SMS_CAMPAIGN_EXISTS' });
    expect(response.json().message).toContain('PUT');
    expect(response.json().message).toContain(existing.id);
    const listed = (await api('GET', `/sms-agent/campaigns?agentId=${existing.agentId}`)).json();
    expect(listed.total).toBe(1);
    expect(listed.data[0]).toEqual(existing);
  });

  it('refuses two templates with the same callStatus with 400 at /templates/1/callStatus', async () => {
    const agent = await newAgent();
    const response = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
      templates: [answered, { ...answered, messageBody: 'Again' }],
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('VALIDATION_FAILED');
    expect(response.json().details).toEqual([{ path: '/templates/1/callStatus', message: expect.any(String) }]);
    expect((await api('GET', `/sms-agent/campaigns?agentId=${agent.id}`)).json().total).toBe(0);
  });

  it('takes a bare {{name}} in a messageBody, as the seed allows (an empty one is removed when sent, with its comma)', async () => {
    const agent = await newAgent();
    const created = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
      templates: [answered, { callStatus: 'UNANSWERED', messageBody: 'Thanks for confirming, {{name}}. Plan: {{plan|basic}}' }],
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().templates[1].messageBody).toBe('Thanks for confirming, {{name}}. Plan: {{plan|basic}}');
  });

  it('refuses callStatus BUSY (SMS templates are ANSWERED or UNANSWERED) and an empty messageBody with 400', async () => {
    const agent = await newAgent();
    const base = { agentId: agent.id, senderNumber: '+14155550123', senderProvider: 'SIMULATOR' };
    for (const callStatus of ['BUSY', 'FAILED', 'answered']) {
      const response = await api('POST', '/sms-agent/campaigns', { ...base, templates: [{ callStatus, messageBody: 'Hello' }] });
      expect(response.statusCode, callStatus).toBe(400);
      expect(response.json().details[0].path, callStatus).toBe('/templates/0/callStatus');
    }
    const empty = await api('POST', '/sms-agent/campaigns', { ...base, templates: [{ callStatus: 'ANSWERED', messageBody: '' }] });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().details).toEqual([{ path: '/templates/0/messageBody', message: 'must not be empty' }]);
    const missing = await api('POST', '/sms-agent/campaigns', { ...base, templates: [{ callStatus: 'ANSWERED' }] });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().details).toEqual([{ path: '/templates/0/messageBody', message: 'is required' }]);
    expect((await api('GET', `/sms-agent/campaigns?agentId=${agent.id}`)).json().total).toBe(0);
  });

  it('takes MSG91 templates with or without a dltTemplateId (optional in the specification), on create and update', async () => {
    const agent = await newAgent();
    const base = { agentId: agent.id, senderNumber: 'CALLFG', senderProvider: 'msg91' };
    const without = await api('POST', '/sms-agent/campaigns', { ...base, templates: [answered] });
    expect(without.statusCode, without.body).toBe(201);
    expect(without.json().templates).toMatchObject([{ dltTemplateId: null }]);
    const updated = await api('PUT', `/sms-agent/campaigns/${without.json().id}`, {
      templates: [{ ...answered, dltTemplateId: '1207161234567890123' }, unanswered],
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json().templates).toMatchObject([{ dltTemplateId: '1207161234567890123' }, { dltTemplateId: null }]);
    expect((await api('DELETE', `/sms-agent/campaigns/${without.json().id}`)).statusCode).toBe(204);

    const withId = await api('POST', '/sms-agent/campaigns', {
      ...base,
      templates: [{ ...answered, dltSenderId: 'CALLFG', dltTemplateId: '1207161234567890123' }],
    });
    expect(withId.statusCode, withId.body).toBe(201);
    expect(withId.json()).toMatchObject({
      senderProvider: 'MSG91',
      templates: [{ callStatus: 'ANSWERED', dltSenderId: 'CALLFG', dltTemplateId: '1207161234567890123' }],
    });
  });
});

describe('GET, list and DELETE /sms-agent/campaigns', () => {
  it('gets a campaign by id, and answers 404 for an id that does not exist', async () => {
    const campaign = await newCampaign();
    const response = await api('GET', `/sms-agent/campaigns/${campaign.id}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(campaign);
    const missing = await api('GET', `/sms-agent/campaigns/${randomUUID()}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'NOT_FOUND', message: 'SMS campaign not found.' });
  });

  it('lists {data, total, page, limit} and filters by agentId', async () => {
    const tenant = await signUp(t.app);
    const tenantApi = apiAs(t.app, (await createKey(t.app, tenant.token)).key);
    const first = await newCampaign({}, tenantApi);
    const second = await newCampaign({ senderProvider: 'TWILIO' }, tenantApi);
    const all = await tenantApi('GET', '/sms-agent/campaigns');
    expect(all.statusCode).toBe(200);
    expect(all.json()).toMatchObject({ total: 2, page: 1, limit: 25 });
    expect(Object.keys(all.json()).sort()).toEqual(['data', 'limit', 'page', 'total']);
    expect((all.json().data as SmsCampaign[]).map((c) => c.id).sort()).toEqual([first.id, second.id].sort());
    const filtered = (await tenantApi('GET', `/sms-agent/campaigns?agentId=${first.agentId}`)).json();
    expect(filtered).toEqual({ data: [first], total: 1, page: 1, limit: 25 });
    expect((await tenantApi('GET', `/sms-agent/campaigns?agentId=${randomUUID()}`)).json()).toEqual({
      data: [],
      total: 0,
      page: 1,
      limit: 25,
    });
    const paged = (await tenantApi('GET', '/sms-agent/campaigns?page=2&limit=1')).json();
    expect(paged).toMatchObject({ total: 2, page: 2, limit: 1 });
    expect(paged.data).toHaveLength(1);
    expect((await tenantApi('GET', '/sms-agent/campaigns?agentId=not-a-uuid')).statusCode).toBe(400);
  });

  it('deletes with 204 and no body, after which GET and DELETE answer 404 and the agent may have a new one', async () => {
    const campaign = await newCampaign();
    const deleted = await api('DELETE', `/sms-agent/campaigns/${campaign.id}`);
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect((await api('GET', `/sms-agent/campaigns/${campaign.id}`)).statusCode).toBe(404);
    expect((await api('DELETE', `/sms-agent/campaigns/${campaign.id}`)).statusCode).toBe(404);
    expect((await api('GET', `/sms-agent/campaigns?agentId=${campaign.agentId}`)).json().total).toBe(0);
    await newCampaign({ agentId: campaign.agentId });
  });
});

describe('PUT /sms-agent/campaigns/{id}', () => {
  it('replaces the templates wholesale: two, then a PUT of one leaves exactly that one with a new id', async () => {
    const campaign = await newCampaign({ templates: [answered, unanswered] });
    expect(campaign.templates).toHaveLength(2);
    const replacement = { callStatus: 'UNANSWERED', messageBody: 'New text for {{name|there}}', dltSenderId: 'CALLFG' };
    const response = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { templates: [replacement] });
    expect(response.statusCode, response.body).toBe(200);
    const updated = response.json() as SmsCampaign;
    expect(updated.templates).toEqual([{ id: expect.any(String), ...replacement, dltTemplateId: null }]);
    expect(campaign.templates.map((template) => template.id)).not.toContain(updated.templates[0]!.id);
    expect(updated).toMatchObject({
      id: campaign.id,
      name: campaign.name,
      senderNumber: campaign.senderNumber,
      senderProvider: campaign.senderProvider,
      isActive: true,
      createdAt: campaign.createdAt,
    });
    expect((await api('GET', `/sms-agent/campaigns/${campaign.id}`)).json()).toEqual(updated);
    const cleared = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { templates: [] });
    expect(cleared.json().templates).toEqual([]);
  });

  it('keeps the templates when the body has none, and changes only the fields given', async () => {
    const campaign = await newCampaign({ templates: [answered, unanswered] });
    const response = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, {
      name: 'Renamed',
      senderNumber: '+14155550777',
      senderProvider: 'twilio',
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      ...campaign,
      name: 'Renamed',
      senderNumber: '+14155550777',
      senderProvider: 'TWILIO',
      updatedAt: expect.stringMatching(ISO),
    });
    const empty = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, {});
    expect(empty.statusCode).toBe(200);
    expect(empty.json().templates).toEqual(campaign.templates);
  });

  it('persists isActive false, and true again', async () => {
    const campaign = await newCampaign();
    expect((await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { isActive: false })).json().isActive).toBe(false);
    const stored = (await api('GET', `/sms-agent/campaigns/${campaign.id}`)).json();
    expect(stored).toMatchObject({ isActive: false, templates: campaign.templates, name: campaign.name });
    expect((await api('GET', `/sms-agent/campaigns?agentId=${campaign.agentId}`)).json().data[0].isActive).toBe(false);
    await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { isActive: true });
    expect((await api('GET', `/sms-agent/campaigns/${campaign.id}`)).json().isActive).toBe(true);
  });

  it('switches a campaign to MSG91 keeping its templates, with or without a dltTemplateId', async () => {
    const campaign = await newCampaign({ senderProvider: 'TWILIO', templates: [answered] });
    const response = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { senderProvider: 'MSG91', name: 'India' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ ...campaign, senderProvider: 'MSG91', name: 'India', updatedAt: expect.any(String) });
  });

  it('refuses an unsupported provider, a duplicate callStatus and unknown properties on update with 400, changing nothing', async () => {
    const campaign = await newCampaign();
    const provider = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { senderProvider: 'ACME' });
    expect(provider.statusCode).toBe(400);
    expect(provider.json().details).toEqual([{ path: '/senderProvider', message: expect.any(String) }]);
    const duplicate = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { templates: [unanswered, unanswered] });
    expect(duplicate.statusCode).toBe(400);
    expect(duplicate.json().details).toEqual([{ path: '/templates/1/callStatus', message: expect.any(String) }]);
    const unknown = await api('PUT', `/sms-agent/campaigns/${campaign.id}`, { agentId: randomUUID() });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().details).toEqual([{ path: '/agentId', message: 'is not an accepted property' }]);
    expect((await api('GET', `/sms-agent/campaigns/${campaign.id}`)).json()).toEqual(campaign);
  });

  it('answers 404 for an id that does not exist', async () => {
    const response = await api('PUT', `/sms-agent/campaigns/${randomUUID()}`, { name: 'Ghost' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND', message: 'SMS campaign not found.' });
  });
});

describe('tenant isolation of SMS campaigns', () => {
  it("answers 404 to another tenant for GET, PUT and DELETE, hides it from that tenant's list and leaves it untouched", async () => {
    const campaign = await newCampaign({ templates: [answered, unanswered] });
    const routes: ['GET' | 'PUT' | 'DELETE', unknown?][] = [
      ['GET'],
      ['PUT', { name: 'Stolen', isActive: false, templates: [] }],
      ['DELETE'],
    ];
    for (const [method, payload] of routes) {
      const response = await otherApi(method, `/sms-agent/campaigns/${campaign.id}`, payload);
      expect(response.statusCode, method).toBe(404);
      expect(response.json(), method).toMatchObject({ code: 'NOT_FOUND', message: 'SMS campaign not found.' });
      expect(response.body, method).not.toContain(owner.tenantId);
    }
    const theirs = (await otherApi('GET', '/sms-agent/campaigns?limit=200')).json();
    expect((theirs.data as SmsCampaign[]).map((c) => c.id)).not.toContain(campaign.id);
    expect((theirs.data as SmsCampaign[]).every((c) => c.tenantId !== owner.tenantId)).toBe(true);
    expect((await otherApi('GET', `/sms-agent/campaigns?agentId=${campaign.agentId}`)).json()).toMatchObject({ data: [], total: 0 });
    expect((await api('GET', `/sms-agent/campaigns/${campaign.id}`)).json()).toEqual(campaign);
  });

  it("cannot create a campaign for another tenant's agent (404), even one that has none yet", async () => {
    const agent = await newAgent();
    const response = await otherApi('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
      templates: [answered],
    });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND', message: 'Agent not found.' });
    expect((await api('GET', `/sms-agent/campaigns?agentId=${agent.id}`)).json().total).toBe(0);
    await newCampaign({ agentId: agent.id });
  });
});

describe('SMS and WhatsApp provider integrations', () => {
  const storedSecrets = async (tenantId: string, kind: string) => {
    const { rows } = await t.runtime.db.query<{ secrets_sealed: string; settings: unknown }>(
      'SELECT secrets_sealed, settings FROM integrations WHERE tenant_id = $1 AND kind = $2',
      [tenantId, kind],
    );
    expect(rows).toHaveLength(1);
    return rows[0]!;
  };

  it('stores the MSG91 authKey sealed and never returns it; dashboard sessions only', async () => {
    const tenant = await signUp(t.app);
    const { key } = await createKey(t.app, tenant.token);
    const dashboard = apiAs(t.app, tenant.token);
    const authKey = `msg91-${randomUUID()}`;

    const byKey = await apiAs(t.app, key)('PUT', '/integrations/msg91', { authKey });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().message).toBe('API key authentication is not allowed for this route');
    expect((await apiAs(t.app, key)('GET', '/integrations/msg91')).statusCode).toBe(403);
    expect((await dashboard('GET', '/integrations/msg91')).statusCode).toBe(404);

    const put = await dashboard('PUT', '/integrations/msg91', { authKey });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({
      kind: 'msg91',
      settings: {},
      secretsSet: ['authKey'],
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    expect(put.body).not.toContain(authKey);

    const get = await dashboard('GET', '/integrations/msg91');
    expect(get.statusCode).toBe(200);
    expect(get.json()).toEqual(put.json());
    expect(get.body).not.toContain(authKey);
    const list = await dashboard('GET', '/integrations');
    expect(list.json().data).toEqual([put.json()]);
    expect(list.body).not.toContain(authKey);

    const row = await storedSecrets(tenant.tenantId, 'msg91');
    expect(row.secrets_sealed).not.toContain(authKey);
    expect(row.secrets_sealed).not.toContain(Buffer.from(authKey).toString('base64url'));
    expect(JSON.stringify(row.settings)).not.toContain(authKey);
    expect(JSON.parse(t.runtime.serverKeys.open(row.secrets_sealed))).toEqual({ authKey });

    expect((await dashboard('PUT', '/integrations/msg91', { authKey: 'short' })).statusCode).toBe(400);
    expect((await dashboard('PUT', '/integrations/msg91', { authKey, senderId: 'CALLFG' })).statusCode).toBe(400);
  });

  it('stores the WhatsApp accessToken and appSecret sealed, shows the account and sender ids as settings', async () => {
    const tenant = await signUp(t.app);
    const { key } = await createKey(t.app, tenant.token);
    const dashboard = apiAs(t.app, tenant.token);
    const accessToken = `EAAG${randomUUID().replaceAll('-', '')}`;
    const appSecret = randomUUID().replaceAll('-', '');
    const body = { businessAccountId: '1234567890', accessToken, appSecret, phoneNumberId: '1098765432' };

    const byKey = await apiAs(t.app, key)('PUT', '/integrations/whatsapp', body);
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().message).toBe('API key authentication is not allowed for this route');

    const put = await dashboard('PUT', '/integrations/whatsapp', body);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({
      kind: 'whatsapp',
      settings: { businessAccountId: '1234567890', phoneNumberId: '1098765432' },
      secretsSet: ['accessToken', 'appSecret'],
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const get = await dashboard('GET', '/integrations/whatsapp');
    expect(get.statusCode).toBe(200);
    expect(get.json()).toEqual(put.json());
    for (const response of [put, get]) {
      expect(response.body).not.toContain(accessToken);
      expect(response.body).not.toContain(appSecret);
    }

    const row = await storedSecrets(tenant.tenantId, 'whatsapp');
    expect(row.secrets_sealed).not.toContain(accessToken);
    expect(row.secrets_sealed).not.toContain(appSecret);
    expect(JSON.stringify(row.settings)).not.toContain(accessToken);
    expect(JSON.stringify(row.settings)).not.toContain(appSecret);
    expect(JSON.parse(t.runtime.serverKeys.open(row.secrets_sealed))).toEqual({ accessToken, appSecret });

    expect((await dashboard('PUT', '/integrations/whatsapp', { ...body, appSecret: 'too-short' })).statusCode).toBe(400);
    expect((await dashboard('PUT', '/integrations/whatsapp', { ...body, accessToken: 'too-short' })).statusCode).toBe(400);
  });
});

describe('GET /messages', () => {
  it('refuses a channel that is not WHATSAPP or SMS, and a limit over 200, with 400', async () => {
    for (const query of ['channel=fax', 'channel=', 'channel=SMSX', 'limit=201', 'limit=0']) {
      const response = await api('GET', `/messages?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json().code, query).toBe('VALIDATION_FAILED');
    }
    expect((await api('GET', '/messages?limit=200')).statusCode).toBe(200);
  });

  it('answers an empty page for a fresh tenant with channel=sms and channel=WHATSAPP', async () => {
    const tenant = await signUp(t.app);
    const tenantApi = apiAs(t.app, (await createKey(t.app, tenant.token)).key);
    for (const channel of ['sms', 'WHATSAPP', 'Sms', 'whatsapp']) {
      const response = await tenantApi('GET', `/messages?channel=${channel}`);
      expect(response.statusCode, channel).toBe(200);
      expect(response.json(), channel).toEqual({ data: [], total: 0, page: 1, limit: 25 });
    }
  });

  it("filters by channel in any case, and shows only the tenant's own messages", async () => {
    const tenant = await signUp(t.app);
    const tenantApi = apiAs(t.app, (await createKey(t.app, tenant.token)).key);
    const callId = randomUUID();
    const message = (channel: 'SMS' | 'WHATSAPP') => ({
      id: randomUUID(),
      channel,
      call_id: callId,
      agent_id: null,
      campaign_id: null,
      contact_id: null,
      to_number: '+12125551000',
      sender: '+14155550123',
      provider: channel === 'SMS' ? 'SIMULATOR' : 'WHATSAPP',
      template_name: null,
      language_code: null,
      body: 'Hello',
      parameters: [],
      dlt_sender_id: null,
      dlt_template_id: null,
      encoding: null,
      segments: null,
    });
    const sms = message('SMS');
    const whatsapp = message('WHATSAPP');
    expect(await messagingRepo.insertMessages(t.runtime.db, tenant.tenantId, [sms, whatsapp])).toHaveLength(2);

    const smsPage = (await tenantApi('GET', '/messages?channel=sms')).json();
    expect(smsPage).toMatchObject({ total: 1, page: 1, limit: 25 });
    expect(smsPage.data).toEqual([expect.objectContaining({ id: sms.id, channel: 'SMS', callId, status: 'QUEUED' })]);
    const whatsappPage = (await tenantApi('GET', '/messages?channel=WHATSAPP')).json();
    expect(whatsappPage.total).toBe(1);
    expect(whatsappPage.data[0].id).toBe(whatsapp.id);
    expect((await tenantApi('GET', '/messages')).json().total).toBe(2);
    expect((await otherApi('GET', `/messages?callId=${callId}`)).json()).toMatchObject({ data: [], total: 0 });
  });
});
