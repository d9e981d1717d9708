import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as calls from '../src/modules/calls/service.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { manualClock } from '../src/platform/clock.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import type { AnsweredBy } from '../src/providers/types.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs, createCampaign, newTenant, uniqueNumber, voiceSetup } from './voice-fixtures.ts';

// Answering machines: Twilio's asynchronous AMD (a local fake speaking Twilio's wire format signs its
// verdicts) and the simulator's metadata.simulate.answeredBy, under each campaign's policy.
// 2026-11-23 is a Monday; the simulator rings 2 s and talks 6 s.
const accountSid = `AC${randomBytes(16).toString('hex')}`;
const authToken = randomBytes(16).toString('hex');
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let twilio: FakeTwilio;
let publicUrl: string;

beforeAll(async () => {
  twilio = await startFakeTwilio({ accountSid, authToken });
  const port = await freeLoopbackPort();
  publicUrl = `http://127.0.0.1:${port}`;
  t = await startTestApp({
    clock,
    env: {
      PUBLIC_URL: publicUrl,
      TWILIO_API_URL: twilio.url,
      SIMULATOR_RING_SECONDS: '2',
      SIMULATOR_TALK_SECONDS: '6',
      DIALER_CALLS_PER_SECOND: '1000',
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await t.close();
  await twilio.close();
});

type Api = ReturnType<typeof apiAs>;
interface CallLog {
  id: string;
  toNumber: string;
  attempt: number;
  status: string;
  outcome: string | null;
  answeredBy: string | null;
  endReason: string | null;
  failureReason: string | null;
  transcript: { role: string; text: string; by?: string }[];
  usage: Record<string, unknown> | null;
  cost: Record<string, string> | null;
}

const VOICEMAIL = 'Hi {{name|there}}, this is {{agent.name}} for {{campaign.name|us}} & your {{metadata.plan|usual}} plan. Call us <back>!';

async function twilioTenant(contacts: string[], answeringMachine: unknown, settings: Record<string, unknown> = {}) {
  const { key, api } = await newTenant(t.app, { kind: 'twilio', credentials: { accountSid, authToken } });
  const agent = (await api('POST', '/agents', { name: 'Maya', language: 'es-ES' })).json();
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TWILIO' })).json();
  const list = (await api('POST', '/contact-lists', { name: 'AMD list' })).json();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: contacts.map((phoneNumber, i) => ({ phoneNumber, name: `Ana ${i + 1}`, metadata: { plan: 'gold' } })),
  });
  const campaign = await createCampaign(t.app, key, {
    name: `Renewals ${randomBytes(3).toString('hex')}`,
    agentId: agent.id,
    voiceNumberId: number.id,
    contactListId: list.id,
    timezone: 'UTC',
    maxAttempts: 2,
    redialDelayMin: 1,
    answeringMachine,
    ...settings,
  });
  expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
  return { api, campaign: { id: campaign.id, name: campaign.name as string } };
}

const callsTo = async (api: Api, to: string) =>
  ((await api('GET', '/call-logs?limit=200')).json().data as CallLog[])
    .filter((c) => c.toNumber === to)
    .sort((a, b) => a.attempt - b.attempt);
const lastCallTo = async (api: Api, to: string) => (await callsTo(api, to)).at(-1)!;
const sidFor = (to: string) => [...twilio.calls.values()].filter((c) => c.to === to).at(-1)!.sid;
const dialsTo = (to: string) => [...twilio.calls.values()].filter((c) => c.to === to).length;
const requestsFor = (sid: string) => twilio.requests.filter((r) => r.path.endsWith(`/Calls/${sid}.json`));
const contactState = async (api: Api, campaignId: string, phoneNumber: string) =>
  ((await api('GET', `/campaigns/${campaignId}/contacts`)).json().data as { phoneNumber: string; status: string; attempts: number }[]).find(
    (c) => c.phoneNumber === phoneNumber,
  )!;

interface ComplianceRecord {
  verdict: string;
  reason: string | null;
  phoneNumber: string;
  facts: { detectedBy?: string };
}
const complianceRecords = async (api: Api, campaignId: string) =>
  (await api('GET', `/campaigns/${campaignId}/compliance-records?format=json`)).json() as ComplianceRecord[];
/** The chain's answered records: the number, who answered, how it was known. */
const answersIn = (records: ComplianceRecord[]) =>
  records.filter((record) => record.verdict === 'answered').map((record) => [record.phoneNumber, record.reason, record.facts.detectedBy]);

async function postAnsweredBy(form: URLSearchParams, signature?: string) {
  return fetch(`${publicUrl}/api/v1/telephony/twilio/answered-by`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature ? { 'x-twilio-signature': signature } : {}) },
    body: form.toString(),
  });
}

describe('campaign settings', () => {
  it('refuses settings that do not hold together with a 400 and a sentence saying what to change', async () => {
    const { key } = await createKey(t.app, (await signUp(t.app)).token);
    const api = apiAs(t.app, key);
    const setup = await voiceSetup(t.app, key);
    const refusal = async (answeringMachine: unknown, voiceNumberId = setup.voiceNumberId) => {
      const response = await api('POST', '/campaigns', {
        name: `Bad ${randomBytes(3).toString('hex')}`,
        ...setup,
        voiceNumberId,
        answeringMachine,
      });
      expect(response.statusCode).toBe(400);
      return response.json() as { code: string; message: string; details?: { path: string }[] };
    };
    expect(await refusal({ detect: true, onMachine: 'LEAVE_VOICEMAIL' })).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'answeringMachine.voicemailMessage is required with LEAVE_VOICEMAIL: write what to say after the beep.',
      details: [{ path: '/answeringMachine/voicemailMessage' }],
    });
    expect((await refusal({ detect: true, voicemailMessage: 'Call us back.' })).message).toBe(
      'answeringMachine.voicemailMessage is left only with onMachine LEAVE_VOICEMAIL; set that, or remove the message.',
    );
    expect(await refusal({ detect: true, onMachine: 'LEAVE_VOICEMAIL', voicemailMessage: 'Hi {{first_name}}' })).toMatchObject({
      code: 'UNKNOWN_TEMPLATE_VARIABLE',
      message: expect.stringMatching(/^answeringMachine\.voicemailMessage uses \{\{first_name\}\}, which is not a template variable; use /),
      details: [{ path: '/answeringMachine/voicemailMessage' }],
    });
    expect((await refusal({ detect: true, onMachine: 'SHOUT' })).code).toBe('VALIDATION_FAILED');
    expect((await refusal({ detect: true, beep: 'yes' })).code).toBe('VALIDATION_FAILED');
    const telnyx = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TELNYX' })).json();
    expect((await refusal({ detect: true }, telnyx.id)).message).toMatch(
      /^TELNYX numbers cannot tell who answers; answering-machine detection needs a number of /,
    );

    // A valid setting is stored with its default, and PATCH (while DRAFT) changes or removes it.
    const created = await createCampaign(t.app, key, { ...setup, answeringMachine: { detect: true } });
    expect(created.answeringMachine).toEqual({ detect: true, onMachine: 'HANG_UP_AND_RETRY' });
    const patched = await api('PATCH', `/campaigns/${created.id}`, {
      answeringMachine: { detect: true, onMachine: 'LEAVE_VOICEMAIL', voicemailMessage: 'Hi {{name|there}}' },
    });
    expect(patched.json().answeringMachine).toEqual({ detect: true, onMachine: 'LEAVE_VOICEMAIL', voicemailMessage: 'Hi {{name|there}}' });
    expect((await api('PATCH', `/campaigns/${created.id}`, { answeringMachine: null })).json().answeringMachine).toBeNull();
    expect((await createCampaign(t.app, key, setup)).answeringMachine).toBeNull();
  });
});

describe('Twilio answering-machine detection', () => {
  it('asks Twilio for asynchronous DetectMessageEnd only when the campaign detects', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const detecting = ['+12125553000', '+12125553001'];
    const plain = ['+12125553002', '+12125553003'];
    await twilioTenant(detecting, { detect: true });
    await twilioTenant(plain, null);
    await dialerTick(t.runtime);
    for (const to of detecting) {
      expect(twilio.calls.get(sidFor(to))!.machineDetection).toEqual({
        mode: 'DetectMessageEnd',
        asyncAmd: 'true',
        statusCallback: `${publicUrl}/api/v1/telephony/twilio/answered-by`,
        statusCallbackMethod: 'POST',
      });
    }
    for (const to of plain) expect(twilio.calls.get(sidFor(to))!.machineDetection).toBeNull();
  });

  it('leaves the rendered voicemail after the beep, records it, bills only the line, and does not call again', async () => {
    clock.set('2026-11-23T11:00:00.000Z');
    const [machine, human] = ['+12125553010', '+12125553011'];
    const { api, campaign } = await twilioTenant([machine, human], {
      detect: true,
      onMachine: 'LEAVE_VOICEMAIL',
      voicemailMessage: VOICEMAIL,
    });
    await dialerTick(t.runtime);
    const sid = sidFor(machine);
    expect(await twilio.sendStatus(sid, 'in-progress')).toBe(204);
    clock.advance(5_000);
    expect(await twilio.sendAnsweredBy(sid, 'machine_end_beep', { detectionMs: 5000 })).toBe(204);

    const said = `Hi Ana 1, this is Maya for ${campaign.name} & your gold plan. Call us <back>!`;
    const escaped = said.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    expect(twilio.calls.get(sid)!.twimlUpdates).toEqual([`<Response><Say language="es-ES">${escaped}</Say><Hangup/></Response>`]);
    let call = await lastCallTo(api, machine);
    expect(call).toMatchObject({ status: 'IN_PROGRESS', answeredBy: 'machine', endReason: 'voicemail_left' });
    expect(call.transcript).toEqual([{ role: 'agent', text: said, at: '2026-11-23T11:00:05.000Z', by: 'voicemail' }]);

    // Twilio repeats itself: nothing happens twice.
    expect(await twilio.sendAnsweredBy(sid, 'machine_end_beep')).toBe(204);
    expect(twilio.calls.get(sid)!.twimlUpdates).toHaveLength(1);
    expect((await lastCallTo(api, machine)).transcript).toHaveLength(1);

    clock.advance(20_000);
    expect(await twilio.sendStatus(sid, 'completed', { CallDuration: '25', AnsweredBy: 'machine_end_beep' })).toBe(204);
    call = await lastCallTo(api, machine);
    expect(call).toMatchObject({ status: 'ENDED', outcome: 'UNANSWERED', answeredBy: 'machine', endReason: 'voicemail_left' });
    expect(call.usage).toMatchObject({ telephonySeconds: 25, ttsCharacters: 0, sttSeconds: 0, llmTokens: 0 });
    expect(call.cost).toMatchObject({ stt: '0.0000', tts: '0.0000', llm: '0.0000' });
    expect(call.cost!.telephony).not.toBe('0.0000');
    expect(await contactState(api, campaign.id, machine)).toMatchObject({ status: 'UNANSWERED', attempts: 1 });

    // A person is left alone: no TwiML, no hang-up, the call goes on.
    const humanSid = sidFor(human);
    await twilio.sendStatus(humanSid, 'in-progress');
    expect(await twilio.sendAnsweredBy(humanSid, 'human')).toBe(204);
    expect(requestsFor(humanSid)).toEqual([]);
    expect(await lastCallTo(api, human)).toMatchObject({ status: 'IN_PROGRESS', answeredBy: 'human', transcript: [] });
    await twilio.sendStatus(humanSid, 'completed', { CallDuration: '40' });
    expect(await lastCallTo(api, human)).toMatchObject({ outcome: 'ANSWERED', answeredBy: 'human' });

    // Each verdict follows its dial in the compliance chain, found by the provider.
    const records = await complianceRecords(api, campaign.id);
    expect(answersIn(records)).toEqual([
      [machine, 'machine', 'provider'],
      [human, 'human', 'provider'],
    ]);
    expect(records.findIndex((record) => record.verdict === 'dial' && record.phoneNumber === machine)).toBeLessThan(
      records.findIndex((record) => record.verdict === 'answered' && record.phoneNumber === machine),
    );

    clock.advance(10 * 60_000);
    await dialerTick(t.runtime);
    expect(dialsTo(machine)).toBe(1);
    expect((await api('GET', `/campaigns/${campaign.id}`)).json()).toMatchObject({
      status: 'COMPLETED',
      stats: { answered: 1, unanswered: 1 },
    });
  });

  it('hangs up on a machine and calls again later, never beyond maxAttempts; a fax is hung up on for good', async () => {
    clock.set('2026-11-23T12:00:00.000Z');
    const [machine, fax] = ['+12125553020', '+12125553021'];
    const { api, campaign } = await twilioTenant([machine, fax], { detect: true, onMachine: 'HANG_UP_AND_RETRY' });
    await dialerTick(t.runtime);

    for (let attempt = 1; attempt <= 2; attempt++) {
      const sid = sidFor(machine);
      // The verdict may come before Twilio's in-progress callback: the call is answered when detection began.
      clock.advance(4_000);
      expect(await twilio.sendAnsweredBy(sid, 'machine_end_silence', { detectionMs: 3000 })).toBe(204);
      expect(requestsFor(sid).map((r) => [...r.form.entries()])).toEqual([[['Status', 'completed']]]);
      const call = await lastCallTo(api, machine);
      expect(call).toMatchObject({
        attempt,
        status: 'ENDED',
        outcome: 'UNANSWERED',
        answeredBy: 'machine',
        endReason: 'answering_machine',
      });
      expect(call.usage).toMatchObject({ telephonySeconds: 3 });
      // Twilio's own final status for the hung-up call changes nothing.
      expect(await twilio.sendStatus(sid, 'completed', { CallDuration: '4' })).toBe(204);
      expect(await lastCallTo(api, machine)).toMatchObject({ outcome: 'UNANSWERED', endReason: 'answering_machine' });
      expect(await contactState(api, campaign.id, machine)).toMatchObject({
        status: attempt < 2 ? 'PENDING' : 'UNANSWERED',
        attempts: attempt,
      });
      // Not before the redial delay; then once.
      await dialerTick(t.runtime);
      expect(dialsTo(machine)).toBe(attempt);
      clock.advance(61_000);
      await dialerTick(t.runtime);
      expect(dialsTo(machine)).toBe(Math.min(attempt + 1, 2));
    }

    const faxSid = twilio.calls.get(sidFor(fax))!.sid;
    expect(dialsTo(fax)).toBe(1);
    await twilio.sendStatus(faxSid, 'in-progress');
    expect(await twilio.sendAnsweredBy(faxSid, 'fax')).toBe(204);
    expect(requestsFor(faxSid).map((r) => r.form.get('Status'))).toEqual(['completed']);
    expect(await lastCallTo(api, fax)).toMatchObject({ outcome: 'FAILED', answeredBy: 'fax', endReason: 'answering_machine' });
    expect(await contactState(api, campaign.id, fax)).toMatchObject({ status: 'FAILED', attempts: 1 });
    clock.advance(10 * 60_000);
    await dialerTick(t.runtime);
    expect([dialsTo(machine), dialsTo(fax)]).toEqual([2, 1]);
  });

  it('never shows a voicemail Twilio refused as left: the call ends not reached and is tried again', async () => {
    clock.set('2026-11-23T12:30:00.000Z');
    const [machine] = ['+12125553040', '+12125553041'];
    const { api, campaign } = await twilioTenant([machine, '+12125553041'], {
      detect: true,
      onMachine: 'LEAVE_VOICEMAIL',
      voicemailMessage: 'Please call us back.',
    });
    await dialerTick(t.runtime);
    const sid = sidFor(machine);
    await twilio.sendStatus(sid, 'in-progress');
    twilio.failNext(500, { code: 20500, message: 'Internal Server Error', status: 500 });
    expect(await twilio.sendAnsweredBy(sid, 'machine_end_beep')).toBe(204);
    expect(await lastCallTo(api, machine)).toMatchObject({ status: 'IN_PROGRESS', answeredBy: 'machine', endReason: null, transcript: [] });
    await twilio.sendStatus(sid, 'completed', { CallDuration: '30' });
    expect(await lastCallTo(api, machine)).toMatchObject({ outcome: 'UNANSWERED', answeredBy: 'machine', endReason: null });
    expect(await contactState(api, campaign.id, machine)).toMatchObject({ status: 'PENDING', attempts: 1 });
  });

  it("refuses an unsigned, wrongly signed or other tenant's verdict, and one it cannot read, changing nothing", async () => {
    clock.set('2026-11-23T13:00:00.000Z');
    const [victim] = ['+12125553030', '+12125553031'];
    const { api } = await twilioTenant([victim, '+12125553031'], { detect: true, onMachine: 'HANG_UP_AND_RETRY' });
    await dialerTick(t.runtime);
    const sid = sidFor(victim);
    const form = new URLSearchParams({
      AccountSid: accountSid,
      CallSid: sid,
      AnsweredBy: 'machine_end_beep',
      MachineDetectionDuration: '3000',
    });
    for (const signature of [undefined, 'bm90IGEgc2lnbmF0dXJl']) {
      const response = await postAnsweredBy(form, signature);
      expect(response.status).toBe(403);
      expect(((await response.json()) as { code: string }).code).toBe('INVALID_SIGNATURE');
    }

    // Another tenant, with its own Twilio account, signs a verdict about this tenant's call.
    const otherToken = randomBytes(16).toString('hex');
    await newTenant(t.app, { kind: 'twilio', credentials: { accountSid: `AC${randomBytes(16).toString('hex')}`, authToken: otherToken } });
    expect(await twilio.sendAnsweredBy(sid, 'machine_end_beep', { authToken: otherToken })).toBe(403);

    // Signed, but not a verdict Twilio defines.
    const unreadable = await twilio.sendAnsweredBy(sid, 'robot');
    expect(unreadable).toBe(400);

    expect(await lastCallTo(api, victim)).toMatchObject({ status: 'RINGING', answeredBy: null });
    expect(requestsFor(sid)).toEqual([]);
  });
});

describe('who answered, heard on the calls themselves', () => {
  /** A tenant's campaign calls to `numbers`, all answered and in progress (no answering-machine policy), with their ids in that order. */
  async function callsInProgress(numbers: string[]) {
    const { api, campaign } = await twilioTenant(numbers, null);
    await dialerTick(t.runtime);
    for (const to of numbers) expect(await twilio.sendStatus(sidFor(to), 'in-progress')).toBe(204);
    const ctx = tenantCtx(t.runtime, (await api('GET', '/profile')).json().data.tenant.id);
    const ids: string[] = [];
    for (const to of numbers) ids.push((await lastCallTo(api, to)).id);
    return { api, campaign, ctx, ids };
  }

  /** The verdicts asked in one turn, as the lines of a campaign's calls answered together ask them. */
  const heardInOneTurn = (ctx: ReturnType<typeof tenantCtx>, verdicts: [string, AnsweredBy, calls.HeardBy][]) =>
    Promise.all(verdicts.map(([callId, answeredBy, heardBy]) => calls.classifyInCall(ctx, callId, answeredBy, heardBy)));

  it("stores the verdicts a tenant's calls give in the same turn together: each call's in the order heard, an ended call's not at all", async () => {
    clock.set('2026-11-23T12:00:00.000Z');
    const [screened, person, hungUp] = ['+12125553040', '+12125553041', '+12125553042'];
    const { api, campaign, ctx, ids } = await callsInProgress([screened, person, hungUp]);
    const [screenedId, personId, hungUpId] = ids as [string, string, string];
    expect(await twilio.sendStatus(sidFor(hungUp), 'completed', { CallDuration: '3' })).toBe(204);

    const decisions = await heardInOneTurn(ctx, [
      [screenedId, 'call_screening', 'words'],
      [personId, 'human', 'words'],
      [hungUpId, 'human', 'words'],
      [screenedId, 'human', 'words'],
      // A person heard stands: a beep after it decides nothing.
      [personId, 'machine', 'beep'],
    ]);
    expect(decisions).toEqual([{ act: 'converse' }, { act: 'converse' }, undefined, { act: 'converse' }, undefined]);
    expect(await lastCallTo(api, screened)).toMatchObject({ status: 'IN_PROGRESS', answeredBy: 'human' });
    expect(await lastCallTo(api, person)).toMatchObject({ status: 'IN_PROGRESS', answeredBy: 'human' });
    expect((await lastCallTo(api, hungUp)).answeredBy).toBeNull();
    const records = await complianceRecords(api, campaign.id);
    expect(answersIn(records)).toEqual([
      [screened, 'call_screening', 'words'],
      [person, 'human', 'words'],
      [screened, 'human', 'words'],
    ]);
    expect((await api('GET', '/compliance/records/verify')).json()).toMatchObject({ valid: true });
  });

  it('stores the second verdict of a call heard twice in one turn after the first verdicts of every call of that turn', async () => {
    clock.set('2026-11-23T12:30:00.000Z');
    const numbers = ['+12125553050', '+12125553051', '+12125553052', '+12125553053'];
    const [twice, person, machine, later] = numbers as [string, string, string, string];
    const { api, campaign, ctx, ids } = await callsInProgress(numbers);
    const [twiceId, personId, machineId, laterId] = ids as [string, string, string, string];

    // The call heard twice is heard again before the last call is heard at all.
    const decisions = await heardInOneTurn(ctx, [
      [twiceId, 'call_screening', 'words'],
      [personId, 'human', 'words'],
      [machineId, 'machine', 'beep'],
      [twiceId, 'human', 'words'],
      [laterId, 'human', 'words'],
    ]);
    // No answering-machine policy: a machine is talked to as a person would be.
    expect(decisions).toEqual([{ act: 'converse' }, { act: 'converse' }, { act: 'converse' }, { act: 'converse' }, { act: 'converse' }]);
    expect((await lastCallTo(api, twice)).answeredBy).toBe('human');
    expect((await lastCallTo(api, person)).answeredBy).toBe('human');
    expect((await lastCallTo(api, machine)).answeredBy).toBe('machine');
    expect((await lastCallTo(api, later)).answeredBy).toBe('human');
    // Every call's first verdict in the order asked, then the second verdict of the call heard twice.
    expect(answersIn(await complianceRecords(api, campaign.id))).toEqual([
      [twice, 'call_screening', 'words'],
      [person, 'human', 'words'],
      [machine, 'machine', 'beep'],
      [later, 'human', 'words'],
      [twice, 'human', 'words'],
    ]);
    expect((await api('GET', '/compliance/records/verify')).json()).toMatchObject({ valid: true });
  });
});

describe('the simulator rehearses the same policy', () => {
  async function simulatedCampaign(contacts: Record<string, unknown>[], settings: Record<string, unknown>) {
    const { key } = await createKey(t.app, (await signUp(t.app)).token);
    const api = apiAs(t.app, key);
    const setup = await voiceSetup(t.app, key, contacts);
    const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', redialDelayMin: 1, ...settings });
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    for (let tick = 0; tick < 200; tick++) {
      await dialerTick(t.runtime);
      if ((await api('GET', `/campaigns/${campaign.id}`)).json().status === 'COMPLETED') break;
      clock.advance(5_000);
    }
    const calls = (
      (await api('GET', `/call-logs?campaignId=${campaign.id}&limit=200`)).json().data as (CallLog & { contactId: string })[]
    ).sort((a, b) => a.toNumber.localeCompare(b.toNumber) || a.attempt - b.attempt);
    const contacts_ = (await api('GET', `/campaigns/${campaign.id}/contacts`)).json().data as { status: string; attempts: number }[];
    return {
      calls,
      contacts: contacts_.map((c) => [c.status, c.attempts]),
      status: (await api('GET', `/campaigns/${campaign.id}`)).json().status,
    };
  }

  it('leaves the voicemail on a simulated machine and finishes the contact; a simulated person is talked to', async () => {
    clock.set('2026-11-23T14:00:00.000Z');
    const { calls, contacts, status } = await simulatedCampaign(
      [{ simulate: { answeredBy: 'machine' } }, { simulate: { answeredBy: 'human' } }],
      {
        maxAttempts: 3,
        answeringMachine: { detect: true, onMachine: 'LEAVE_VOICEMAIL', voicemailMessage: 'Hello {{name|there}}, please call us back.' },
      },
    );
    expect(status).toBe('COMPLETED');
    expect(contacts).toEqual([
      ['UNANSWERED', 1],
      ['ANSWERED', 1],
    ]);
    expect(calls[0]).toMatchObject({ outcome: 'UNANSWERED', answeredBy: 'machine', endReason: 'voicemail_left' });
    expect(calls[0]!.transcript).toEqual([
      expect.objectContaining({ role: 'agent', text: 'Hello Contact 1, please call us back.', by: 'voicemail' }),
    ]);
    expect(calls[0]!.usage).toMatchObject({ ttsCharacters: 0, llmTokens: 0 });
    expect(calls[1]).toMatchObject({ outcome: 'ANSWERED', answeredBy: 'human' });
  });

  it('hangs up on a simulated machine and retries within maxAttempts; without detection nobody asks', async () => {
    clock.set('2026-11-23T15:00:00.000Z');
    const { calls, contacts } = await simulatedCampaign(
      [{ simulate: { answeredBy: 'machine,human' } }, { simulate: { answeredBy: 'machine' } }, { simulate: { answeredBy: 'fax' } }],
      { maxAttempts: 3, answeringMachine: { detect: true } },
    );
    expect(contacts).toEqual([
      ['ANSWERED', 2],
      ['UNANSWERED', 3],
      ['FAILED', 1],
    ]);
    expect(calls.map((c) => [c.attempt, c.outcome, c.answeredBy])).toEqual([
      [1, 'UNANSWERED', 'machine'],
      [2, 'ANSWERED', 'human'],
      [1, 'UNANSWERED', 'machine'],
      [2, 'UNANSWERED', 'machine'],
      [3, 'UNANSWERED', 'machine'],
      [1, 'FAILED', 'fax'],
    ]);

    const undetected = await simulatedCampaign([{ simulate: { answeredBy: 'machine' } }, {}], { maxAttempts: 3 });
    expect(undetected.calls.map((c) => [c.outcome, c.answeredBy])).toEqual([
      ['ANSWERED', null],
      ['ANSWERED', null],
    ]);
  });
});
