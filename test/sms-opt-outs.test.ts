import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { msg91InboundToken } from '../src/providers/msg91/inbound.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { startFakeMsg91, type FakeMsg91 } from '../src/providers/msg91/fake.ts';
import { startFakeTelnyx, type FakeTelnyx } from '../src/providers/telnyx/fake.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import {
  incomingMessagesPayload,
  signedWhatsAppWebhook,
  startFakeWhatsApp,
  type FakeWhatsApp,
} from '../src/providers/whatsapp-cloud/fake.ts';
import { generateKeyPairSync } from 'node:crypto';
import { findOptOutConfirmation } from '../src/modules/messaging/repo.ts';
import { bearer, createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs, uniqueNumber } from './voice-fixtures.ts';

// Opt-outs by SMS through Telnyx and MSG91 (beside Twilio), and the one confirmation each opt-out
// gets, sent through the job queue to local fakes of the providers' real APIs.
const TELNYX_KEY = 'KEY0195F3C27A107000_telnyx-opt-out-key';
const MSG91_KEY = 'msg91-auth-key-0123';
const TWILIO = { accountSid: `AC${'b2'.repeat(16)}`, authToken: 'twilio-auth-token-opt-out-01' };
const WHATSAPP = {
  accessToken: 'EAAG-opt-out-access-token-0123',
  appSecret: 'app-secret-opt-out-0123',
  wabaId: '102290129340311',
  sender: '106540352242911',
};
const TELNYX_NUMBER = '+14155550111';
const MSG91_NUMBER = '+919876500001';

let t: TestApp;
let telnyx: FakeTelnyx;
let msg91: FakeMsg91;
let twilio: FakeTwilio;
let graph: FakeWhatsApp;
let publicUrl: string;

beforeAll(async () => {
  telnyx = await startFakeTelnyx({ apiKey: TELNYX_KEY });
  msg91 = await startFakeMsg91({ authKey: MSG91_KEY });
  twilio = await startFakeTwilio(TWILIO);
  graph = await startFakeWhatsApp({
    accessToken: WHATSAPP.accessToken,
    businessAccountId: WHATSAPP.wabaId,
    phoneNumbers: [{ id: WHATSAPP.sender, displayPhoneNumber: '+1 555-000-9999', verifiedName: 'Acme', qualityRating: 'GREEN' }],
  });
  const port = await freeLoopbackPort();
  publicUrl = `http://127.0.0.1:${port}`;
  t = await startTestApp({
    env: {
      PUBLIC_URL: publicUrl,
      TELNYX_API_URL: telnyx.url,
      MSG91_API_URL: msg91.url,
      TWILIO_API_URL: twilio.url,
      WHATSAPP_API_URL: graph.url,
      JOBS_POLL_SECONDS: '0.5',
    },
  });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
  await t.app.listen({ port, host: '127.0.0.1' });
});

afterAll(async () => {
  await t.close();
  await Promise.all([telnyx.close(), msg91.close(), twilio.close(), graph.close()]);
});

/** A tenant with Telnyx, MSG91 and Twilio connected, and WhatsApp when asked (each tenant that connects an account hears its webhooks). */
async function tenant(withWhatsApp = false) {
  const session = (await signUp(t.app)).token;
  const key = (await createKey(t.app, session)).key;
  const connect = async (kind: string, payload: object) => {
    const response = await t.app.inject({ method: 'PUT', url: `/api/v1/integrations/${kind}`, headers: bearer(session), payload });
    if (response.statusCode !== 200) throw new Error(response.body);
  };
  await connect('telnyx', { apiKey: TELNYX_KEY, connectionId: '1494404757140276705', publicKey: telnyx.publicKey });
  await connect('msg91', { authKey: MSG91_KEY });
  await connect('twilio', TWILIO);
  if (withWhatsApp)
    await connect('whatsapp', {
      businessAccountId: WHATSAPP.wabaId,
      accessToken: WHATSAPP.accessToken,
      appSecret: WHATSAPP.appSecret,
      phoneNumberId: WHATSAPP.sender,
    });
  const api = apiAs(t.app, key);
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  return { api, tenantId };
}

/** The number's confirmation once its send job settled it (SENT or FAILED). */
const settledConfirmation = (tenantId: string, number: string) =>
  until('the confirmation settles', async () => {
    const row = await findOptOutConfirmation(t.runtime.db, tenantId, number);
    return row && (row.status === 'SENT' || row.status === 'FAILED') && row;
  });

const listed = async (api: ReturnType<typeof apiAs>, number: string) => (await api('GET', `/dnc/${encodeURIComponent(number)}`)).json();
const telnyxTextsTo = (number: string) => [...telnyx.messages.values()].filter((message) => message.to === number);
const msg91TextsTo = (number: string) => msg91.sent.filter((sms) => sms.mobiles.includes(number.replace(/^\+/, '')));

describe('SMS opt-outs through Telnyx', () => {
  it('lists a sender whose signed message.received is STOP, confirms once from the number texted, and refuses a forged one', async () => {
    const { api, tenantId } = await tenant();
    const url = `${publicUrl}/api/v1/messages/telnyx-incoming?tenant=${tenantId}`;
    const [stopper, forger, chatty] = [uniqueNumber(), uniqueNumber(), uniqueNumber()];
    expect(await telnyx.receiveMessage(url, { from: stopper, to: TELNYX_NUMBER, text: 'Stop' })).toBe(200);
    expect(await listed(api, stopper)).toMatchObject({ source: 'sms', reason: `Replied "Stop" by SMS to ${TELNYX_NUMBER}.` });
    await until('the confirmation is sent', () => telnyxTextsTo(stopper).length === 1);
    expect(telnyxTextsTo(stopper)[0]).toMatchObject({
      from: TELNYX_NUMBER,
      text: 'You will not be contacted again. This is the last message you will receive from us.',
    });
    // A second STOP finds the number listed: no second confirmation, ever.
    expect(await telnyx.receiveMessage(url, { from: stopper, to: TELNYX_NUMBER, text: 'STOP' })).toBe(200);
    expect(await telnyx.receiveMessage(url, { from: chatty, to: TELNYX_NUMBER, text: 'Thanks, see you Tuesday' })).toBe(200);
    const forgedKey = generateKeyPairSync('ed25519').privateKey;
    expect(await telnyx.receiveMessage(url, { from: forger, to: TELNYX_NUMBER, text: 'STOP' }, { privateKey: forgedKey })).toBe(403);
    expect(await telnyx.receiveMessage(url, { from: forger, to: TELNYX_NUMBER, text: 'STOP' }, { timestamp: 1_000_000_000 })).toBe(403);
    expect((await api('GET', `/dnc/${encodeURIComponent(forger)}`)).statusCode).toBe(404);
    expect((await api('GET', `/dnc/${encodeURIComponent(chatty)}`)).statusCode).toBe(404);
    expect(await settledConfirmation(tenantId, stopper)).toMatchObject({ channel: 'SMS', provider: 'TELNYX', status: 'SENT', attempts: 1 });
    expect(telnyxTextsTo(stopper)).toHaveLength(1);
  });
});

describe('SMS opt-outs through MSG91', () => {
  it("lists a sender whose forwarded message is STOP when the URL carries the tenant's token, and confirms with the DLT template set", async () => {
    const { api, tenantId } = await tenant();
    const put = await api('PUT', '/messages/settings', {
      unconfirmedMessagePolicy: 'FAIL',
      optOutConfirmation: {
        enabled: true,
        text: 'Done: no more calls or texts from Acme.',
        dltSenderId: 'ACMEIN',
        dltTemplateId: '1107160000000000001',
      },
    });
    expect(put.statusCode).toBe(200);
    const token = msg91InboundToken(MSG91_KEY, tenantId);
    const url = `${publicUrl}/api/v1/messages/msg91-incoming?tenant=${tenantId}&token=${token}`;
    const [stopper, forger] = ['+919812300001', '+919812300002'];
    expect(await msg91.receiveMessage(url, { from: stopper, to: MSG91_NUMBER, text: 'STOP' })).toBe(200);
    expect(await listed(api, stopper)).toMatchObject({ source: 'sms', reason: `Replied "STOP" by SMS to ${MSG91_NUMBER}.` });
    await until('the confirmation is sent', () => msg91TextsTo(stopper).length === 1);
    expect(msg91TextsTo(stopper)[0]).toMatchObject({
      message: 'Done: no more calls or texts from Acme.',
      sender: 'ACMEIN',
      dltTemplateId: '1107160000000000001',
    });
    const wrongToken = msg91InboundToken('another-accounts-key', tenantId);
    expect(await msg91.receiveMessage(url.replace(token, wrongToken), { from: forger, to: MSG91_NUMBER, text: 'STOP' })).toBe(403);
    expect(await msg91.receiveMessage(url.replace(`&token=${token}`, ''), { from: forger, to: MSG91_NUMBER, text: 'STOP' })).toBe(403);
    expect((await api('GET', `/dnc/${encodeURIComponent(forger)}`)).statusCode).toBe(404);
  });
});

describe('opt-out confirmations', () => {
  it('sends none when the tenant turned them off, and none for Twilio SMS (Twilio confirms STOP itself)', async () => {
    const { api, tenantId } = await tenant();
    const twilioStopper = uniqueNumber();
    await twilio.receiveMessage(`${publicUrl}/api/v1/messages/twilio-incoming?tenant=${tenantId}`, {
      from: twilioStopper,
      to: '+14155550000',
      body: 'STOP',
    });
    expect((await listed(api, twilioStopper)).source).toBe('sms');
    await api('PUT', '/messages/settings', {
      unconfirmedMessagePolicy: 'FAIL',
      optOutConfirmation: { enabled: false, text: null, dltSenderId: null, dltTemplateId: null },
    });
    const quiet = uniqueNumber();
    expect(
      await telnyx.receiveMessage(`${publicUrl}/api/v1/messages/telnyx-incoming?tenant=${tenantId}`, {
        from: quiet,
        to: TELNYX_NUMBER,
        text: 'STOP',
      }),
    ).toBe(200);
    expect((await listed(api, quiet)).source).toBe('sms');
    // The confirmation would have been recorded with the listing, in its transaction: there is none.
    expect(await findOptOutConfirmation(t.runtime.db, tenantId, quiet)).toBeUndefined();
    expect(await findOptOutConfirmation(t.runtime.db, tenantId, twilioStopper)).toBeUndefined();
    expect(telnyxTextsTo(quiet)).toHaveLength(0);
    expect([...twilio.messages.values()].filter((message) => message.to === twilioStopper)).toHaveLength(0);
  });

  it('confirms a WhatsApp opt-out once, on WhatsApp, however often the reply is delivered', async () => {
    const { api, tenantId } = await tenant(true);
    const stopper = uniqueNumber();
    const deliver = async (id: string) => {
      const signed = signedWhatsAppWebhook(
        WHATSAPP.appSecret,
        incomingMessagesPayload({
          phoneNumberId: WHATSAPP.sender,
          wabaId: WHATSAPP.wabaId,
          messages: [{ id, from: stopper, timestamp: new Date(), text: 'STOP' }],
        }),
      );
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/whatsapp/webhook',
        headers: signed.headers,
        payload: signed.body,
      });
      expect(response.statusCode).toBe(200);
    };
    // The same delivery twice (Meta retries), then a second STOP.
    await Promise.all([deliver('wamid.optout1'), deliver('wamid.optout1'), deliver('wamid.optout2')]);
    expect((await listed(api, stopper)).source).toBe('whatsapp');
    await until('the confirmation is sent', () => graph.messages.some((message) => message.to === stopper.slice(1)));
    expect(await settledConfirmation(tenantId, stopper)).toMatchObject({ channel: 'WHATSAPP', status: 'SENT', attempts: 1 });
    expect(graph.messages.filter((message) => message.to === stopper.slice(1))).toEqual([
      expect.objectContaining({
        phoneNumberId: WHATSAPP.sender,
        templateName: null,
        text: 'You will not be contacted again. This is the last message you will receive from us.',
      }),
    ]);
  });
});
