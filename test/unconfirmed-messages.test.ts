import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimForSending, insertMessages } from '../src/modules/messaging/repo.ts';
import { sendMessage } from '../src/modules/messaging/dispatch.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import { createKey, startTestApp, type TestApp } from './harness.ts';
import { tenantWith } from './voice-fixtures.ts';

// A message whose worker died between recording SENDING and the provider's answer: the retried
// send job settles it by the tenant's unconfirmedMessagePolicy and announces the outcome with a
// message.unconfirmed event. FAIL (the default) never sends twice; RESEND sends it once more.
const TWILIO = { accountSid: `AC${'d4'.repeat(16)}`, authToken: 'twilio-auth-token-unconfirmed' };
let t: TestApp;
let twilio: FakeTwilio;

beforeAll(async () => {
  twilio = await startFakeTwilio(TWILIO);
  t = await startTestApp({ env: { TWILIO_API_URL: twilio.url } });
});
afterAll(async () => {
  await t.close();
  await twilio.close();
});

async function tenant() {
  const { owner, api } = await tenantWith(t.app, { twilio: TWILIO });
  await createKey(t.app, owner.token, { name: 'hooks', webhookUrl: 'https://hooks.example.com/callforge' });
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  return { api, tenantId };
}

/** An SMS its worker claimed (SENDING, one attempt) and then died with: no answer recorded. */
async function interruptedSms(tenantId: string) {
  const id = randomUUID();
  await insertMessages(t.runtime.db, tenantId, [
    {
      id,
      channel: 'SMS',
      call_id: randomUUID(),
      agent_id: null,
      campaign_id: null,
      contact_id: null,
      to_number: '+12125550199',
      sender: '+14155550123',
      provider: 'TWILIO',
      template_name: null,
      language_code: null,
      body: 'Thanks for your time.',
      parameters: [],
      dlt_sender_id: null,
      dlt_template_id: null,
      encoding: 'GSM-7',
      segments: 1,
    },
  ]);
  expect(await claimForSending(t.runtime.db, tenantId, id)).toBeDefined();
  return id;
}

const sentTo = (id: string) => [...twilio.messages.values()].filter((m) => m.statusCallback?.includes(`message=${id}`)).length;

async function unconfirmedEvents(api: Awaited<ReturnType<typeof tenant>>['api']) {
  const page = (await api('GET', '/webhook-deliveries')).json() as { data: { eventType: string; payload: { data: unknown } }[] };
  return page.data.filter((d) => d.eventType === 'message.unconfirmed').map((d) => d.payload.data);
}

describe('GET and PUT /messages/settings', () => {
  it('answers FAIL by default, takes RESEND and FAIL, and refuses anything else with 400 naming the field', async () => {
    const { api } = await tenant();
    const optOutConfirmation = { enabled: true, text: null, dltSenderId: null, dltTemplateId: null };
    expect((await api('GET', '/messages/settings')).json()).toEqual({ unconfirmedMessagePolicy: 'FAIL', optOutConfirmation });
    const put = await api('PUT', '/messages/settings', { unconfirmedMessagePolicy: 'RESEND' });
    expect([put.statusCode, put.json()]).toEqual([200, { unconfirmedMessagePolicy: 'RESEND', optOutConfirmation }]);
    expect((await api('GET', '/messages/settings')).json()).toEqual({ unconfirmedMessagePolicy: 'RESEND', optOutConfirmation });
    const bad = await api('PUT', '/messages/settings', { unconfirmedMessagePolicy: 'MAYBE' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details).toContainEqual({ path: '/unconfirmedMessagePolicy', message: expect.any(String) });
    expect(bad.json().message).toContain('unconfirmedMessagePolicy');
    expect((await api('PUT', '/messages/settings', { unconfirmedMessagePolicy: 'FAIL' })).json()).toEqual({
      unconfirmedMessagePolicy: 'FAIL',
      optOutConfirmation,
    });
  });
});

describe('a message left SENDING by a dead worker', () => {
  it('FAIL (the default): marks it FAILED without asking the provider again, and announces it', async () => {
    const { api, tenantId } = await tenant();
    const id = await interruptedSms(tenantId);
    await sendMessage(t.runtime, { tenantId, messageId: id }, { retryCount: 1 });
    expect(sentTo(id)).toBe(0);
    const message = (await api('GET', '/messages')).json().data[0];
    expect(message).toMatchObject({ id, status: 'FAILED', failureReason: expect.stringContaining('Unconfirmed') });
    expect(await unconfirmedEvents(api)).toEqual([
      expect.objectContaining({ messageId: id, channel: 'SMS', provider: 'TWILIO', policy: 'FAIL', outcome: 'FAILED' }),
    ]);
  });

  it('RESEND: hands it to the provider once more, records it SENT, and announces it', async () => {
    const { api, tenantId } = await tenant();
    expect((await api('PUT', '/messages/settings', { unconfirmedMessagePolicy: 'RESEND' })).statusCode).toBe(200);
    const id = await interruptedSms(tenantId);
    await sendMessage(t.runtime, { tenantId, messageId: id }, { retryCount: 1 });
    expect(sentTo(id)).toBe(1);
    const message = (await api('GET', '/messages')).json().data[0];
    expect(message).toMatchObject({ id, status: 'SENT', attempts: 2, failureReason: null });
    expect(await unconfirmedEvents(api)).toEqual([expect.objectContaining({ messageId: id, policy: 'RESEND', outcome: 'RESENT' })]);
    // The job runs again (a repeated delivery of it): the message is SENT, nothing more is sent.
    await sendMessage(t.runtime, { tenantId, messageId: id }, { retryCount: 2 });
    expect(sentTo(id)).toBe(1);
  });
});
