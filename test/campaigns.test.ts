import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { creditWallet } from '../src/modules/identity/service.ts';
import { startTestApp, twoTenantKeys, type TestApp } from './harness.ts';
import { apiAs, createCampaign, voiceSetup } from './voice-fixtures.ts';

// Seed §2.4, §3, §4.3, §8 and contract §5, through HTTP on a real database.
let t: TestApp;
let key: string;
let otherKey: string;
let api: ReturnType<typeof apiAs>;
let setup: Awaited<ReturnType<typeof voiceSetup>>;

beforeAll(async () => {
  t = await startTestApp();
  ({ key, otherKey } = await twoTenantKeys(t.app));
  api = apiAs(t.app, key);
  setup = await voiceSetup(t.app, key);
});
afterAll(() => t.close());

const ready = () => ({ agentId: setup.agentId, voiceNumberId: setup.voiceNumberId, contactListId: setup.contactListId });
const statusOf = async (id: string) => (await api('GET', `/campaigns/${id}`)).json().status as string;

/** A campaign brought to `status` through the API. */
async function campaignIn(status: 'DRAFT' | 'SCHEDULED' | 'RUNNING' | 'PAUSED' | 'CANCELLED') {
  const campaign = await createCampaign(
    t.app,
    key,
    status === 'SCHEDULED' ? { ...ready(), scheduledAt: '2099-01-01T09:00:00.000Z' } : ready(),
  );
  if (status === 'RUNNING' || status === 'PAUSED') expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
  if (status === 'PAUSED') expect((await api('POST', `/campaigns/${campaign.id}/pause`, {})).statusCode).toBe(202);
  if (status === 'CANCELLED') expect((await api('POST', `/campaigns/${campaign.id}/cancel`, {})).statusCode).toBe(202);
  expect(await statusOf(campaign.id)).toBe(status);
  return campaign.id;
}

describe('creating a campaign', () => {
  it('creates a DRAFT with the contract defaults', async () => {
    const response = await api('POST', '/campaigns', { name: 'Reminders' });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({
      name: 'Reminders',
      status: 'DRAFT',
      timezone: 'UTC',
      callWindowStart: '09:00',
      callWindowEnd: '18:00',
      callDays: [1, 2, 3, 4, 5],
      dialTimeout: 30,
      maxAttempts: 3,
      redialDelayMin: 60,
      maxConcurrentCalls: 5,
      scheduledAt: null,
      agentId: null,
    });
  });

  it('creates a SCHEDULED campaign when scheduledAt is given', async () => {
    const campaign = await createCampaign(t.app, key, { ...ready(), scheduledAt: '2099-03-01T10:00:00.000Z' });
    expect(campaign).toMatchObject({ status: 'SCHEDULED', scheduledAt: '2099-03-01T10:00:00.000Z' });
  });

  it('refuses a duplicate name in the tenant with 409, whatever the case', async () => {
    await createCampaign(t.app, key, { name: 'Collections Q4' });
    const response = await api('POST', '/campaigns', { name: 'collections q4' });
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('CAMPAIGN_NAME_TAKEN');
    expect((await apiAs(t.app, otherKey)('POST', '/campaigns', { name: 'Collections Q4' })).statusCode).toBe(201);
  });

  it.each([
    ['dialTimeout', 9, 400],
    ['dialTimeout', 10, 201],
    ['dialTimeout', 300, 201],
    ['dialTimeout', 301, 400],
    ['maxAttempts', 0, 400],
    ['maxAttempts', 1, 201],
    ['maxAttempts', 10, 201],
    ['maxAttempts', 11, 400],
    ['redialDelayMin', 0, 400],
    ['redialDelayMin', 1, 201],
    ['maxConcurrentCalls', 0, 400],
    ['maxConcurrentCalls', 50, 201],
    ['maxConcurrentCalls', 51, 400],
  ])('answers %s = %i with %i', async (field, value, status) => {
    const response = await api('POST', '/campaigns', { name: `Range ${field} ${value} ${randomUUID()}`, [field]: value });
    expect(response.statusCode).toBe(status);
    if (status === 400) expect(response.json().details[0].path).toBe(`/${field}`);
  });

  it.each([
    [{ callWindowStart: '9:00' }, '/callWindowStart'],
    [{ callWindowEnd: '24:00' }, '/callWindowEnd'],
    [{ callWindowStart: '18:00', callWindowEnd: '09:00' }, '/callWindowStart'],
    [{ callWindowStart: '10:00', callWindowEnd: '10:00' }, '/callWindowStart'],
    [{ timezone: 'Mars/Olympus_Mons' }, '/timezone'],
    [{ callDays: [0] }, '/callDays/0'],
    [{ callDays: [8] }, '/callDays/0'],
    [{ callDays: [] }, '/callDays'],
    [{ scheduledAt: 'tomorrow' }, '/scheduledAt'],
    [{ surprise: true }, '/surprise'],
  ])('refuses %j with 400 naming the field', async (body, path) => {
    const response = await api('POST', '/campaigns', { name: `Bad ${randomUUID()}`, ...body });
    expect(response.statusCode).toBe(400);
    expect(response.json().details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('accepts callDays 1 (Monday) to 7 (Sunday) and an IANA timezone', async () => {
    const campaign = await createCampaign(t.app, key, { callDays: [1, 7], timezone: 'America/New_York' });
    expect(campaign).toMatchObject({ callDays: [1, 7], timezone: 'America/New_York' });
    // A city that names one zone is stored as that zone.
    expect(await createCampaign(t.app, key, { timezone: 'Berlin' })).toMatchObject({ timezone: 'Europe/Berlin' });
    const changed = await api('PATCH', `/campaigns/${campaign.id}`, { timezone: 'tokyo' });
    expect([changed.statusCode, changed.json().timezone]).toEqual([200, 'Asia/Tokyo']);
    expect((await api('PATCH', `/campaigns/${campaign.id}`, { timezone: 'Atlantis' })).json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'Unknown time zone "Atlantis"; use an IANA name such as America/New_York, or a city that names one zone, such as Berlin.',
    });
  });

  it('refuses a list of 1 contact with 400 and accepts one of 2', async () => {
    const one = (await api('POST', '/contact-lists', { name: `One ${randomUUID()}` })).json();
    await api('POST', `/contact-lists/${one.id}/contacts`, { phoneNumber: '+12125550100' });
    const refused = await api('POST', '/campaigns', { name: `Small ${randomUUID()}`, contactListId: one.id });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'LIST_TOO_SMALL' });
    expect(refused.json().message).toMatch(/at least 2 contacts/);
    await api('POST', `/contact-lists/${one.id}/contacts`, { phoneNumber: '+12125550101' });
    expect((await api('POST', '/campaigns', { name: `Two ${randomUUID()}`, contactListId: one.id })).statusCode).toBe(201);
  });

  it("answers 404 for an unknown or another tenant's agent, number or list", async () => {
    const theirs = await voiceSetup(t.app, otherKey);
    for (const field of ['agentId', 'voiceNumberId', 'contactListId'] as const) {
      expect((await api('POST', '/campaigns', { name: `Ref ${randomUUID()}`, [field]: randomUUID() })).statusCode).toBe(404);
      expect((await api('POST', '/campaigns', { name: `Ref ${randomUUID()}`, [field]: theirs[field] })).statusCode).toBe(404);
    }
  });
});

describe('updating a campaign (seed §4.3)', () => {
  it('updates a DRAFT and answers with the seed fields', async () => {
    const { id } = await createCampaign(t.app, key, {});
    const response = await api('PATCH', `/campaigns/${id}`, {
      callWindowStart: '10:00',
      callWindowEnd: '16:30',
      maxAttempts: 5,
      redialDelayMin: 1,
      description: 'second round',
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    for (const field of ['id', 'name', 'status', 'callWindowStart', 'callWindowEnd', 'maxAttempts', 'redialDelayMin', 'updatedAt'])
      expect(body).toHaveProperty(field);
    expect(body).toMatchObject({
      id,
      status: 'DRAFT',
      callWindowStart: '10:00',
      callWindowEnd: '16:30',
      maxAttempts: 5,
      redialDelayMin: 1,
      description: 'second round',
    });
  });

  it('moves a DRAFT to SCHEDULED when scheduledAt is set', async () => {
    const { id } = await createCampaign(t.app, key, ready());
    const response = await api('PATCH', `/campaigns/${id}`, { scheduledAt: '2099-05-01T08:00:00.000Z' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ status: 'SCHEDULED', scheduledAt: '2099-05-01T08:00:00.000Z' });
  });

  it('checks the window against the stored value when only one end changes', async () => {
    const { id } = await createCampaign(t.app, key, { callWindowStart: '09:00', callWindowEnd: '12:00' });
    expect((await api('PATCH', `/campaigns/${id}`, { callWindowStart: '12:00' })).statusCode).toBe(400);
    expect((await api('PATCH', `/campaigns/${id}`, { callWindowStart: '11:59' })).statusCode).toBe(200);
  });

  it.each(['SCHEDULED', 'RUNNING', 'PAUSED', 'CANCELLED'] as const)('refuses to update a %s campaign with 409', async (status) => {
    const id = await campaignIn(status);
    const response = await api('PATCH', `/campaigns/${id}`, { name: `Renamed ${randomUUID()}` });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ code: 'CAMPAIGN_NOT_DRAFT' });
    expect(response.json().message).toContain(status);
  });

  it('applies the §8 ranges on update too', async () => {
    const { id } = await createCampaign(t.app, key, {});
    for (const [field, value] of [
      ['dialTimeout', 301],
      ['maxAttempts', 11],
      ['redialDelayMin', 0],
    ] as const) {
      expect((await api('PATCH', `/campaigns/${id}`, { [field]: value })).statusCode).toBe(400);
    }
  });
});

describe('lifecycle', () => {
  it('starts a DRAFT: RUNNING, contacts copied, stats live', async () => {
    const { id } = await createCampaign(t.app, key, ready());
    const response = await api('POST', `/campaigns/${id}/start`);
    expect(response.statusCode).toBe(202);
    expect(response.body).toBe('');
    const campaign = (await api('GET', `/campaigns/${id}`)).json();
    expect(campaign).toMatchObject({
      status: 'RUNNING',
      stats: { total: 2, pending: 2, retrying: 0, inProgress: 0, answered: 0, unanswered: 0, busy: 0, failed: 0, skipped: 0 },
    });
    expect(campaign.startedAt).not.toBeNull();
    // The list carries each campaign's stats too (one grouped query for the page).
    const listed = (await api('GET', '/campaigns?status=RUNNING&limit=200')).json().data.find((item: { id: string }) => item.id === id);
    expect(listed.stats).toEqual(campaign.stats);
    const contacts = (await api('GET', `/campaigns/${id}/contacts`)).json();
    expect(contacts).toMatchObject({ total: 2, page: 1, limit: 25 });
    expect(contacts.data[0]).toMatchObject({ status: 'PENDING', attempts: 0, lastOutcome: null, phoneNumber: '+12125551000' });
  });

  it.each(['DRAFT', 'SCHEDULED', 'RUNNING', 'CANCELLED'] as const)('refuses to resume a %s campaign with 409', async (status) => {
    const id = await campaignIn(status);
    const response = await api('POST', `/campaigns/${id}/resume`, {});
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('CAMPAIGN_NOT_PAUSED');
    expect(await statusOf(id)).toBe(status);
  });

  it('resumes a PAUSED campaign with 202 and no body, with or without an empty object', async () => {
    const id = await campaignIn('PAUSED');
    const response = await api('POST', `/campaigns/${id}/resume`, {});
    expect(response.statusCode).toBe(202);
    expect(response.body).toBe('');
    expect(await statusOf(id)).toBe('RUNNING');
    await api('POST', `/campaigns/${id}/pause`);
    // Anything but an empty object is refused, and the campaign stays as it was.
    const withField = await api('POST', `/campaigns/${id}/resume`, { force: true });
    expect(withField.statusCode).toBe(400);
    expect(withField.json().code).toBe('VALIDATION_FAILED');
    expect(await statusOf(id)).toBe('PAUSED');
    expect((await api('POST', `/campaigns/${id}/resume`)).statusCode).toBe(202);
  });

  it.each([
    ['start', ['RUNNING', 'PAUSED', 'CANCELLED']],
    ['pause', ['DRAFT', 'SCHEDULED', 'PAUSED', 'CANCELLED']],
    ['cancel', ['CANCELLED']],
  ] as const)('refuses %s from %j with 409', async (action, statuses) => {
    for (const status of statuses) {
      const id = await campaignIn(status);
      expect((await api('POST', `/campaigns/${id}/${action}`, {})).statusCode).toBe(409);
      expect(await statusOf(id)).toBe(status);
    }
  });

  it.each(['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED'] as const)('cancels a %s campaign', async (status) => {
    const id = await campaignIn(status);
    expect((await api('POST', `/campaigns/${id}/cancel`)).statusCode).toBe(202);
    const campaign = (await api('GET', `/campaigns/${id}`)).json();
    expect(campaign.status).toBe('CANCELLED');
    expect(campaign.completedAt).not.toBeNull();
  });

  it('refuses to start without an agent, a voice number or a list, saying which', async () => {
    for (const missing of ['agentId', 'voiceNumberId', 'contactListId'] as const) {
      const { id } = await createCampaign(t.app, key, { ...ready(), [missing]: null });
      const response = await api('POST', `/campaigns/${id}/start`);
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: 'CAMPAIGN_NOT_READY' });
      expect(response.json().message).toContain(missing);
    }
  });

  it('refuses to start or resume on an empty wallet', async () => {
    const poorKey = (await twoTenantKeys(t.app)).key;
    const poor = apiAs(t.app, poorKey);
    const poorSetup = await voiceSetup(t.app, poorKey);
    const profile = (await poor('GET', '/profile')).json().data;
    const paused = await createCampaign(t.app, poorKey, poorSetup);
    await poor('POST', `/campaigns/${paused.id}/start`);
    await poor('POST', `/campaigns/${paused.id}/pause`);
    await creditWallet(t.runtime.db, profile.tenant.id, `-${profile.wallet.balance}`, 'test: empty the wallet');
    const draft = await createCampaign(t.app, poorKey, poorSetup);
    const start = await poor('POST', `/campaigns/${draft.id}/start`);
    expect(start.statusCode).toBe(409);
    expect(start.json()).toMatchObject({ code: 'WALLET_EMPTY' });
    expect(start.json().message).toMatch(/credit the wallet/);
    expect((await poor('POST', `/campaigns/${paused.id}/resume`)).json().code).toBe('WALLET_EMPTY');
  });

  it('copies the list as it is when the campaign starts', async () => {
    const mine = await voiceSetup(t.app, key, [{}, {}, {}]);
    const { id } = await createCampaign(t.app, key, mine);
    await api('POST', `/campaigns/${id}/start`);
    await api('POST', `/contact-lists/${mine.contactListId}/contacts`, { phoneNumber: '+12125559999' });
    expect((await api('GET', `/campaigns/${id}`)).json().stats.total).toBe(3);
  });
});

describe('deleting', () => {
  it.each([
    ['DRAFT', 204],
    ['SCHEDULED', 409],
    ['RUNNING', 409],
    ['PAUSED', 409],
    ['CANCELLED', 204],
  ] as const)('answers DELETE of a %s campaign with %i', async (status, code) => {
    const id = await campaignIn(status);
    const response = await api('DELETE', `/campaigns/${id}`);
    expect(response.statusCode).toBe(code);
    if (code === 409) expect(response.json().code).toBe('CAMPAIGN_NOT_DELETABLE');
    expect((await api('GET', `/campaigns/${id}`)).statusCode).toBe(code === 204 ? 404 : 200);
  });

  it('refuses to delete a contact list while an unfinished campaign uses it (seed §4.4), and allows it after', async () => {
    const mine = await voiceSetup(t.app, key);
    const { id } = await createCampaign(t.app, key, mine);
    const refused = await api('DELETE', `/contact-lists/${mine.contactListId}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('LIST_IN_USE');
    await api('POST', `/campaigns/${id}/cancel`);
    expect((await api('DELETE', `/contact-lists/${mine.contactListId}`)).statusCode).toBe(204);
    expect((await api('GET', `/campaigns/${id}`)).json().contactListId).toBeNull();
  });

  it('refuses to delete an agent or voice number an unfinished campaign uses', async () => {
    const mine = await voiceSetup(t.app, key);
    await createCampaign(t.app, key, mine);
    expect((await api('DELETE', `/agents/${mine.agentId}`)).json().code).toBe('AGENT_IN_USE');
    expect((await api('DELETE', `/voice-numbers/${mine.voiceNumberId}`)).json().code).toBe('VOICE_NUMBER_IN_USE');
  });
});

describe('listing', () => {
  it('filters by status and agent, paginated', async () => {
    const mine = await voiceSetup(t.app, key);
    const a = await createCampaign(t.app, key, mine);
    await createCampaign(t.app, key, { ...mine, scheduledAt: '2099-01-01T00:00:00.000Z' });
    const byAgent = (await api('GET', `/campaigns?agentId=${mine.agentId}`)).json();
    expect(byAgent.total).toBe(2);
    const drafts = (await api('GET', `/campaigns?agentId=${mine.agentId}&status=DRAFT`)).json();
    expect(drafts).toMatchObject({ total: 1, page: 1, limit: 25 });
    expect(drafts.data[0].id).toBe(a.id);
    expect((await api('GET', '/campaigns?status=DONE')).statusCode).toBe(400);
    expect((await api('GET', '/campaigns?limit=200')).statusCode).toBe(200);
    expect((await api('GET', '/campaigns?limit=201')).statusCode).toBe(400);
    expect((await api('GET', '/campaigns?limit=1&page=2')).json()).toMatchObject({ page: 2, limit: 1 });
  });
});

describe('tenant isolation', () => {
  it("answers 404 on every campaign route for another tenant's campaign", async () => {
    const theirs = await createCampaign(t.app, otherKey, {});
    const routes: ['GET' | 'PATCH' | 'DELETE' | 'POST', string, unknown?][] = [
      ['GET', `/campaigns/${theirs.id}`],
      ['GET', `/campaigns/${theirs.id}/contacts`],
      ['PATCH', `/campaigns/${theirs.id}`, { name: 'mine now' }],
      ['DELETE', `/campaigns/${theirs.id}`],
      ['POST', `/campaigns/${theirs.id}/start`, {}],
      ['POST', `/campaigns/${theirs.id}/pause`, {}],
      ['POST', `/campaigns/${theirs.id}/resume`, {}],
      ['POST', `/campaigns/${theirs.id}/cancel`, {}],
    ];
    for (const [method, url, body] of routes) expect((await api(method, url, body)).statusCode, `${method} ${url}`).toBe(404);
    expect((await api('GET', '/campaigns?limit=200')).json().data.map((c: { id: string }) => c.id)).not.toContain(theirs.id);
    expect((await apiAs(t.app, otherKey)('GET', `/campaigns/${theirs.id}`)).json().status).toBe('DRAFT');
  });
});
