import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { bearer, startTestApp, type TestApp } from './harness.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import { apiAs, createCampaign, newTenant, uniqueNumber } from './voice-fixtures.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';

// Contract §3 (integrations, calls) and issue 5: TWILIO numbers place real REST calls (here to a
// local fake speaking Twilio's wire format) and are driven by signed status callbacks.
const accountSid = `AC${randomBytes(16).toString('hex')}`;
const authToken = randomBytes(16).toString('hex');
const INVALID = '+12125551002';
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let twilio: FakeTwilio;
let publicUrl: string;

beforeAll(async () => {
  twilio = await startFakeTwilio({ accountSid, authToken, invalidNumbers: [INVALID] });
  const port = await freeLoopbackPort();
  publicUrl = `http://127.0.0.1:${port}`;
  t = await startTestApp({ clock, env: { PUBLIC_URL: publicUrl, TWILIO_API_URL: twilio.url } });
  await t.app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await t.close();
  await twilio.close();
});

async function twilioTenant(connect = true) {
  const { owner, key, api } = await newTenant(t.app, connect ? { kind: 'twilio', credentials: { accountSid, authToken } } : undefined);
  const agent = (await api('POST', '/agents', { name: 'Twilio agent' })).json();
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TWILIO' })).json();
  const list = (await api('POST', '/contact-lists', { name: 'Twilio list' })).json();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: ['+12125551000', '+12125551001', INVALID].map((phoneNumber) => ({ phoneNumber })),
  });
  const campaign = await createCampaign(t.app, key, {
    agentId: agent.id,
    voiceNumberId: number.id,
    contactListId: list.id,
    timezone: 'UTC',
    dialTimeout: 25,
    maxAttempts: 2,
    redialDelayMin: 1,
  });
  return { owner, key, api, campaignId: campaign.id, from: number.phoneNumber as string };
}

const callTo = async (api: ReturnType<typeof apiAs>, to: string) =>
  (
    (await api('GET', '/call-logs?limit=200')).json().data as {
      id: string;
      toNumber: string;
      status: string;
      outcome: string | null;
      attempt: number;
      durationSec: number | null;
      cost: { total: string } | null;
      failureReason: string | null;
    }[]
  )
    .filter((c) => c.toNumber === to)
    .sort((a, b) => a.attempt - b.attempt);
const sidFor = (to: string) => [...twilio.calls.values()].filter((c) => c.to === to).at(-1)!.sid;

describe('Twilio calls', () => {
  it('keeps the integration secret: stored sealed, never returned, dashboard only', async () => {
    const { owner, key } = await twilioTenant();
    const shown = await t.app.inject({ method: 'GET', url: '/api/v1/integrations/twilio', headers: bearer(owner.token) });
    expect(shown.json()).toMatchObject({ kind: 'twilio', settings: { accountSid }, secretsSet: ['authToken'] });
    expect(shown.body).not.toContain(authToken);
    const { rows } = await t.runtime.db.query<{ secrets_sealed: string }>('SELECT secrets_sealed FROM integrations WHERE tenant_id = $1', [
      owner.tenantId,
    ]);
    expect(rows[0]!.secrets_sealed).toMatch(/^v1\./);
    expect(rows[0]!.secrets_sealed).not.toContain(authToken);
    const byKey = await t.app.inject({ method: 'GET', url: '/api/v1/integrations/twilio', headers: bearer(key) });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().message).toBe('API key authentication is not allowed for this route');
    const bad = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/integrations/twilio',
      headers: bearer(owner.token),
      payload: { accountSid: 'nope', authToken },
    });
    expect(bad.statusCode).toBe(400);
  });

  it('dials through the REST API with Timeout and StatusCallback, and follows signed status callbacks', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { api, campaignId, from } = await twilioTenant();
    expect((await api('POST', `/campaigns/${campaignId}/start`, {})).statusCode).toBe(202);
    const sent = twilio.requests.length;
    await dialerTick(t.runtime);
    const dials = twilio.requests.slice(sent).filter((r) => r.method === 'POST' && r.path.endsWith('/Calls.json'));
    expect(dials).toHaveLength(3);
    for (const dial of dials) {
      expect(dial.authorized).toBe(true);
      expect(dial.path).toBe(`/2010-04-01/Accounts/${accountSid}/Calls.json`);
      expect(dial.form.get('From')).toBe(from);
      expect(dial.form.get('Timeout')).toBe('25');
      expect(dial.form.get('StatusCallback')).toBe(`${publicUrl}/api/v1/telephony/twilio/status`);
      expect(dial.form.getAll('StatusCallbackEvent')).toEqual(['initiated', 'ringing', 'answered', 'completed']);
    }

    // The invalid number is a permanent failure: FAILED once, never retried.
    expect((await callTo(api, INVALID))[0]).toMatchObject({ status: 'ENDED', outcome: 'FAILED' });

    const answered = sidFor('+12125551000');
    expect(await twilio.sendStatus(answered, 'ringing')).toBe(204);
    expect((await callTo(api, '+12125551000'))[0]!.status).toBe('RINGING');
    expect(await twilio.sendStatus(answered, 'in-progress')).toBe(204);
    expect((await callTo(api, '+12125551000'))[0]!.status).toBe('IN_PROGRESS');
    clock.advance(42_000);
    expect(await twilio.sendStatus(answered, 'completed', { CallDuration: '42' })).toBe(204);
    const done = (await callTo(api, '+12125551000'))[0]!;
    expect(done).toMatchObject({ status: 'ENDED', outcome: 'ANSWERED', durationSec: 42 });
    expect(done.cost!.total).not.toBe('0.0000');
    // A repeated final callback changes nothing (and debits nothing twice).
    const balance = (await api('GET', '/profile')).json().data.wallet.balance;
    expect(await twilio.sendStatus(answered, 'completed', { CallDuration: '42' })).toBe(204);
    expect((await api('GET', '/profile')).json().data.wallet.balance).toBe(balance);

    const busy = sidFor('+12125551001');
    expect(await twilio.sendStatus(busy, 'busy')).toBe(204);
    expect((await callTo(api, '+12125551001'))[0]).toMatchObject({ outcome: 'BUSY' });
    clock.advance(60_000);
    await dialerTick(t.runtime);
    expect(await twilio.sendStatus(sidFor('+12125551001'), 'no-answer')).toBe(204);
    expect((await callTo(api, '+12125551001')).map((c) => c.outcome)).toEqual(['BUSY', 'UNANSWERED']);

    await dialerTick(t.runtime);
    const campaign = (await api('GET', `/campaigns/${campaignId}`)).json();
    expect(campaign).toMatchObject({ status: 'COMPLETED', stats: { total: 3, answered: 1, unanswered: 1, failed: 1 } });
    expect(await callTo(api, INVALID)).toHaveLength(1);
  });

  it('refuses a callback whose signature does not match, changing nothing', async () => {
    clock.set('2026-11-23T11:00:00.000Z');
    const { api, campaignId } = await twilioTenant();
    await api('POST', `/campaigns/${campaignId}/start`, {});
    await dialerTick(t.runtime);
    const sid = sidFor('+12125551000');
    const form = new URLSearchParams({ CallSid: sid, AccountSid: accountSid, CallStatus: 'completed', CallDuration: '30' });
    for (const signature of [undefined, 'bm90IGEgc2lnbmF0dXJl']) {
      const response = await fetch(`${publicUrl}/api/v1/telephony/twilio/status`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature ? { 'x-twilio-signature': signature } : {}) },
        body: form.toString(),
      });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { code: string }).code).toBe('INVALID_SIGNATURE');
    }
    expect((await callTo(api, '+12125551000'))[0]!.status).toBe('RINGING');
  });

  it('hangs up a Twilio call at Twilio; its final callback ends it', async () => {
    clock.set('2026-11-23T12:00:00.000Z');
    const { api, campaignId } = await twilioTenant();
    await api('POST', `/campaigns/${campaignId}/start`, {});
    await dialerTick(t.runtime);
    const sid = sidFor('+12125551000');
    await twilio.sendStatus(sid, 'in-progress');
    const call = (await callTo(api, '+12125551000'))[0]!;
    expect((await api('POST', `/call-logs/${call.id}/hangup`, {})).statusCode).toBe(202);
    const hangup = twilio.requests.at(-1)!;
    expect(hangup.path).toBe(`/2010-04-01/Accounts/${accountSid}/Calls/${sid}.json`);
    expect(hangup.form.get('Status')).toBe('completed');
    await twilio.sendStatus(sid, 'completed', { CallDuration: '5' });
    expect((await callTo(api, '+12125551000'))[0]).toMatchObject({ status: 'ENDED', outcome: 'ANSWERED', durationSec: 5 });
  });

  it('pauses a campaign on a TWILIO number when Twilio is not connected, saying how to connect it', async () => {
    clock.set('2026-11-23T13:00:00.000Z');
    const { api, campaignId } = await twilioTenant(false);
    await api('POST', `/campaigns/${campaignId}/start`, {});
    await dialerTick(t.runtime);
    const campaign = (await api('GET', `/campaigns/${campaignId}`)).json();
    expect(campaign.status).toBe('PAUSED');
    expect(campaign.statusReason).toMatch(/Twilio is not connected; connect it with PUT \/api\/v1\/integrations\/twilio/);
    expect(campaign.stats.inProgress + campaign.stats.answered).toBe(0);
  });
});
