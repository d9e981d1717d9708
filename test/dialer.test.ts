import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { creditWallet } from '../src/modules/identity/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { money } from '../src/platform/money.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { startTestApp, twoTenantKeys, type TestApp } from './harness.ts';
import { apiAs, createCampaign, voiceSetup } from './voice-fixtures.ts';

// The dialer (contract §5, §8, §11) driven tick by tick with an injected clock on the SIMULATOR:
// rings 2 s, answered calls last 6 s. 2026-11-23 is a Monday.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { SIMULATOR_RING_SECONDS: '2', SIMULATOR_TALK_SECONDS: '6', DIALER_CALLS_PER_SECOND: '1000' } });
});
afterAll(() => t.close());

async function tenant() {
  const { key } = await twoTenantKeys(t.app);
  const api = apiAs(t.app, key);
  const profile = (await api('GET', '/profile')).json().data;
  return {
    key,
    api,
    tenantId: profile.tenant.id as string,
    balance: async () => (await api('GET', '/profile')).json().data.wallet.balance as string,
  };
}

async function runningCampaign(key: string, contacts: Record<string, unknown>[], settings: Record<string, unknown> = {}) {
  const setup = await voiceSetup(t.app, key, contacts);
  const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', redialDelayMin: 1, ...settings });
  const started = await apiAs(t.app, key)('POST', `/campaigns/${campaign.id}/start`, {});
  if (started.statusCode !== 202) throw new Error(started.body);
  return campaign.id;
}

/** Ticks, moving the clock by `stepMs` between ticks, until `done` or the deadline. */
async function tickUntil(done: () => Promise<boolean>, stepMs = 1000, maxTicks = 2000) {
  for (let i = 0; i < maxTicks; i++) {
    await dialerTick(t.runtime);
    if (await done()) return;
    clock.advance(stepMs);
  }
  throw new Error('the dialer did not get there in time');
}

const contactsOf = async (api: ReturnType<typeof apiAs>, id: string) =>
  (await api('GET', `/campaigns/${id}/contacts`)).json().data as {
    phoneNumber: string;
    status: string;
    attempts: number;
    lastOutcome: string | null;
    nextAttemptAt: string | null;
    lastCallId: string | null;
  }[];
const statusOf = async (api: ReturnType<typeof apiAs>, id: string) => (await api('GET', `/campaigns/${id}`)).json().status as string;

describe('dialling on the simulator', () => {
  it('dials every contact, retries per metadata.simulate up to maxAttempts, and completes', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(
      key,
      [{}, { simulate: 'BUSY,BUSY,ANSWERED' }, { simulate: 'UNANSWERED,UNANSWERED,UNANSWERED' }, { simulate: 'INVALID_NUMBER' }],
      { maxAttempts: 3 },
    );
    await tickUntil(async () => (await statusOf(api, id)) === 'COMPLETED', 5_000);
    const contacts = await contactsOf(api, id);
    expect(contacts.map((c) => [c.status, c.attempts])).toEqual([
      ['ANSWERED', 1],
      ['ANSWERED', 3],
      ['UNANSWERED', 3],
      ['FAILED', 1],
    ]);
    const campaign = (await api('GET', `/campaigns/${id}`)).json();
    expect(campaign.stats).toEqual({
      total: 4,
      pending: 0,
      retrying: 0,
      inProgress: 0,
      answered: 2,
      unanswered: 1,
      busy: 0,
      failed: 1,
      skipped: 0,
    });
    expect(campaign.completedAt).not.toBeNull();
    const calls = (await api('GET', `/call-logs?campaignId=${id}&limit=200`)).json();
    expect(calls.total).toBe(8);
    const invalid = calls.data.find((c: { toNumber: string }) => c.toNumber === contacts[3]!.phoneNumber);
    expect(invalid).toMatchObject({ outcome: 'FAILED', failureReason: 'The number is not a valid, callable number.' });
  });

  it('schedules a retry exactly redialDelayMin after the previous attempt ended', async () => {
    clock.set('2026-11-23T11:00:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{ simulate: 'BUSY' }, {}], { redialDelayMin: 7 });
    await dialerTick(t.runtime); // both dialled at 11:00:00
    clock.advance(2_000);
    await dialerTick(t.runtime); // BUSY ends when the 2 s of ringing end
    const [busy] = await contactsOf(api, id);
    expect(busy).toMatchObject({ status: 'PENDING', attempts: 1, lastOutcome: 'BUSY', nextAttemptAt: '2026-11-23T11:07:02.000Z' });
    // The stats say what the contacts say: busy once, waiting to be called again (busy counts final results).
    expect((await api('GET', `/campaigns/${id}`)).json().stats).toMatchObject({ pending: 1, retrying: 1, busy: 0, inProgress: 1 });
    clock.set('2026-11-23T11:07:01.999Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[0]!.attempts).toBe(1);
    clock.set('2026-11-23T11:07:02.000Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[0]).toMatchObject({ status: 'IN_PROGRESS', attempts: 2 });
  });

  it('dials only inside the call window: not at exactly callWindowEnd, and again at the next opening', async () => {
    clock.set('2026-11-23T17:59:59.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{}, {}], {
      maxConcurrentCalls: 1,
      callWindowStart: '09:00',
      callWindowEnd: '18:00',
      callDays: [1, 2],
    });
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id)).map((c) => c.attempts)).toEqual([1, 0]);
    clock.set('2026-11-23T18:00:00.000Z'); // the first call ended its ringing by now
    await tickUntil(async () => (await contactsOf(api, id))[0]!.status === 'ANSWERED', 1000, 20);
    clock.set('2026-11-23T18:00:00.000Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[1]!.attempts).toBe(0);
    clock.set('2026-11-24T08:59:59.999Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[1]!.attempts).toBe(0);
    clock.set('2026-11-24T09:00:00.000Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[1]!.attempts).toBe(1);
  });

  it('keeps at most maxConcurrentCalls calls live', async () => {
    clock.set('2026-11-23T12:00:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{}, {}, {}, {}, {}], { maxConcurrentCalls: 2 });
    let peak = 0;
    await tickUntil(async () => {
      peak = Math.max(peak, (await api('GET', `/campaigns/${id}`)).json().stats.inProgress);
      return (await statusOf(api, id)) === 'COMPLETED';
    });
    expect(peak).toBe(2);
  });

  it('records usage and per-component cost and debits the wallet by exactly the total', async () => {
    clock.set('2026-11-23T13:00:00.000Z');
    const { key, api, balance, tenantId } = await tenant();
    const before = money(await balance());
    expect((await api('GET', '/profile')).json().data.onboarding.hasTestedCall).toBe(false);
    const id = await runningCampaign(key, [{}, { simulate: 'UNANSWERED' }], { maxAttempts: 1 });
    const callLogs = async () => (await api('GET', `/call-logs?campaignId=${id}`)).json().data as { id: string; status: string }[];
    await tickUntil(async () => (await callLogs()).some((c) => c.status === 'IN_PROGRESS'));
    const live = (await callLogs()).find((c) => c.status === 'IN_PROGRESS')!;
    // What the conversation job does (this app runs no workers): the retrieval agent (no model is
    // configured) greets, the simulated contact says its two default lines; then silence.
    await converseOnSimulatedCall(t.runtime, { tenantId, callId: live.id });
    await tickUntil(async () => (await statusOf(api, id)) === 'COMPLETED');
    const calls = (await api('GET', `/call-logs?campaignId=${id}`)).json().data;
    const answered = calls.find((c: { outcome: string }) => c.outcome === 'ANSWERED');
    expect(answered).toMatchObject({
      status: 'ENDED',
      durationSec: 6,
      endReason: 'contact_hung_up',
      // Nothing but the line ran: no recogniser, no voice, no model (the retrieval agent spoke); 6 s of line.
      usage: {
        sttSeconds: 0,
        ttsCharacters: 0,
        llmTokens: 0,
        llmInputTokens: 0,
        llmOutputTokens: 0,
        llmInputAudioTokens: 0,
        llmOutputAudioTokens: 0,
        llmModel: null,
        llmProvider: null,
        sttProvider: null,
        ttsProvider: null,
        telephonyProvider: 'SIMULATOR',
        telephonySeconds: 6,
      },
      // Default rate card: 6 s at 0.014/min telephony; no platform fee (0 unless the operator sets one).
      cost: { stt: '0.0000', tts: '0.0000', llm: '0.0000', telephony: '0.0014', platformFee: '0.0000', total: '0.0014' },
    });
    expect(answered.transcript.map((turn: { role: string; by?: string }) => [turn.role, turn.by ?? null])).toEqual([
      ['agent', 'retrieval-agent'],
      ['contact', null],
      ['agent', 'retrieval-agent'],
      ['contact', null],
      ['agent', 'retrieval-agent'],
    ]);
    const unanswered = calls.find((c: { outcome: string }) => c.outcome === 'UNANSWERED');
    expect(unanswered.cost.total).toBe('0.0000');
    expect(money(await balance()).toFixed(4)).toBe(before.sub('0.0014').toFixed(4));
    expect((await api('GET', '/profile')).json().data.onboarding).toEqual({
      hasIntegration: true,
      hasFlow: true,
      hasTestedCall: true,
      completed: true,
    });
  });

  it('pauses a running campaign when the wallet runs dry, saying why, and refuses to resume until credited', async () => {
    clock.set('2026-11-23T14:00:00.000Z');
    const { key, api, tenantId, balance } = await tenant();
    const id = await runningCampaign(key, [{}, {}, {}], { maxConcurrentCalls: 1 });
    await creditWallet(
      t.runtime.db,
      tenantId,
      money('0.0010')
        .sub(await balance())
        .toFixed(4),
      'test: nearly empty',
    );
    await tickUntil(async () => (await statusOf(api, id)) === 'PAUSED');
    const campaign = (await api('GET', `/campaigns/${id}`)).json();
    expect(campaign.statusReason).toMatch(/wallet balance is -0\.0004; credit the wallet/);
    expect(campaign.stats).toMatchObject({ answered: 1, pending: 2 });
    expect((await api('POST', `/campaigns/${id}/resume`, {})).json().code).toBe('WALLET_EMPTY');
    await creditWallet(t.runtime.db, tenantId, '5', 'test: top up');
    expect((await api('POST', `/campaigns/${id}/resume`, {})).statusCode).toBe(202);
    await tickUntil(async () => (await statusOf(api, id)) === 'COMPLETED');
  });

  it('starts a SCHEDULED campaign by itself at scheduledAt', async () => {
    clock.set('2026-11-23T15:00:00.000Z');
    const { key, api } = await tenant();
    const setup = await voiceSetup(t.app, key);
    const { id } = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', scheduledAt: '2026-11-23T15:30:00.000Z' });
    clock.set('2026-11-23T15:29:59.999Z');
    await dialerTick(t.runtime);
    expect(await statusOf(api, id)).toBe('SCHEDULED');
    clock.set('2026-11-23T15:30:00.000Z');
    await dialerTick(t.runtime);
    expect(await statusOf(api, id)).toBe('RUNNING');
    expect((await api('GET', `/campaigns/${id}`)).json().stats.inProgress).toBe(2);
  });

  it('leaves a due SCHEDULED campaign that cannot start SCHEDULED, saying why', async () => {
    clock.set('2026-11-23T15:00:00.000Z');
    const { key, api } = await tenant();
    const { id } = await createCampaign(t.app, key, { scheduledAt: '2026-11-23T14:00:00.000Z' });
    await dialerTick(t.runtime);
    const campaign = (await api('GET', `/campaigns/${id}`)).json();
    expect(campaign).toMatchObject({ status: 'SCHEDULED' });
    expect(campaign.statusReason).toMatch(/^Not started: The campaign has no agent/);
  });

  it('enqueues call.ended in the same transaction as every call end', async () => {
    clock.set('2026-11-23T16:00:00.000Z');
    const { key, api, tenantId } = await tenant();
    const id = await runningCampaign(key, [{}, { simulate: 'BUSY' }], { maxAttempts: 1 });
    await tickUntil(async () => (await statusOf(api, id)) === 'COMPLETED');
    const { rows } = await t.runtime.db.query<{ call_id: string }>(
      "SELECT data->>'callId' AS call_id FROM pgboss.job WHERE name = 'call.ended' AND data->>'tenantId' = $1",
      [tenantId],
    );
    const calls = (await api('GET', `/call-logs?campaignId=${id}`)).json().data.map((c: { id: string }) => c.id);
    expect(rows.map((r) => r.call_id).sort()).toEqual([...calls].sort());
  });
});

describe('call logs', () => {
  it('filters, paginates, hangs up a live call once, and hides other tenants’ calls', async () => {
    clock.set('2026-11-23T10:30:00.000Z');
    const { key, api } = await tenant();
    const setup = await voiceSetup(t.app, key, [{}, {}, {}]);
    const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC' });
    await api('POST', `/campaigns/${campaign.id}/start`, {});
    await dialerTick(t.runtime);
    clock.advance(2_000);
    await dialerTick(t.runtime); // all three answered and talking
    const page = (await api('GET', `/call-logs?agentId=${setup.agentId}&limit=2`)).json();
    expect(page).toMatchObject({ total: 3, page: 1, limit: 2 });
    expect(page.data).toHaveLength(2);
    const live = page.data[0];
    expect(live).toMatchObject({ status: 'IN_PROGRESS', direction: 'OUTGOING', outcome: null });
    clock.advance(3_000);
    expect((await api('POST', `/call-logs/${live.id}/hangup`, {})).statusCode).toBe(202);
    expect((await api('GET', `/call-logs/${live.id}`)).json()).toMatchObject({ status: 'ENDED', outcome: 'ANSWERED', durationSec: 3 });
    expect((await api('POST', `/call-logs/${live.id}/hangup`, {})).json().code).toBe('CALL_NOT_LIVE');
    expect((await api('GET', `/call-logs?outcome=ANSWERED&campaignId=${campaign.id}`)).json().total).toBe(1);
    expect((await api('GET', '/call-logs?direction=INCOMING')).json().total).toBe(0);
    expect((await api('GET', '/call-logs?from=2026-11-23T10:31:00.000Z')).json().total).toBe(0);
    // A bare date is the whole of that day (UTC).
    const all = (await api('GET', '/call-logs')).json().total;
    expect(all).toBeGreaterThan(0);
    expect((await api('GET', '/call-logs?from=2026-11-23&to=2026-11-23')).json().total).toBe(all);
    expect((await api('GET', '/call-logs?to=2026-11-22')).json().total).toBe(0);
    expect((await api('GET', '/call-logs?from=2026-11-24')).json().total).toBe(0);
    expect((await api('GET', '/call-logs?from=2026-11-24T00:00:00.000Z&to=2026-11-23T00:00:00.000Z')).statusCode).toBe(400);
    expect((await api('GET', '/call-logs?limit=201')).statusCode).toBe(400);

    const other = await tenant();
    expect((await other.api('GET', `/call-logs/${live.id}`)).statusCode).toBe(404);
    expect((await other.api('POST', `/call-logs/${page.data[1].id}/hangup`, {})).statusCode).toBe(404);
    expect((await other.api('GET', '/call-logs')).json().total).toBe(0);
  });

  it('places a simulated inbound call to a SIMULATOR number, answered by its inbound agent, from the caller’s contact', async () => {
    clock.set('2026-11-23T10:45:00.000Z');
    const { key, api } = await tenant();
    const setup = await voiceSetup(t.app, key);
    // No inbound agent: nobody would answer, so nothing is placed, billed or reported.
    const unanswerable = await api('POST', '/simulator/inbound-calls', { voiceNumberId: setup.voiceNumberId, fromNumber: '+12125550199' });
    expect([unanswerable.statusCode, unanswerable.json().code]).toEqual([409, 'NO_INBOUND_AGENT']);
    expect(unanswerable.json().message).toMatch(
      /has no inbound agent to answer the call; give it one \(PATCH \/voice-numbers\/[0-9a-f-]{36} with inboundAgentId\)/,
    );
    expect((await api('GET', '/call-logs')).json().total).toBe(0);
    // The number's inbound agent is edited on the number.
    const edited = await api('PATCH', `/voice-numbers/${setup.voiceNumberId}`, { inboundAgentId: setup.agentId });
    expect([edited.statusCode, edited.json().inboundAgentId]).toEqual([200, setup.agentId]);
    const caller = (
      await api('POST', `/contact-lists/${setup.contactListId}/contacts`, { phoneNumber: '+12125550199', name: 'Alice' })
    ).json();
    const created = await api('POST', '/simulator/inbound-calls', { voiceNumberId: setup.voiceNumberId, fromNumber: '+1 212 555 0199' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      direction: 'INCOMING',
      fromNumber: '+12125550199',
      agentId: setup.agentId,
      status: 'RINGING',
      contactId: caller.id,
    });
    const stranger = await api('POST', '/simulator/inbound-calls', { voiceNumberId: setup.voiceNumberId, fromNumber: '+1 212 555 0198' });
    expect(stranger.json().contactId).toBeNull();
    clock.advance(2_000);
    await dialerTick(t.runtime);
    clock.advance(6_000);
    await dialerTick(t.runtime);
    expect((await api('GET', `/call-logs/${created.json().id}`)).json()).toMatchObject({
      status: 'ENDED',
      outcome: 'ANSWERED',
      durationSec: 6,
    });
    expect((await api('GET', '/call-logs?direction=INCOMING')).json().total).toBe(2);
  });
});
