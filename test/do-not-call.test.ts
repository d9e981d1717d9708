import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { placeAttempts, startAttempts } from '../src/modules/calls/service.ts';
import { addToDoNotCall } from '../src/modules/compliance/service.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { findVoiceNumber } from '../src/modules/agents/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { tenantCtx, withTransaction } from '../src/platform/context.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { bearer, multipart, postInPieces, startTestApp, twoTenantKeys, type TestApp } from './harness.ts';
import { apiAs, createCampaign, newTenant, uniqueNumber, voiceSetup } from './voice-fixtures.ts';

// The tenant's do-not-call list: its API, the dialer that asks it at every claim and again just
// before dialling, and the opt-outs said on a call (the retrieval agent's are in
// retrieval-agent.test.ts; here a model's opt_out tool). 2026-11-23 is a Monday.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;
let twilio: FakeTwilio;
const TWILIO = { accountSid: `AC${'d0'.repeat(16)}`, authToken: 'twilio-auth-token-dnc' };

beforeAll(async () => {
  chat = await startFakeChat();
  twilio = await startFakeTwilio(TWILIO);
  t = await startTestApp({
    clock,
    env: {
      LLM_API_URL: `${chat.url}/v1`,
      LLM_API_KEY: 'sk-fake',
      LLM_MODEL: 'house-model',
      SIMULATOR_RING_SECONDS: '2',
      SIMULATOR_TALK_SECONDS: '60',
      DIALER_CALLS_PER_SECOND: '1000',
      ALLOW_PRIVATE_URLS: '1',
      TWILIO_API_URL: twilio.url,
    },
  });
});
afterAll(async () => {
  await t.close();
  await chat.close();
  await twilio.close();
});

type Api = ReturnType<typeof apiAs>;

async function tenant() {
  const { key, otherKey } = await twoTenantKeys(t.app);
  const api = apiAs(t.app, key);
  return { key, api, other: apiAs(t.app, otherKey), tenantId: (await api('GET', '/profile')).json().data.tenant.id as string };
}

const contactsOf = async (api: Api, id: string) =>
  (await api('GET', `/campaigns/${id}/contacts`)).json().data as {
    phoneNumber: string;
    status: string;
    skipReason: string | null;
    attempts: number;
  }[];
const callsTo = async (api: Api, campaignId: string, phoneNumber: string) =>
  ((await api('GET', `/call-logs?campaignId=${campaignId}&limit=200`)).json().data as { toNumber: string }[]).filter(
    (call) => call.toNumber === phoneNumber,
  );

describe('the do-not-call list API', () => {
  it('adds a number once (keeping its first entry), checks, lists, searches and removes it, for its tenant only', async () => {
    const { api, other } = await tenant();
    const phone = uniqueNumber();
    const added = await api('POST', '/dnc', { phoneNumber: phone, reason: 'Asked by e-mail' });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toEqual({
      phoneNumber: phone,
      source: 'api',
      reason: 'Asked by e-mail',
      evidence: {},
      createdAt: clock.now().toISOString(),
    });
    const again = await api('POST', '/dnc', { phoneNumber: phone, reason: 'Another reason' });
    expect([again.statusCode, again.json().reason]).toEqual([200, 'Asked by e-mail']);
    // Formatting is forgiven as for contacts; the entry is the E.164 number.
    expect((await api('GET', `/dnc/${encodeURIComponent(`${phone.slice(0, 5)} ${phone.slice(5)}`)}`)).json().phoneNumber).toBe(phone);
    expect((await api('GET', `/dnc?search=${encodeURIComponent(phone.slice(-6))}`)).json()).toMatchObject({
      total: 1,
      data: [{ phoneNumber: phone }],
    });

    // Another tenant's list is its own: not found there, not listed there, not removable from there.
    expect((await other('GET', `/dnc/${encodeURIComponent(phone)}`)).statusCode).toBe(404);
    expect((await other('GET', '/dnc')).json().total).toBe(0);
    expect((await other('DELETE', `/dnc/${encodeURIComponent(phone)}`)).statusCode).toBe(404);

    expect((await api('DELETE', `/dnc/${encodeURIComponent(phone)}`)).statusCode).toBe(204);
    const gone = await api('GET', `/dnc/${encodeURIComponent(phone)}`);
    expect([gone.statusCode, gone.json().code, gone.json().message]).toEqual([
      404,
      'NOT_FOUND',
      'The number is not on the do-not-call list.',
    ]);
    expect((await api('DELETE', `/dnc/${encodeURIComponent(phone)}`)).statusCode).toBe(404);
  });

  it('refuses what is not a phone number, naming the form to use', async () => {
    const { api } = await tenant();
    for (const response of [await api('POST', '/dnc', { phoneNumber: '12' }), await api('GET', '/dnc/not-a-number')]) {
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        code: 'INVALID_PHONE_NUMBER',
        message: 'Invalid phone number; give it in E.164 form, such as +14155550100.',
      });
    }
    expect((await api('POST', '/dnc', { phoneNumber: uniqueNumber(), extra: true })).statusCode).toBe(400);
  });

  it('imports a CSV in one go (reporting bad rows, keeping listed entries) and exports the whole list as CSV', async () => {
    const { key, api } = await tenant();
    const [listed, first, second] = [uniqueNumber(), uniqueNumber(), uniqueNumber()];
    await api('POST', '/dnc', { phoneNumber: listed });
    const csv = `Phone Number,reason\n${first},"Called the office, angry"\nnot-a-phone,x\n${listed},dup\n${second},\n${first},twice\n`;
    const { body, contentType } = multipart(csv, 'file', 'dnc.csv');
    const imported = await t.app.inject({
      method: 'POST',
      url: '/api/v1/dnc/import',
      headers: { ...bearer(key), 'content-type': contentType },
      payload: body,
    });
    expect(imported.statusCode).toBe(200);
    expect(imported.json()).toEqual({
      added: 2,
      alreadyListed: 1,
      invalidRows: [{ row: 3, phone: 'not-a-phone', reason: 'Invalid phone number' }],
    });
    expect((await api('GET', `/dnc/${encodeURIComponent(first)}`)).json()).toMatchObject({
      source: 'import',
      reason: 'Called the office, angry',
      evidence: { row: 2 },
    });
    expect((await api('GET', `/dnc/${encodeURIComponent(listed)}`)).json()).toMatchObject({ source: 'api' });

    const exported = await api('GET', '/dnc/export');
    expect(exported.statusCode).toBe(200);
    expect(exported.headers['content-type']).toBe('text/csv; charset=utf-8');
    const lines = exported.body.trim().split('\n');
    expect(lines[0]).toBe('phone_number,source,reason,created_at,evidence');
    expect(
      lines
        .slice(1)
        .map((line) => line.split(',')[0])
        .sort(),
    ).toEqual([listed, first, second].sort());
    expect(lines.find((line) => line.startsWith(first))).toBe(
      `${first},import,"Called the office, angry",${clock.now().toISOString()},"{""row"":2}"`,
    );

    const notCsv = await t.app.inject({ method: 'POST', url: '/api/v1/dnc/import', headers: bearer(key), payload: { phoneNumber: first } });
    expect([notCsv.statusCode, notCsv.json().code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
  });
});

describe('a do-not-call CSV import', () => {
  const importCsv = (key: string, csv: string) => {
    const { body, contentType } = multipart(csv, 'file', 'dnc.csv');
    return t.app.inject({
      method: 'POST',
      url: '/api/v1/dnc/import',
      headers: { ...bearer(key), 'content-type': contentType },
      payload: body,
    });
  };

  it('takes 20,000 numbers in one file (up to 100,000, as documented), where contact uploads stop at 500', async () => {
    const { key, api } = await tenant();
    const numbers = Array.from({ length: 20_000 }, (_, i) => `+1206${String(5_550_000 + i)}`);
    const imported = await importCsv(key, `phone\n${numbers.join('\n')}\n`);
    expect(imported.statusCode, imported.body).toBe(200);
    expect(imported.json()).toEqual({ added: 20_000, alreadyListed: 0, invalidRows: [] });
    expect((await api('GET', '/dnc?limit=1')).json().total).toBe(20_000);
  }, 120_000);

  it('exports cells a spreadsheet would run as formulas with a quote before them (CSV injection)', async () => {
    const { api } = await tenant();
    const phone = uniqueNumber();
    await api('POST', '/dnc', { phoneNumber: phone, reason: '=HYPERLINK("http://evil.example","x")' });
    const line = (await api('GET', '/dnc/export')).body.split('\n').find((row) => row.startsWith(phone));
    expect(line).toBe(`${phone},api,"'=HYPERLINK(""http://evil.example"",""x"")",${clock.now().toISOString()},{}`);
  });

  it('refuses a file of too many rows of empty fields with one limit in its sentence', async () => {
    const { key } = await tenant();
    const refused = await importCsv(key, `phone,reason\n+12065550100,x\n${',\n'.repeat(10_001)}`);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      code: 'INVALID_CSV',
      message: 'The CSV has more than 10,000 rows whose fields are all empty, so nothing was imported; delete the empty rows.',
    });
  });

  it('answers every refused upload that arrives slowly over a real connection (the reading of its rest used to stall)', async () => {
    // Reading stops at the refusal while the upload is still arriving; the rest is read and
    // dropped. When the parser had kept up with the upload, the rest was left paused and no answer
    // ever came (most of these uploads hung).
    const { key, api } = await tenant();
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { body, contentType } = multipart(`phone,reason\n+12065550101,x\n${',\n'.repeat(20_000)}`, 'file', 'dnc.csv');
    for (let upload = 0; upload < 5; upload++) {
      const answer = await postInPieces(`${address}/api/v1/dnc/import`, { ...bearer(key), 'content-type': contentType }, body);
      expect(answer, `upload ${upload + 1} got no answer`).toBeDefined();
      expect(answer!.status).toBe(400);
      expect(JSON.parse(answer!.body)).toMatchObject({ code: 'INVALID_CSV' });
    }
    expect((await api('GET', '/dnc')).json().total).toBe(0);
  }, 150_000);
});

describe('the dialer and the do-not-call list', () => {
  it('skips a listed number with its reason, and never redials a number listed mid-campaign', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    // +12125551000 is listed before the start; +12125551001 does not answer its first attempt and is listed before its retry.
    const setup = await voiceSetup(t.app, key, [{}, { simulate: 'UNANSWERED,ANSWERED' }, {}]);
    await api('POST', '/dnc', { phoneNumber: '+12125551000' });
    const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', redialDelayMin: 1, maxAttempts: 2 });
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    const waitingForRetry = async () => {
      const contact = (await contactsOf(api, campaign.id))[1]!;
      return contact.status === 'PENDING' && contact.attempts === 1;
    };
    for (let tick = 0; tick < 20 && !(await waitingForRetry()); tick++) {
      await dialerTick(t.runtime);
      clock.advance(5_000);
    }
    expect((await contactsOf(api, campaign.id))[1]).toMatchObject({ status: 'PENDING', attempts: 1 });
    await api('POST', '/dnc', { phoneNumber: '+12125551001' });
    for (let tick = 0; tick < 100 && (await api('GET', `/campaigns/${campaign.id}`)).json().status !== 'COMPLETED'; tick++) {
      await dialerTick(t.runtime);
      clock.advance(5_000);
    }
    const campaignNow = (await api('GET', `/campaigns/${campaign.id}`)).json();
    expect(campaignNow.status).toBe('COMPLETED');
    expect(campaignNow.stats).toMatchObject({ total: 3, answered: 1, skipped: 2 });
    expect((await contactsOf(api, campaign.id)).map((c) => [c.phoneNumber, c.status, c.skipReason, c.attempts])).toEqual([
      ['+12125551000', 'SKIPPED', 'dnc', 0],
      ['+12125551001', 'SKIPPED', 'dnc', 1],
      ['+12125551002', 'ANSWERED', null, 1],
    ]);
    expect(await callsTo(api, campaign.id, '+12125551000')).toHaveLength(0);
    expect(await callsTo(api, campaign.id, '+12125551001')).toHaveLength(1);
  });

  it('does not dial a number listed between the claim and the dial', async () => {
    const { owner, key, api } = await newTenant(t.app, { kind: 'twilio', credentials: TWILIO });
    const setup = await voiceSetup(t.app, key, [{}, {}]);
    const line = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TWILIO' })).json();
    const ctx = tenantCtx(t.runtime, owner.tenantId);
    const voiceNumber = (await findVoiceNumber(ctx, line.id))!;
    const attempt = (phoneNumber: string) => ({
      agentId: setup.agentId,
      campaignId: null,
      contact: { id: null, phoneNumber, name: null, metadata: {} },
      attempt: 1,
      voiceNumber,
      dialTimeout: 30,
    });
    const [listed, free] = [uniqueNumber(), uniqueNumber()];
    const started = await withTransaction(ctx, (txCtx) => startAttempts(txCtx, [attempt(listed), attempt(free)] as never));
    // The opt-out lands after the attempts were claimed, before Twilio is asked.
    await addToDoNotCall(ctx, { phoneNumber: listed, source: 'sms', evidence: { messageId: 'SM123' } });
    await placeAttempts(ctx, started.toPlace);
    expect([...twilio.calls.values()].map((call) => call.to)).toEqual([free]);
    const calls = (await api('GET', '/call-logs?limit=10')).json().data as { toNumber: string; status: string }[];
    expect(calls.find((call) => call.toNumber === listed)).toMatchObject({
      status: 'ENDED',
      outcome: 'FAILED',
      failureReason: 'Not dialled: the number was put on the do-not-call list as the call was being placed.',
    });
    expect(calls.find((call) => call.toNumber === free)).toMatchObject({ status: 'RINGING' });
  });
});

describe('an opt-out said to a model', () => {
  it('is offered to every model as the opt_out tool, which lists the number with the call and the turn as evidence', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api, tenantId } = await tenant();
    const setup = await voiceSetup(t.app, key, [{ simulate: { say: ['Please never call this number again.'] } }, { simulate: 'BUSY' }]);
    await api('PATCH', `/agents/${setup.agentId}`, { firstMessage: 'Hi, this is the clinic.', tools: [] });
    const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', maxAttempts: 1 });
    await api('POST', `/campaigns/${campaign.id}/start`, {});
    for (let tick = 0; tick < 5; tick++) {
      await dialerTick(t.runtime);
      clock.advance(2_000);
    }
    const live = (
      (await api('GET', `/call-logs?campaignId=${campaign.id}`)).json().data as { id: string; status: string; toNumber: string }[]
    ).find((call) => call.status === 'IN_PROGRESS')!;
    chat.script({
      kind: 'stream',
      text: ["Of course, you won't hear from us again. Goodbye."],
      toolCalls: [{ id: 'call_optout', name: 'opt_out', arguments: ['{}'] }],
      usage: { prompt_tokens: 50, completion_tokens: 12 },
    });
    const sent = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId: live.id });
    // The agent's tools are empty, and the model was still offered the opt-out.
    expect((chat.received[sent]!.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name)).toEqual(['opt_out']);
    const call = (await api('GET', `/call-logs/${live.id}`)).json();
    expect(call).toMatchObject({ status: 'ENDED', endReason: 'opted_out', outcomes: [{ type: 'opt_out' }] });
    const entry = (await api('GET', `/dnc/${encodeURIComponent(live.toNumber)}`)).json();
    expect(entry).toMatchObject({ phoneNumber: live.toNumber, source: 'call', evidence: { callId: live.id, transcriptTurn: 1 } });
    expect(call.transcript[1]).toMatchObject({ role: 'contact', text: 'Please never call this number again.' });
  });
});
