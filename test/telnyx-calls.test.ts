import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { startFakeTelnyx, type FakeTelnyx } from '../src/providers/telnyx/fake.ts';
import { bearer, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs, createCampaign, newTenant, uniqueNumber } from './voice-fixtures.ts';

// A second telephony and SMS provider through the API, end to end: TELNYX numbers place calls
// through Call Control (a local fake speaking Telnyx's wire format), signed call events move them,
// and an SMS follow-up goes out through Telnyx Messaging with its signed delivery report.
const apiKey = 'KEY0195F3C27A107000_telnyx-e2e-key';
const connectionId = '1494404757140276705';
const INVALID = '+12125551002';
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let telnyx: FakeTelnyx;
let publicUrl: string;

beforeAll(async () => {
  telnyx = await startFakeTelnyx({ apiKey, invalidNumbers: [INVALID], now: () => clock.now() });
  const port = await freeLoopbackPort();
  publicUrl = `http://127.0.0.1:${port}`;
  t = await startTestApp({ clock, env: { PUBLIC_URL: publicUrl, TELNYX_API_URL: telnyx.url, JOBS_POLL_SECONDS: '0.5' } });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
  await t.app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await t.close();
  await telnyx.close();
});

async function telnyxTenant() {
  const { owner, key, api } = await newTenant(t.app, {
    kind: 'telnyx',
    credentials: { apiKey, connectionId, publicKey: telnyx.publicKey },
  });
  const agent = (await api('POST', '/agents', { name: 'Telnyx agent' })).json();
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TELNYX' })).json();
  expect(number.provider).toBe('TELNYX');
  const list = (await api('POST', '/contact-lists', { name: 'Telnyx list' })).json();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: ['+12125551000', '+12125551001', INVALID].map((phoneNumber) => ({ phoneNumber })),
  });
  const campaign = await createCampaign(t.app, key, {
    agentId: agent.id,
    voiceNumberId: number.id,
    contactListId: list.id,
    timezone: 'UTC',
    dialTimeout: 25,
    maxAttempts: 1,
  });
  return { owner, api, agentId: agent.id as string, campaignId: campaign.id, from: number.phoneNumber as string };
}

type LoggedCall = {
  id: string;
  toNumber: string;
  status: string;
  outcome: string | null;
  durationSec: number | null;
  failureReason: string | null;
};
const callTo = async (api: ReturnType<typeof apiAs>, to: string) =>
  ((await api('GET', '/call-logs?limit=200')).json().data as LoggedCall[]).find((call) => call.toNumber === to)!;
const callControlIdFor = (to: string) => [...telnyx.calls.values()].filter((call) => call.to === to).at(-1)!.callControlId;

describe('Telnyx calls and SMS', () => {
  it('keeps the API key sealed and shows the connection id and public key as settings', async () => {
    const { owner } = await telnyxTenant();
    const shown = await t.app.inject({ method: 'GET', url: '/api/v1/integrations/telnyx', headers: bearer(owner.token) });
    expect(shown.json()).toMatchObject({ kind: 'telnyx', settings: { connectionId, publicKey: telnyx.publicKey }, secretsSet: ['apiKey'] });
    expect(shown.body).not.toContain(apiKey);
    const bad = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/integrations/telnyx',
      headers: bearer(owner.token),
      payload: { apiKey, connectionId, publicKey: 'not-a-key' },
    });
    expect(bad.statusCode).toBe(400);
  });

  it('dials through Call Control, follows signed call events to ANSWERED, and sends the SMS follow-up through Telnyx', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { api, agentId, campaignId, from } = await telnyxTenant();
    const sms = await api('POST', '/sms-agent/campaigns', {
      agentId,
      senderNumber: '+14155550000',
      senderProvider: 'TELNYX',
      templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks for talking with us' }],
    });
    expect(sms.statusCode).toBe(201);
    expect((await api('POST', `/campaigns/${campaignId}/start`, {})).statusCode).toBe(202);
    const sent = telnyx.requests.length;
    await dialerTick(t.runtime);

    const dials = telnyx.requests.slice(sent).filter((request) => request.path === '/v2/calls');
    expect(dials).toHaveLength(3);
    for (const dial of dials) {
      expect(dial.authorized).toBe(true);
      expect(dial.body).toMatchObject({
        connection_id: connectionId,
        from,
        timeout_secs: 25,
        webhook_url: `${publicUrl}/api/v1/telephony/telnyx/status`,
        webhook_url_method: 'POST',
        stream_url: `${publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/telnyx/media`,
      });
    }
    // client_state carries our call id.
    const answered = await callTo(api, '+12125551000');
    const dialled = dials.find((dial) => dial.body!.to === '+12125551000')!;
    expect(Buffer.from(dialled.body!.client_state as string, 'base64').toString()).toBe(answered.id);
    // The invalid number is refused by Telnyx for good.
    expect(await callTo(api, INVALID)).toMatchObject({ status: 'ENDED', outcome: 'FAILED' });
    expect((await callTo(api, INVALID)).failureReason).toContain('Telnyx error 10002');

    const id = callControlIdFor('+12125551000');
    expect(answered.status).toBe('RINGING');
    expect(await telnyx.sendCallEvent(id, 'call.initiated')).toBe(204);
    expect((await callTo(api, '+12125551000')).status).toBe('RINGING');
    expect(await telnyx.sendCallEvent(id, 'call.answered')).toBe(204);
    expect((await callTo(api, '+12125551000')).status).toBe('IN_PROGRESS');
    clock.advance(42_000);
    expect(await telnyx.sendCallEvent(id, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'callee' })).toBe(204);
    expect(await callTo(api, '+12125551000')).toMatchObject({ status: 'ENDED', outcome: 'ANSWERED', durationSec: 42 });

    const busy = callControlIdFor('+12125551001');
    expect(await telnyx.sendCallEvent(busy, 'call.hangup', { hangup_cause: 'user_busy', sip_hangup_cause: '486' })).toBe(204);
    expect(await callTo(api, '+12125551001')).toMatchObject({ status: 'ENDED', outcome: 'BUSY' });
    await dialerTick(t.runtime);
    expect((await api('GET', `/campaigns/${campaignId}`)).json()).toMatchObject({
      status: 'COMPLETED',
      stats: { total: 3, answered: 1, failed: 1 },
    });

    // The answered call's follow-up SMS leaves through Telnyx Messaging with its own webhook_url.
    const message = await until('the follow-up SMS', async () => {
      const [logged] = (await api('GET', `/messages?callId=${answered.id}&channel=sms`)).json().data as {
        providerMessageId: string | null;
        status: string;
      }[];
      return logged?.status === 'SENT' && logged;
    });
    const atTelnyx = telnyx.messages.get(message.providerMessageId!)!;
    expect(atTelnyx).toMatchObject({ from: '+14155550000', to: '+12125551000', text: 'Thanks for talking with us' });
    expect(atTelnyx.webhookUrl).toMatch(
      new RegExp(`^${publicUrl}/api/v1/messages/telnyx-status\\?tenant=[0-9a-f-]{36}&message=[0-9a-f-]{36}$`),
    );
    const forger = generateKeyPairSync('ed25519');
    expect(
      await telnyx.sendMessageEvent(message.providerMessageId!, 'message.finalized', 'delivered', {}, { privateKey: forger.privateKey }),
    ).toBe(403);
    expect(await telnyx.sendMessageEvent(message.providerMessageId!, 'message.sent', 'sent')).toBe(204);
    expect(await telnyx.sendMessageEvent(message.providerMessageId!, 'message.finalized', 'delivered')).toBe(204);
    expect((await api('GET', `/messages?callId=${answered.id}&channel=sms`)).json().data[0]).toMatchObject({
      status: 'DELIVERED',
      deliveredAt: expect.any(String),
    });
  });

  it('refuses a forged call event with 403, changing nothing', async () => {
    clock.set('2026-11-23T11:00:00.000Z');
    const { api, campaignId } = await telnyxTenant();
    await api('POST', `/campaigns/${campaignId}/start`, {});
    await dialerTick(t.runtime);
    const id = callControlIdFor('+12125551000');
    const forger = generateKeyPairSync('ed25519');
    expect(await telnyx.sendCallEvent(id, 'call.hangup', { hangup_cause: 'normal_clearing' }, { privateKey: forger.privateKey })).toBe(403);

    const body = JSON.stringify({ data: { event_type: 'call.hangup', payload: { call_control_id: id, hangup_cause: 'user_busy' } } });
    const unsigned = await fetch(`${publicUrl}/api/v1/telephony/telnyx/status`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'telnyx-timestamp': '1795000000' },
      body,
    });
    expect(unsigned.status).toBe(403);
    expect(await unsigned.json()).toMatchObject({
      code: 'INVALID_SIGNATURE',
      message: 'The telnyx-signature-ed25519 header does not match this request.',
    });
    expect((await callTo(api, '+12125551000')).status).toBe('RINGING');

    // A genuine event replayed six minutes after it was signed is refused too.
    const signedSixMinutesAgo = Math.floor(clock.now().getTime() / 1000) - 360;
    expect(await telnyx.sendCallEvent(id, 'call.hangup', { hangup_cause: 'normal_clearing' }, { timestamp: signedSixMinutesAgo })).toBe(
      403,
    );
    expect((await callTo(api, '+12125551000')).status).toBe('RINGING');
  });

  it('hangs up a Telnyx call through Call Control; its hangup event ends it', async () => {
    clock.set('2026-11-23T12:00:00.000Z');
    const { api, campaignId } = await telnyxTenant();
    await api('POST', `/campaigns/${campaignId}/start`, {});
    await dialerTick(t.runtime);
    const id = callControlIdFor('+12125551000');
    await telnyx.sendCallEvent(id, 'call.answered');
    const call = await callTo(api, '+12125551000');
    clock.advance(5_000);
    expect((await api('POST', `/call-logs/${call.id}/hangup`, {})).statusCode).toBe(202);
    expect(telnyx.requests.at(-1)).toMatchObject({ path: `/v2/calls/${id}/actions/hangup`, authorized: true });
    expect(await telnyx.sendCallEvent(id, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'caller' })).toBe(204);
    expect(await callTo(api, '+12125551000')).toMatchObject({ status: 'ENDED', outcome: 'ANSWERED', durationSec: 5 });
  });
});
