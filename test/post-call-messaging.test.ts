import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { afterCallEnded, sendMessage } from '../src/modules/messaging/dispatch.ts';
import { insertMessages } from '../src/modules/messaging/repo.ts';
import { manualClock } from '../src/platform/clock.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { bearer, capturedLog, createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { startFakeMsg91, type FakeMsg91 } from '../src/providers/msg91/fake.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import {
  graphError,
  incomingMessagesPayload,
  signedWhatsAppWebhook,
  startFakeWhatsApp,
  statusWebhookPayload,
  type FakeWhatsApp,
} from '../src/providers/whatsapp-cloud/fake.ts';
import { apiAs, createCampaign, uniqueNumber, voiceSetup } from './voice-fixtures.ts';

// Contract §6 end to end: simulated calls end, `call.ended` runs on the real job queue, and the
// agent's WhatsApp and SMS campaigns send through local fakes of the providers' real APIs.
const WHATSAPP = {
  accessToken: 'EAAG-test-access-token-0123456789',
  appSecret: 'app-secret-0123456789abcdef',
  wabaId: '102290129340398',
  sender: '106540352242922',
};
const TWILIO = { accountSid: `AC${'a1'.repeat(16)}`, authToken: 'twilio-auth-token-0123456789' };
const MSG91_KEY = 'msg91-auth-key-0123';

const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let graph: FakeWhatsApp;
let twilio: FakeTwilio;
let msg91: FakeMsg91;
let publicUrl: string;

/** What the service logged at info and above. */
const captured = capturedLog('info');
const logged = captured.entries as { msg: string; callId?: string; messageId?: string }[];

beforeAll(async () => {
  graph = await startFakeWhatsApp({
    accessToken: WHATSAPP.accessToken,
    businessAccountId: WHATSAPP.wabaId,
    phoneNumbers: [{ id: WHATSAPP.sender, displayPhoneNumber: '+1 555-000-1234', verifiedName: 'Acme Clinic', qualityRating: 'GREEN' }],
  });
  twilio = await startFakeTwilio(TWILIO);
  msg91 = await startFakeMsg91({ authKey: MSG91_KEY });
  // Twilio posts SMS statuses to PUBLIC_URL: the app listens there.
  const port = await freeLoopbackPort();
  publicUrl = `http://127.0.0.1:${port}`;
  t = await startTestApp({
    clock,
    log: captured.log,
    env: {
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      WHATSAPP_API_URL: graph.url,
      TWILIO_API_URL: twilio.url,
      MSG91_API_URL: msg91.url,
      SIMULATOR_RING_SECONDS: '1',
      SIMULATOR_TALK_SECONDS: '3',
      DIALER_CALLS_PER_SECOND: '1000',
      JOBS_POLL_SECONDS: '0.5',
    },
  });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
  await t.app.listen({ port, host: '127.0.0.1' });
});

afterAll(async () => {
  await t.close();
  await Promise.all([graph.close(), twilio.close(), msg91.close()]);
});

async function tenant() {
  const session = (await signUp(t.app)).token;
  const key = (await createKey(t.app, session)).key;
  const connect = async (kind: string, payload: object) => {
    const response = await t.app.inject({ method: 'PUT', url: `/api/v1/integrations/${kind}`, headers: bearer(session), payload });
    if (response.statusCode !== 200) throw new Error(response.body);
  };
  await connect('whatsapp', {
    businessAccountId: WHATSAPP.wabaId,
    accessToken: WHATSAPP.accessToken,
    appSecret: WHATSAPP.appSecret,
    phoneNumberId: WHATSAPP.sender,
  });
  await connect('twilio', TWILIO);
  await connect('msg91', { authKey: MSG91_KEY });
  const api = apiAs(t.app, key);
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  return { key, api, tenantId };
}

/** Starts a campaign of these contacts (one attempt each) and ticks the dialer until it completes. */
async function dialAll(key: string, contacts: Record<string, unknown>[]) {
  const api = apiAs(t.app, key);
  const setup = await voiceSetup(t.app, key, contacts);
  const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', maxAttempts: 1 });
  return { ...setup, campaignId: campaign.id, run: () => runCampaign(api, campaign.id) };
}

async function runCampaign(api: ReturnType<typeof apiAs>, campaignId: string) {
  expect((await api('POST', `/campaigns/${campaignId}/start`, {})).statusCode).toBe(202);
  for (let tick = 0; tick < 100; tick++) {
    await dialerTick(t.runtime);
    if ((await api('GET', `/campaigns/${campaignId}`)).json().status === 'COMPLETED') return;
    clock.advance(1000);
  }
  throw new Error('the campaign did not complete');
}

/** Posts a notification to the WhatsApp webhook, signed with the app secret as Meta signs it; resolves with how many it recorded. */
async function postWhatsAppWebhook(payload: object): Promise<number> {
  const signed = signedWhatsAppWebhook(WHATSAPP.appSecret, payload);
  const response = await t.app.inject({ method: 'POST', url: '/api/v1/whatsapp/webhook', headers: signed.headers, payload: signed.body });
  expect(response.statusCode).toBe(200);
  return response.json().received as number;
}

type LoggedMessage = {
  id: string;
  channel: string;
  callId: string;
  provider: string;
  toNumber: string;
  status: string;
  templateName: string | null;
  body: string | null;
  providerMessageId: string | null;
  failureReason: string | null;
  attempts: number;
  encoding: string | null;
  segments: number | null;
};

/** Polls GET /messages until `count` messages of the channel have left the queue. */
async function settledMessages(api: ReturnType<typeof apiAs>, channel: string, count: number): Promise<LoggedMessage[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const page = (await api('GET', `/messages?channel=${channel}&limit=200`)).json() as { data: LoggedMessage[] };
    const settled = page.data.filter((message) => message.status !== 'QUEUED' && message.status !== 'SENDING');
    if (settled.length >= count) return page.data;
    if (Date.now() > deadline)
      throw new Error(`only ${settled.length} of ${count} ${channel} messages settled: ${JSON.stringify(page.data)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Requests to the providers' fakes about these messages, told by our message ids (WhatsApp's
 * callback data, Twilio's status callback): earlier tests' queued messages may go out meanwhile.
 */
function sendsOf(...messageIds: string[]): number {
  const whatsApp = graph.requests.filter((request) =>
    messageIds.includes((request.body as { biz_opaque_callback_data?: string } | undefined)?.biz_opaque_callback_data ?? ''),
  );
  const sms = [...twilio.messages.values()].filter((sent) => messageIds.some((id) => sent.statusCallback?.includes(id)));
  return whatsApp.length + sms.length;
}

const OUTCOMES = ['ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED'] as const;

describe('post-call messages chosen by the call', () => {
  it('sends the WhatsApp template of each (process, callStatus) pair and the SMS of each outcome', async () => {
    const { key, api } = await tenant();
    const campaign = await dialAll(
      key,
      OUTCOMES.map((outcome) => ({ simulate: outcome })),
    );
    const templates = ['OUTGOING', 'INCOMING'].flatMap((process) =>
      OUTCOMES.map((callStatus) => ({ templateName: `${process}_${callStatus}`.toLowerCase(), process, callStatus })),
    );
    expect((await api('POST', '/whatsapp/campaigns', { agentId: campaign.agentId, templates })).statusCode).toBe(201);
    const sms = await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: '+14155550000',
      senderProvider: 'twilio',
      templates: [
        { callStatus: 'ANSWERED', messageBody: 'Thanks for talking with us, {{name|there}}.' },
        { callStatus: 'UNANSWERED', messageBody: 'Sorry we missed you, {{name|there}}. Call us back at {{phoneNumber}}.' },
      ],
    });
    expect(sms.statusCode).toBe(201);
    // An incoming call to the campaign's number, answered by the same agent.
    expect((await api('PATCH', `/voice-numbers/${campaign.voiceNumberId}`, { inboundAgentId: campaign.agentId })).statusCode).toBe(200);
    const caller = uniqueNumber();
    expect((await api('POST', '/simulator/inbound-calls', { voiceNumberId: campaign.voiceNumberId, fromNumber: caller })).statusCode).toBe(
      201,
    );
    const graphBefore = graph.messages.length;
    await campaign.run();

    const whatsapp = await settledMessages(api, 'whatsapp', 5);
    const smsLog = await settledMessages(api, 'sms', 5);
    expect(whatsapp.map((message) => [message.status, message.failureReason])).toEqual(Array(5).fill(['SENT', null]));
    expect(whatsapp.every((message) => message.providerMessageId?.startsWith('wamid.'))).toBe(true);
    const contacts = (await api('GET', `/campaigns/${campaign.campaignId}/contacts`)).json().data as {
      phoneNumber: string;
      lastOutcome: string;
    }[];
    const sent = graph.messages.slice(graphBefore);
    for (const contact of contacts) {
      expect(sent.filter((m) => `+${m.to}` === contact.phoneNumber).map((m) => [m.templateName, m.languageCode, m.phoneNumberId])).toEqual([
        [`outgoing_${contact.lastOutcome.toLowerCase()}`, 'en_US', WHATSAPP.sender],
      ]);
      const text = smsLog.find((message) => message.toNumber === contact.phoneNumber)!.body;
      const name = `Contact ${contacts.indexOf(contact) + 1}`;
      expect(text).toBe(
        contact.lastOutcome === 'ANSWERED'
          ? `Thanks for talking with us, ${name}.`
          : `Sorry we missed you, ${name}. Call us back at ${contact.phoneNumber}.`,
      );
    }
    expect(sent.filter((m) => `+${m.to}` === caller).map((m) => m.templateName)).toEqual(['incoming_answered']);
    // The terminal says what happened: one line per call ended and per message sent.
    for (const message of [...whatsapp, ...smsLog])
      expect(logged.filter((line) => line.messageId === message.id).map((line) => line.msg)).toEqual([
        `${message.channel === 'WHATSAPP' ? 'WhatsApp message' : 'SMS'} ${message.id} (${message.provider}) sent for call ${message.callId}`,
      ]);
    const calls = (await api('GET', `/call-logs?campaignId=${campaign.campaignId}`)).json().data as { id: string; outcome: string }[];
    for (const call of calls)
      expect(logged.filter((line) => line.callId === call.id && line.msg.startsWith('Call ')).map((line) => line.msg)).toEqual([
        expect.stringMatching(new RegExp(`^Call ${call.id} ended ${call.outcome}.*, cost \\d+\\.\\d{4}$`)),
      ]);
    // Twilio got each SMS as its Messages API expects it.
    const twilioMessages = [...twilio.messages.values()].filter((m) => smsLog.some((s) => s.toNumber === m.to));
    expect(twilioMessages).toHaveLength(5);
    expect(twilioMessages.every((m) => m.from === '+14155550000')).toBe(true);
    expect(smsLog.every((message) => message.status === 'SENT' && message.encoding === 'GSM-7' && message.segments === 1)).toBe(true);
    // The Graph API got the bearer token and Meta's message shape, with our id to echo in statuses.
    const request = graph.requests.filter((r) => r.method === 'POST').at(-1)!;
    expect(request.headers.authorization).toBe(`Bearer ${WHATSAPP.accessToken}`);
    expect(request.body).toMatchObject({
      messaging_product: 'whatsapp',
      type: 'template',
      biz_opaque_callback_data: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });

  it("picks the mapping in the contact's language, else the first listed, and fills body parameters", async () => {
    const { key, api } = await tenant();
    const campaign = await dialAll(key, [{ language: 'es' }, {}, { language: 'fr-CA' }, { language: 'pt_BR' }]);
    await api('POST', '/whatsapp/campaigns', {
      agentId: campaign.agentId,
      templates: [
        { templateName: 'greet', process: 'OUTGOING', callStatus: 'ANSWERED', bodyParameters: ['{{name|there}}', '{{ phoneNumber }}'] },
        { templateName: 'saludo', process: 'OUTGOING', callStatus: 'ANSWERED', languageCode: 'es_ES', bodyParameters: ['{{name|there}}'] },
        { templateName: 'saudacao', process: 'OUTGOING', callStatus: 'ANSWERED', languageCode: 'pt_BR' },
      ],
    });
    const before = graph.messages.length;
    await campaign.run();
    await settledMessages(api, 'whatsapp', 4);
    const byContact = Object.fromEntries(
      graph.messages.slice(before).map((m) => [m.to.slice(-4), [m.templateName, m.languageCode, m.bodyParameters]]),
    );
    expect(byContact).toEqual({
      '1000': ['saludo', 'es_ES', ['Contact 1']],
      '1001': ['greet', 'en_US', ['Contact 2', '+12125551001']],
      '1002': ['greet', 'en_US', ['Contact 3', '+12125551002']],
      '1003': ['saudacao', 'pt_BR', []],
    });
  });

  it('sends nothing for an inactive campaign, nor for an outcome without a mapping', async () => {
    const { key, api } = await tenant();
    const campaign = await dialAll(key, [{ simulate: 'BUSY' }, {}]);
    await api('POST', '/whatsapp/campaigns', {
      agentId: campaign.agentId,
      templates: [{ templateName: 'thanks', process: 'OUTGOING', callStatus: 'ANSWERED' }],
    });
    await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: '+14155550000',
      senderProvider: 'SIMULATOR',
      isActive: false,
      templates: [{ callStatus: 'UNANSWERED', messageBody: 'Missed you' }],
    });
    await campaign.run();
    const whatsapp = await settledMessages(api, 'whatsapp', 1);
    expect(whatsapp.map((m) => m.templateName)).toEqual(['thanks']);
    expect((await api('GET', '/messages?channel=sms')).json().total).toBe(0);
  });

  it('sends DLT sender and template ids to MSG91 and counts UCS-2 segments', async () => {
    const { key, api } = await tenant();
    const campaign = await dialAll(key, [{}, {}]);
    await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: 'ACMEIN',
      senderProvider: 'msg91',
      templates: [
        {
          callStatus: 'ANSWERED',
          messageBody: 'धन्यवाद {{name|there}}, आपकी अपॉइंटमेंट की पुष्टि हो गई है। हम जल्द ही आपसे संपर्क करेंगे।',
          dltSenderId: 'ACMEDL',
          dltTemplateId: '1207161234567890123',
        },
      ],
    });
    const before = msg91.sent.length;
    await campaign.run();
    const log = await settledMessages(api, 'sms', 2);
    expect(log.every((m) => m.status === 'SENT' && m.encoding === 'UCS-2' && m.segments === 2)).toBe(true);
    const sent = msg91.sent.slice(before);
    expect(sent).toHaveLength(2);
    expect(
      sent.every(
        (s) => s.sender === 'ACMEDL' && s.dltTemplateId === '1207161234567890123' && s.unicode && s.message.startsWith('धन्यवाद Contact'),
      ),
    ).toBe(true);
    expect(msg91.requests.at(-1)!.query.authkey ?? msg91.requests.at(-1)!.headers.authkey).toBe(MSG91_KEY);
  });

  it('takes an MSG91 template without a DLT template id (optional), and fails its messages saying MSG91 needs one', async () => {
    const { key, api } = await tenant();
    const campaign = await dialAll(key, [{}, {}]);
    const created = await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: 'ACMEIN',
      senderProvider: 'msg91',
      templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks {{name|there}}' }],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().templates).toMatchObject([{ dltTemplateId: null }]);
    const before = msg91.sent.length;
    await campaign.run();
    const log = await settledMessages(api, 'sms', 2);
    expect(log.map((m) => m.status)).toEqual(['FAILED', 'FAILED']);
    expect(log.every((m) => /DLT template id is required for MSG91/.test(m.failureReason ?? ''))).toBe(true);
    expect(msg91.sent.length).toBe(before);
  });
});

describe('exactly one message per channel per call', () => {
  it('sends no second message when call.ended runs again, and records delivery statuses from the webhook', async () => {
    const { key, api, tenantId } = await tenant();
    const campaign = await dialAll(key, [{}, {}]);
    await api('POST', '/whatsapp/campaigns', {
      agentId: campaign.agentId,
      templates: [{ templateName: 'thanks', process: 'OUTGOING', callStatus: 'ANSWERED' }],
    });
    await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: '+14155550000',
      senderProvider: 'TWILIO',
      templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks' }],
    });
    await campaign.run();
    const [message] = await settledMessages(api, 'whatsapp', 2);
    await settledMessages(api, 'sms', 2);
    const idsOfCall = ((await api('GET', `/messages?callId=${message!.callId}`)).json().data as LoggedMessage[]).map((m) => m.id);
    const sendsOfCall = () => sendsOf(...idsOfCall);
    const sendsBefore = sendsOfCall();
    expect(sendsBefore).toBe(2);

    // Twilio reports the SMS's delivery to the status callback it was given, signed.
    const sms = (await api('GET', `/messages?callId=${message!.callId}&channel=sms`)).json().data[0] as LoggedMessage;
    expect(twilio.messages.get(sms.providerMessageId!)!.statusCallback).toMatch(
      /\/api\/v1\/messages\/twilio-status\?tenant=[0-9a-f-]{36}&message=[0-9a-f-]{36}$/,
    );
    expect(await twilio.sendMessageStatus(sms.providerMessageId!, 'delivered', {}, 'not-the-auth-token-at-all')).toBe(403);
    expect(await twilio.sendMessageStatus(sms.providerMessageId!, 'sent')).toBe(204);
    expect(await twilio.sendMessageStatus(sms.providerMessageId!, 'delivered')).toBe(204);
    expect((await api('GET', `/messages?callId=${message!.callId}&channel=sms`)).json().data[0]).toMatchObject({
      status: 'DELIVERED',
      deliveredAt: expect.any(String),
    });
    const [, otherSms] = (await api('GET', '/messages?channel=sms')).json().data as LoggedMessage[];
    expect(await twilio.sendMessageStatus(otherSms!.providerMessageId!, 'undelivered', { ErrorCode: '30003' })).toBe(204);
    expect((await api('GET', `/messages?callId=${otherSms!.callId}&channel=sms`)).json().data[0]).toMatchObject({
      status: 'FAILED',
      failureReason: 'Twilio: the message was undelivered (error 30003).',
    });

    // The job again (a retry, a second delivery of call.ended), directly and through the queue.
    expect(await afterCallEnded(t.runtime, { tenantId, callId: message!.callId })).toBe(0);
    await t.runtime.jobs.send('call.ended', { tenantId, callId: message!.callId });
    const deadline = Date.now() + 10_000;
    while (
      (
        await t.runtime.db.query(`SELECT 1 FROM pgboss.job WHERE name = 'call.ended' AND data->>'callId' = $1 AND state <> 'completed'`, [
          message!.callId,
        ])
      ).rowCount > 0
    ) {
      if (Date.now() > deadline) throw new Error('call.ended was not handled');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await api('GET', `/messages?callId=${message!.callId}`)).json().total).toBe(2);
    const other = await tenant();
    expect((await other.api('GET', `/messages?callId=${message!.callId}`)).json().total).toBe(0);
    expect((await other.api('GET', '/messages')).json().total).toBe(0);
    expect(sendsOfCall()).toBe(sendsBefore);

    // Delivery statuses move forward only.
    const deliver = async (status: 'delivered' | 'read' | 'sent') => {
      const payload = statusWebhookPayload({
        phoneNumberId: WHATSAPP.sender,
        wabaId: WHATSAPP.wabaId,
        statuses: [{ id: message!.providerMessageId!, status, recipientId: message!.toNumber, timestamp: clock.now() }],
      });
      return postWhatsAppWebhook(payload);
    };
    expect(await deliver('delivered')).toBe(1);
    expect(await deliver('read')).toBe(1);
    expect(await deliver('sent')).toBe(0);
    const after = (await api('GET', `/messages?callId=${message!.callId}&channel=whatsapp`)).json().data[0];
    expect(after).toMatchObject({ status: 'READ', deliveredAt: expect.any(String), readAt: expect.any(String) });

    // A failure report carries Meta's reason onto the other call's message.
    const [, undelivered] = (await api('GET', '/messages?channel=whatsapp')).json().data as LoggedMessage[];
    const failed = signedWhatsAppWebhook(
      WHATSAPP.appSecret,
      statusWebhookPayload({
        phoneNumberId: WHATSAPP.sender,
        wabaId: WHATSAPP.wabaId,
        statuses: [
          {
            id: undelivered!.providerMessageId!,
            status: 'failed',
            recipientId: undelivered!.toNumber,
            timestamp: clock.now(),
            errors: [{ code: 131026, title: 'Message undeliverable' }],
          },
        ],
      }),
    );
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/whatsapp/webhook', headers: failed.headers, payload: failed.body })).json()
        .received,
    ).toBe(1);
    expect((await api('GET', `/messages?callId=${undelivered!.callId}&channel=WHATSAPP`)).json().data[0]).toMatchObject({
      status: 'FAILED',
      failedAt: expect.any(String),
      failureReason: expect.stringContaining('131026 Message undeliverable'),
    });
  });

  it('follows up calls handled at once with shared statements: each call once per channel, a repeat in the same turn included', async () => {
    const { key, api, tenantId } = await tenant();
    const campaign = await dialAll(
      key,
      Array.from({ length: 8 }, () => ({})),
    );
    await campaign.run();
    const calls = (await api('GET', `/call-logs?campaignId=${campaign.campaignId}`)).json().data as { id: string }[];
    expect(calls).toHaveLength(8);
    // The workers' own call.ended jobs run first, before there is anything to send.
    const deadline = Date.now() + 20_000;
    const pending = async () =>
      (
        await t.runtime.db.query(
          `SELECT 1 FROM pgboss.job WHERE name = 'call.ended' AND data->>'callId' = ANY($1) AND state <> 'completed'`,
          [calls.map((call) => call.id)],
        )
      ).rowCount;
    while ((await pending()) > 0) {
      if (Date.now() > deadline) throw new Error('call.ended was not handled');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await api('POST', '/whatsapp/campaigns', {
      agentId: campaign.agentId,
      templates: [{ templateName: 'thanks', process: 'OUTGOING', callStatus: 'ANSWERED', bodyParameters: ['{{name|there}}'] }],
    });
    await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: '+14155550000',
      senderProvider: 'twilio',
      templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks, {{name|there}}.' }],
    });
    // As a parallel batch of jobs does: all at once, the first call twice.
    const counts = await Promise.all([...calls, calls[0]!].map((call) => afterCallEnded(t.runtime, { tenantId, callId: call.id })));
    expect(counts).toEqual([...Array(8).fill(2), 0]);
    const whatsapp = await settledMessages(api, 'whatsapp', 8);
    const sms = await settledMessages(api, 'sms', 8);
    for (const log of [whatsapp, sms]) {
      expect(log.map((message) => message.status)).toEqual(Array(8).fill('SENT'));
      expect(new Set(log.map((message) => message.callId)).size).toBe(8);
      // Each message marked with its own provider id, though marked together.
      expect(new Set(log.map((message) => message.providerMessageId)).size).toBe(8);
    }
    for (const message of [...whatsapp, ...sms]) expect(sendsOf(message.id), message.id).toBe(1);
    const bySms = new Map(sms.map((message) => [message.providerMessageId, message.toNumber]));
    for (const [sid, to] of bySms) expect(twilio.messages.get(sid!)?.to).toBe(to);
  });

  it('sends nothing to a number on the do-not-call list: no post-call message, and a queued one fails unsent', async () => {
    const { key, api, tenantId } = await tenant();
    const campaign = await dialAll(key, [{}, {}]);
    await campaign.run();
    const calls = (await api('GET', `/call-logs?campaignId=${campaign.campaignId}`)).json().data as { id: string; toNumber: string }[];
    const [listed, free] = ['+12125551000', '+12125551001'].map((to) => calls.find((call) => call.toNumber === to)!);
    const sms = await api('POST', '/sms-agent/campaigns', {
      agentId: campaign.agentId,
      senderNumber: '+14155550000',
      senderProvider: 'twilio',
      templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks, {{name|there}}.' }],
    });
    expect(sms.statusCode).toBe(201);
    expect((await api('POST', '/dnc', { phoneNumber: listed!.toNumber })).statusCode).toBe(201);
    // call.ended again (as a retried job would): the listed number gets no message recorded at all.
    expect(await afterCallEnded(t.runtime, { tenantId, callId: listed!.id })).toBe(0);
    // The free number gets its one message, whether this or the worker's own call.ended (late on a busy machine) recorded it.
    await afterCallEnded(t.runtime, { tenantId, callId: free!.id });
    expect((await api('GET', `/messages?callId=${free!.id}`)).json().total).toBe(1);
    expect((await api('GET', `/messages?callId=${listed!.id}`)).json().total).toBe(0);

    // A message recorded before its number was listed is not handed to the provider.
    const id = randomUUID();
    const message = { id, channel: 'SMS' as const, call_id: listed!.id, agent_id: campaign.agentId, campaign_id: null, contact_id: null };
    await insertMessages(t.runtime.db, tenantId, [
      {
        ...message,
        to_number: listed!.toNumber,
        sender: '+14155550000',
        provider: 'TWILIO',
        template_name: null,
        language_code: null,
        body: 'Thanks.',
        parameters: [],
        dlt_sender_id: null,
        dlt_template_id: null,
        encoding: 'GSM-7',
        segments: 1,
      },
    ]);
    await sendMessage(t.runtime, { tenantId, messageId: id }, { retryCount: 0 });
    expect(sendsOf(id)).toBe(0);
    expect((await api('GET', `/messages?callId=${listed!.id}`)).json().data).toMatchObject([
      { id, status: 'FAILED', failureReason: 'Not sent: the recipient is on the do-not-call list.' },
    ]);
  });

  it('puts a person who replies STOP on WhatsApp on the do-not-call list, once, with the message as evidence', async () => {
    const { api } = await tenant();
    const [stopper, chatty, tapper] = [uniqueNumber(), uniqueNumber(), uniqueNumber()];
    const deliver = async (messages: { id: string; from: string; text?: string; button?: string }[]) => {
      const payload = incomingMessagesPayload({
        phoneNumberId: WHATSAPP.sender,
        wabaId: WHATSAPP.wabaId,
        messages: messages.map((m) => ({ ...m, timestamp: clock.now() })),
      });
      return postWhatsAppWebhook(payload);
    };
    const received = await deliver([
      { id: 'wamid.stop1', from: stopper, text: ' Stop. ' },
      { id: 'wamid.chat1', from: chatty, text: "Don't stop, I like the reminders" },
      { id: 'wamid.tap1', from: tapper, button: 'Stop promotions' },
    ]);
    expect(received).toBe(2);
    expect((await api('GET', `/dnc/${encodeURIComponent(stopper)}`)).json()).toMatchObject({
      source: 'whatsapp',
      reason: 'Replied "Stop." on WhatsApp.',
      evidence: { messageId: 'wamid.stop1' },
    });
    expect((await api('GET', `/dnc/${encodeURIComponent(tapper)}`)).json()).toMatchObject({
      source: 'whatsapp',
      evidence: { messageId: 'wamid.tap1' },
    });
    expect((await api('GET', `/dnc/${encodeURIComponent(chatty)}`)).statusCode).toBe(404);
    // A second STOP changes nothing: the first entry and its evidence stay.
    expect(await deliver([{ id: 'wamid.stop2', from: stopper, text: 'STOP' }])).toBe(0);
    expect((await api('GET', `/dnc/${encodeURIComponent(stopper)}`)).json().evidence.messageId).toBe('wamid.stop1');
  });

  it('puts a person who texts STOP to a Twilio number on the do-not-call list; a text not signed for the tenant changes nothing', async () => {
    const { api, tenantId } = await tenant();
    const url = `${publicUrl}/api/v1/messages/twilio-incoming?tenant=${tenantId}`;
    const [stopper, forger] = [uniqueNumber(), uniqueNumber()];
    const answer = await twilio.receiveMessage(url, { from: stopper, to: '+14155550000', body: 'STOP' });
    expect(answer).toEqual({ status: 200, contentType: 'text/xml', body: '<?xml version="1.0" encoding="UTF-8"?><Response/>' });
    expect((await api('GET', `/dnc/${encodeURIComponent(stopper)}`)).json()).toMatchObject({
      source: 'sms',
      reason: 'Replied "STOP" by SMS to +14155550000.',
      evidence: { messageId: expect.stringMatching(/^SM/) },
    });
    expect((await twilio.receiveMessage(url, { from: forger, to: '+14155550000', body: 'STOP' }, 'another-accounts-token')).status).toBe(
      403,
    );
    expect((await twilio.receiveMessage(url, { from: forger, to: '+14155550000', body: 'Thanks!' })).status).toBe(200);
    expect((await api('GET', `/dnc/${encodeURIComponent(forger)}`)).statusCode).toBe(404);
  });

  it('retries a provider 5xx, fails a 4xx with the provider message, and never resends a message left SENDING by a dead worker', async () => {
    const { key, api, tenantId } = await tenant();
    const campaign = await dialAll(key, [{}, {}]);
    await campaign.run();
    const calls = (await api('GET', `/call-logs?campaignId=${campaign.campaignId}`)).json().data as { id: string; toNumber: string }[];
    // Messages recorded without send jobs, so this test alone drives them.
    const record = async (call: { id: string; toNumber: string }) => {
      const id = randomUUID();
      await insertMessages(t.runtime.db, tenantId, [
        {
          id,
          channel: 'WHATSAPP',
          call_id: call.id,
          agent_id: campaign.agentId,
          campaign_id: null,
          contact_id: null,
          to_number: call.toNumber,
          sender: null,
          provider: 'WHATSAPP',
          template_name: 'thanks',
          language_code: 'en_US',
          body: null,
          parameters: [],
          dlt_sender_id: null,
          dlt_template_id: null,
          encoding: null,
          segments: null,
        },
      ]);
      return id;
    };
    const status = async (id: string) =>
      (
        await t.runtime.db.query<{ status: string; failure_reason: string | null; attempts: number }>(
          'SELECT status, failure_reason, attempts FROM messages WHERE id = $1',
          [id],
        )
      ).rows[0]!;
    // Earlier tests' messages (an opt-out confirmation, say) may still go out through the job
    // queue: each failure below is for this test's own message.
    const [first, second] = [await record(calls[0]!), await record(calls[1]!)];

    graph.failNext(503, graphError('Service temporarily unavailable', 'OAuthException', 2), first);
    await expect(sendMessage(t.runtime, { tenantId, messageId: first }, { retryCount: 0 })).rejects.toThrow(/temporarily unavailable/);
    expect(await status(first)).toMatchObject({ status: 'QUEUED', attempts: 1 });
    await sendMessage(t.runtime, { tenantId, messageId: first }, { retryCount: 1 });
    expect(await status(first)).toMatchObject({ status: 'SENT', attempts: 2 });

    graph.failNext(400, graphError('(#132001) Template name does not exist in the translation', 'OAuthException', 132001), second);
    await sendMessage(t.runtime, { tenantId, messageId: second }, { retryCount: 0 });
    expect(await status(second)).toMatchObject({
      status: 'FAILED',
      failure_reason: expect.stringContaining('Template name does not exist'),
      attempts: 1,
    });

    // A worker died after handing the message over: SENDING stays behind; the retry does not resend.
    await t.runtime.db.query("UPDATE messages SET status = 'SENDING', provider_message_id = NULL, failure_reason = NULL WHERE id = $1", [
      first,
    ]);
    const sentBefore = sendsOf(first);
    await sendMessage(t.runtime, { tenantId, messageId: first }, { retryCount: 2 });
    expect(sendsOf(first)).toBe(sentBefore);
    expect(await status(first)).toMatchObject({ status: 'FAILED', failure_reason: expect.stringContaining('Unconfirmed') });
    // The provider's status callback names our id: the record is corrected.
    const payload = statusWebhookPayload({
      phoneNumberId: WHATSAPP.sender,
      wabaId: WHATSAPP.wabaId,
      statuses: [{ id: 'wamid.HBgLMTQxNTU1NTAxMDAVAgARGBI', status: 'delivered', recipientId: '12125551000', timestamp: clock.now() }],
    }) as {
      entry: { changes: { value: { statuses: Record<string, unknown>[] } }[] }[];
    };
    payload.entry[0]!.changes[0]!.value.statuses[0]!.biz_opaque_callback_data = first;
    const signed = signedWhatsAppWebhook(WHATSAPP.appSecret, payload);
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/whatsapp/webhook', headers: signed.headers, payload: signed.body })).json()
        .received,
    ).toBe(1);
    expect(await status(first)).toMatchObject({ status: 'DELIVERED' });
  });
});
