import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { creditWallet } from '../src/modules/identity/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { openFakeMediaStream, streamOf } from '../src/providers/twilio/fake-media-stream.ts';
import { startFakeTwilio, type FakeTwilio, type RingOptions } from '../src/providers/twilio/fake.ts';
import { startFakeWhatsApp, type FakeWhatsApp } from '../src/providers/whatsapp-cloud/fake.ts';
import { until, type TestApp } from './harness.ts';
import { tenantWith, uniqueNumber } from './voice-fixtures.ts';
import { marksOf, SPEAKING, speech, startVoiceLine, type VoiceLine } from './voice-line.ts';

// Inbound calls on a Twilio number: Twilio rings our signed webhook, the number's agent answers
// through the media stream, and the INCOMING post-call messages follow. Twilio (its webhook, media
// stream and status callbacks), Deepgram, ElevenLabs, the model and WhatsApp's Graph API are local
// fakes speaking their real wire formats.
const accountSid = `AC${randomBytes(16).toString('hex')}`;
const authToken = randomBytes(16).toString('hex');
const WHATSAPP = { accessToken: 'EAAG-test-access-token-0123456789', appSecret: 'app-secret-0123456789abcdef', wabaId: '102290129340398' };
const WHATSAPP_SENDER = '106540352242922';
let line: VoiceLine;
let t: TestApp;
let twilio: FakeTwilio;
let deepgram: VoiceLine['deepgram'];
let elevenlabs: VoiceLine['elevenlabs'];
let chat: VoiceLine['chat'];
let graph: FakeWhatsApp;
let port: number;
const clock = manualClock('2026-11-23T10:00:00.000Z');

beforeAll(async () => {
  [twilio, graph] = await Promise.all([
    startFakeTwilio({ accountSid, authToken }),
    startFakeWhatsApp({
      accessToken: WHATSAPP.accessToken,
      businessAccountId: WHATSAPP.wabaId,
      phoneNumbers: [{ id: WHATSAPP_SENDER, displayPhoneNumber: '+1 555-000-1234', verifiedName: 'Acme Clinic', qualityRating: 'GREEN' }],
    }),
  ]);
  line = await startVoiceLine({
    clock,
    env: { TWILIO_API_URL: twilio.url, WHATSAPP_API_URL: graph.url, JOBS_POLL_SECONDS: '0.5' },
    jobs: true,
  });
  ({ t, deepgram, elevenlabs, chat, port } = line);
});
afterAll(async () => {
  await line.close();
  await Promise.all([twilio.close(), graph.close()]);
});

const incomingUrl = () => `http://127.0.0.1:${port}/api/v1/telephony/twilio/incoming`;
const statusUrl = () => `http://127.0.0.1:${port}/api/v1/telephony/twilio/status`;

/**
 * A tenant with Twilio, Deepgram, ElevenLabs and WhatsApp connected, an agent, and a Twilio number
 * it answers (none when `inbound` is false).
 */
async function tenantWithNumber(options: { agent?: Record<string, unknown>; inbound?: boolean } = {}) {
  const { owner, api } = await tenantWith(t.app, {
    twilio: { accountSid, authToken },
    ...line.speechIntegrations(),
    whatsapp: {
      businessAccountId: WHATSAPP.wabaId,
      accessToken: WHATSAPP.accessToken,
      appSecret: WHATSAPP.appSecret,
      phoneNumberId: WHATSAPP_SENDER,
    },
  });
  const agent = await api('POST', '/agents', {
    name: `Front desk ${uniqueNumber()}`,
    firstMessage: 'Hello {{name|there}}, this is the clinic. How can I help?',
    systemPrompt: 'You answer the clinic phone. The caller is {{name}}.',
    ...SPEAKING,
    ...options.agent,
  });
  expect(agent.statusCode, agent.body).toBe(201);
  const agentId = agent.json().id as string;
  const number = (
    await api('POST', '/voice-numbers', {
      phoneNumber: uniqueNumber(),
      provider: 'TWILIO',
      ...(options.inbound === false ? {} : { inboundAgentId: agentId }),
    })
  ).json();
  const incomingCalls = async () => (await api('GET', '/call-logs?direction=INCOMING&limit=100')).json().data as Record<string, unknown>[];
  return { owner, api, agentId, number: number as { id: string; phoneNumber: string }, incomingCalls };
}

type Tenant = Awaited<ReturnType<typeof tenantWithNumber>>;

const ring = (tenant: Tenant, from: string, options: Partial<RingOptions> = {}) =>
  twilio.ringNumber({ voiceUrl: incomingUrl(), statusCallback: statusUrl(), from, to: tenant.number.phoneNumber, ...options });

const connect = (twiml: string, callSid: string) =>
  openFakeMediaStream({
    connectTo: `ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`,
    stream: streamOf(twiml),
    accountSid,
    authToken,
    callSid,
  });

async function endedCall(tenant: Tenant, id: string) {
  return until('the ended call', async () => {
    const call = (await tenant.api('GET', `/call-logs/${id}`)).json();
    return call.status === 'ENDED' ? call : undefined;
  });
}

describe('an incoming call to a Twilio number with an agent', () => {
  it('is answered through the media stream, with the caller’s contact, and followed by the INCOMING message', async () => {
    const tenant = await tenantWithNumber();
    const caller = uniqueNumber();
    // The caller is in two lists; the contact updated last is the one the call links.
    const older = (await tenant.api('POST', '/contact-lists', { name: `Patients ${uniqueNumber()}` })).json();
    const newer = (await tenant.api('POST', '/contact-lists', { name: `Leads ${uniqueNumber()}` })).json();
    const stale = (await tenant.api('POST', `/contact-lists/${newer.id}/contacts`, { phoneNumber: caller, name: 'Old name' })).json();
    const fresh = (await tenant.api('POST', `/contact-lists/${older.id}/contacts`, { phoneNumber: caller, name: 'Maria' })).json();
    expect((await tenant.api('PATCH', `/contact-lists/${older.id}/contacts/${fresh.id}`, { name: 'Maria Lopez' })).statusCode).toBe(200);
    expect(stale.id).not.toBe(fresh.id);
    const templates = ['OUTGOING', 'INCOMING'].map((process) => ({
      templateName: `${process.toLowerCase()}_answered`,
      process,
      callStatus: 'ANSWERED',
      bodyParameters: ['{{name|there}}'],
    }));
    expect((await tenant.api('POST', '/whatsapp/campaigns', { agentId: tenant.agentId, templates })).statusCode).toBe(201);

    const answer = await ring(tenant, caller);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/xml/);
    const stream = streamOf(answer.body);
    expect(stream.url).toBe(`ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`);
    const [call] = await tenant.incomingCalls();
    expect(stream.parameters).toEqual({ callId: call!.id, token: expect.stringMatching(/^[\w-]{43}$/) });
    expect(call).toMatchObject({
      direction: 'INCOMING',
      status: 'IN_PROGRESS',
      agentId: tenant.agentId,
      voiceNumberId: tenant.number.id,
      fromNumber: caller,
      toNumber: tenant.number.phoneNumber,
      contactId: fresh.id,
      campaignId: null,
      answeredAt: '2026-11-23T10:00:00.000Z',
    });

    deepgram.script(...utterance('Can I book a cleaning?', { startsAfterBytes: 800, endsAfterBytes: 4000 }));
    chat.script({ kind: 'stream', text: ['Of course. ', 'Tuesday at nine works.'], usage: { prompt_tokens: 90, completion_tokens: 9 } });
    const media = await connect(answer.body, answer.sid);
    await until('the opening', () => marksOf(media).length >= 1);
    expect(elevenlabs.speech.at(-1)!.body).toMatchObject({ text: 'Hello Maria Lopez, this is the clinic. How can I help?' });
    await media.sendAudio(speech(4000));
    await until('the reply', () => marksOf(media).length >= 3);
    const request = chat.received.at(-1)!.body;
    expect(request.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('The caller is Maria Lopez.') });
    expect(request.messages.at(-1)).toEqual({ role: 'user', content: 'Can I book a cleaning?' });

    // The caller hangs up: the stream stops and the call ends, whether or not the number reports its status.
    clock.advance(14_000);
    media.stop();
    await media.closed;
    const ended = await endedCall(tenant, call!.id as string);
    expect(ended).toMatchObject({ outcome: 'ANSWERED', endReason: 'contact_hung_up', durationSec: 14 });
    expect(ended.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', 'Hello Maria Lopez, this is the clinic. How can I help?'],
      ['contact', 'Can I book a cleaning?'],
      ['agent', 'Of course. Tuesday at nine works.'],
    ]);
    expect(ended.usage).toMatchObject({ llmInputTokens: 90, llmOutputTokens: 9, telephonySeconds: 14 });

    // The number's status callback, when it has one, finds the call already ended and changes nothing.
    expect(await twilio.sendStatus(answer.sid, 'completed', { CallDuration: '15' })).toBe(204);
    expect((await tenant.api('GET', `/call-logs/${call!.id}`)).json().durationSec).toBe(14);

    // call.ended: the agent's WhatsApp campaign sends its INCOMING/ANSWERED template to the caller, with their name.
    const sent = await until('the post-call message', () => graph.messages.find((m) => `+${m.to}` === caller));
    expect(sent).toMatchObject({ templateName: 'incoming_answered', bodyParameters: ['Maria Lopez'] });
    expect(graph.messages.filter((m) => `+${m.to}` === caller)).toHaveLength(1);
  });

  it('ends with the status callback first when the number reports it, billed for Twilio’s duration', async () => {
    const tenant = await tenantWithNumber();
    const caller = uniqueNumber();
    const answer = await ring(tenant, caller);
    const [call] = await tenant.incomingCalls();
    expect(call!.contactId).toBeNull(); // no list holds the caller
    deepgram.script();
    const media = await connect(answer.body, answer.sid);
    await until('the opening', () => marksOf(media).length >= 1);
    expect(elevenlabs.speech.at(-1)!.body).toMatchObject({ text: 'Hello there, this is the clinic. How can I help?' });
    expect(await twilio.sendStatus(answer.sid, 'completed', { CallDuration: '6' })).toBe(204);
    const ended = await endedCall(tenant, call!.id as string);
    expect(ended).toMatchObject({ outcome: 'ANSWERED', endReason: 'contact_hung_up', durationSec: 6 });
    media.stop();
    await media.closed;
  });

  it('records one call when Twilio retries the webhook, and answers the retry the same way', async () => {
    const tenant = await tenantWithNumber();
    const caller = uniqueNumber();
    const first = await ring(tenant, caller);
    const retried = await ring(tenant, caller, { sid: first.sid });
    expect(retried.status).toBe(200);
    expect(retried.body).toBe(first.body);
    expect(await tenant.incomingCalls()).toHaveLength(1);
  });

  it('is answered for an agent whose speech-to-text hears whole utterances (the voice-activity detection cuts them)', async () => {
    const tenant = await tenantWithNumber({ agent: { stt: { provider: 'OPENAI_COMPATIBLE' } } });
    const answer = await ring(tenant, uniqueNumber());
    expect(streamOf(answer.body).url).toBe(`ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`);
    const [call] = await tenant.incomingCalls();
    expect(call).toMatchObject({ status: 'IN_PROGRESS', agentId: tenant.agentId });
  });
});

describe('an incoming call no agent can take', () => {
  it('is told so and hung up when the number has no agent, recorded as not answered', async () => {
    const tenant = await tenantWithNumber({ inbound: false });
    const answer = await ring(tenant, uniqueNumber());
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(
      '<Response><Say language="en-US">Sorry, no one can take your call right now. Please try again later. Goodbye.</Say><Hangup/></Response>',
    );
    const [call] = await tenant.incomingCalls();
    expect(call).toMatchObject({
      status: 'ENDED',
      outcome: 'UNANSWERED',
      agentId: null,
      failureReason: 'The number has no inbound agent to answer it.',
    });
    // A retry is told the same, and records nothing more.
    expect((await ring(tenant, uniqueNumber(), { sid: answer.sid })).body).toBe(answer.body);
    expect(await tenant.incomingCalls()).toHaveLength(1);
  });

  it.each([
    ['the agent cannot listen', { agent: { stt: null, language: 'es-ES' } }, 'The agent has no speech-to-text to listen with.', 'es-ES'],
    ['the wallet is empty', { emptyWallet: true }, /^The wallet is empty \(0\.0000 \w+\); credit it to answer calls\.$/, 'en-US'],
  ] as const)('is told so and hung up when %s', async (_, setup, reason, language) => {
    const tenant = await tenantWithNumber('agent' in setup ? { agent: setup.agent } : {});
    if ('emptyWallet' in setup) {
      const profile = (await tenant.api('GET', '/profile')).json().data;
      await creditWallet(t.runtime.db, profile.tenant.id, `-${profile.wallet.balance}`, 'test: empty the wallet');
    }
    const answer = await ring(tenant, uniqueNumber());
    expect(answer.body).toContain(`<Say language="${language}">`);
    expect(answer.body).toMatch(/<Hangup\/><\/Response>$/);
    const [call] = await tenant.incomingCalls();
    expect(call).toMatchObject({
      status: 'ENDED',
      outcome: 'UNANSWERED',
      agentId: tenant.agentId,
      failureReason: expect.stringMatching(reason),
    });
  });
});

describe('the incoming-call webhook proves it is Twilio’s', () => {
  it.each([
    ['unsigned', { authToken: null }],
    ['signed with another auth token', { authToken: randomBytes(16).toString('hex') }],
    ['from another Twilio account', { accountSid: `AC${randomBytes(16).toString('hex')}` }],
  ] as const)('refuses a webhook %s with 403, recording nothing', async (_, overrides) => {
    const tenant = await tenantWithNumber();
    const answer = await ring(tenant, uniqueNumber(), overrides);
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'INVALID_SIGNATURE' });
    expect(await tenant.incomingCalls()).toEqual([]);
  });

  it('answers a call to a number no tenant holds with the same 403', async () => {
    const answer = await twilio.ringNumber({ voiceUrl: incomingUrl(), from: uniqueNumber(), to: uniqueNumber() });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'INVALID_SIGNATURE' });
  });
});
