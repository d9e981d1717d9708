import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fisherExact } from '../src/modules/analytics/significance.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { armOf } from '../src/modules/campaigns/experiment.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { money } from '../src/platform/money.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { apiAs, newTenant, startedSimulatedCampaign } from './voice-fixtures.ts';

// Issue 41, item 3: a campaign splits its contacts between versions of its agent, and analytics
// compare the arms. The model is the local OpenAI-compatible fake; each arm's calls do what their
// version's script makes them do, and the report is checked against the call log itself.
const clock = manualClock('2026-11-23T10:00:00.000Z'); // a Monday, inside the default call window
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;

beforeAll(async () => {
  chat = await startFakeChat();
  const model = { LLM_API_URL: `${chat.url}/v1`, LLM_API_KEY: 'sk-fake', LLM_MODEL: 'house-model', LLM_TIMEOUT_MS: '1000' };
  t = await startTestApp({
    clock,
    env: { ...model, SIMULATOR_RING_SECONDS: '0', SIMULATOR_TALK_SECONDS: '600', DIALER_CALLS_PER_SECOND: '1000' },
  });
});
afterAll(async () => {
  await t.close();
  await chat.close();
});

type Api = ReturnType<typeof apiAs>;
interface CallLog {
  id: string;
  contactId: string;
  status: string;
  outcome: string | null;
  agentVersion: number | null;
  durationSec: number | null;
  cost: { total: string } | null;
  outcomes: { type: string }[];
}

/** An agent that books appointments, published as version 1 and (a new prompt) version 2. */
async function bookingAgent(api: Api) {
  const agent = (
    await api('POST', '/agents', {
      name: 'Bookings',
      systemPrompt: 'Version one: be brief.',
      firstMessage: 'Hello, this is Bookings.',
      tools: ['book_appointment', 'end_call'],
      llm: { model: 'house-model' },
    })
  ).json();
  await api('POST', `/agents/${agent.id}/versions`);
  await api('PATCH', `/agents/${agent.id}`, { systemPrompt: 'Version two: offer a slot.' });
  await api('POST', `/agents/${agent.id}/versions`);
  return agent.id as string;
}

const tick = () => dialerTick(t.runtime);
const callsOf = async (api: Api, campaignId: string): Promise<CallLog[]> =>
  (await api('GET', `/call-logs?campaignId=${campaignId}&limit=200`)).json().data;

describe('a campaign split between versions', () => {
  it("puts each contact in its weighted arm for good, runs that arm's version, and compares the arms", async () => {
    const { api } = await newTenant(t.app);
    const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
    const agentId = await bookingAgent(api);
    // Every fifth contact is busy; the others answer and ask for a meeting.
    const contacts = Array.from({ length: 20 }, (_, i) => ({
      name: `Contact ${i}`,
      metadata: { simulate: i % 5 === 4 ? 'BUSY' : { say: ['Can we meet tomorrow?'] } },
    }));
    const experiment = {
      arms: [
        { version: 1, weight: 1 },
        { version: 2, weight: 1 },
      ],
    };
    const campaign = await startedSimulatedCampaign(api, tick, agentId, contacts, { experiment, maxConcurrentCalls: 20 });
    expect(campaign.experiment).toEqual(experiment);

    const assigned: { contactId: string; agentVersion: number }[] = (
      await api('GET', `/campaigns/${campaign.id}/contacts?limit=200`)
    ).json().data;
    for (const contact of assigned) expect(contact.agentVersion).toBe(armOf(experiment, campaign.id, contact.contactId));
    const armSizes = [1, 2].map((version) => assigned.filter((contact) => contact.agentVersion === version).length);
    expect(armSizes[0]! + armSizes[1]!).toBe(20);
    expect(Math.min(...armSizes)).toBeGreaterThan(0); // 2 in a million that a 20-contact split leaves an arm empty

    // Version 2 books a slot, version 1 says goodbye; each conversation takes a different time.
    for (const call of (await callsOf(api, campaign.id)).filter((each) => each.status === 'IN_PROGRESS')) {
      const end = { id: 'end', name: 'end_call', arguments: ['{"reason":"done"}'] };
      if (call.agentVersion === 2)
        chat.script(
          { kind: 'stream', toolCalls: [{ id: 'b', name: 'book_appointment', arguments: ['{"start":"2026-11-24T10:00:00Z"}'] }] },
          { kind: 'stream', text: ['Booked for tomorrow.'], toolCalls: [end] },
        );
      else chat.script({ kind: 'stream', text: ['Goodbye.'], toolCalls: [end] });
      const sent = chat.received.length;
      clock.advance(7_000);
      await converseOnSimulatedCall(t.runtime, { tenantId, callId: call.id });
      expect((chat.received[sent]!.body.messages as { content: string }[])[0]!.content).toContain(
        call.agentVersion === 2 ? 'Version two' : 'Version one',
      );
    }
    const log = await callsOf(api, campaign.id);
    expect(log.every((call) => call.status === 'ENDED')).toBe(true);
    for (const call of log) expect(call.agentVersion).toBe(armOf(experiment, campaign.id, call.contactId));

    const report = await api('GET', `/analytics/campaigns/${campaign.id}/experiment`);
    expect(report.statusCode).toBe(200);
    const body = report.json();
    expect(body).toMatchObject({ campaignId: campaign.id, agentId, success: ['appointment', 'payment_promise'], alpha: 0.05 });
    for (const [index, version] of [1, 2].entries()) {
      const calls = log.filter((call) => call.agentVersion === version);
      const answered = calls.filter((call) => call.outcome === 'ANSWERED');
      const durations = answered.map((call) => call.durationSec!).sort((a, b) => a - b);
      const median =
        durations.length % 2
          ? durations[(durations.length - 1) / 2]!
          : (durations[durations.length / 2 - 1]! + durations[durations.length / 2]!) / 2;
      const cost = calls.reduce((sum, call) => sum.add(call.cost!.total), money(0));
      const successes = version === 2 ? answered.length : 0;
      expect(body.arms[index]).toEqual({
        version,
        weight: 1,
        contacts: armSizes[index],
        contactsCalled: calls.length,
        calls: calls.length,
        answered: answered.length,
        outcomes: { ANSWERED: answered.length, UNANSWERED: 0, BUSY: calls.length - answered.length, FAILED: 0 },
        toolOutcomes: { appointment: successes, payment_promise: 0, opt_out: 0, transfer: 0 },
        successes,
        successRate: Math.round((successes / calls.length) * 10000) / 10000,
        durationSec: {
          mean: Math.round((durations.reduce((a, b) => a + b, 0) / durations.length) * 10) / 10,
          median,
        },
        cost: cost.toFixed(4),
        costPerSuccess: successes === 0 ? null : cost.div(successes).toFixed(4),
      });
    }
    const [control, variant] = body.arms;
    const p = fisherExact(
      { successes: variant.successes, trials: variant.contactsCalled },
      { successes: control.successes, trials: control.contactsCalled },
    );
    expect(body.comparisons).toEqual([
      {
        version: 2,
        against: 1,
        difference: Math.round((variant.successRate - control.successRate) * 10000) / 10000,
        pValue: Number(p.toPrecision(4)),
        test: 'fisher-exact',
        significant: p < 0.05,
        message: expect.stringMatching(p < 0.05 ? /^Significant: / : /^Not yet significant: .*; keep calling\.$/),
      },
    ]);

    // Counting an answered call as the success: both arms answered all but their busy contacts.
    const answeredReport = (await api('GET', `/analytics/campaigns/${campaign.id}/experiment?success=answered`)).json();
    expect(answeredReport.success).toEqual(['answered']);
    expect(answeredReport.arms.map((arm: { successes: number; answered: number }) => arm.successes)).toEqual(
      answeredReport.arms.map((arm: { answered: number }) => arm.answered),
    );
    const comparison = answeredReport.comparisons[0];
    expect(comparison.significant).toBe(comparison.pValue < 0.05);
  });

  it('keeps a retried contact in its arm: every attempt runs the same version', async () => {
    const { api } = await newTenant(t.app);
    const agentId = await bookingAgent(api);
    const contacts = Array.from({ length: 6 }, () => ({ metadata: { simulate: 'BUSY,UNANSWERED,BUSY' } }));
    const experiment = {
      arms: [
        { version: 2, weight: 3 },
        { version: 1, weight: 1 },
      ],
    };
    const campaign = await startedSimulatedCampaign(api, tick, agentId, contacts, {
      experiment,
      maxAttempts: 3,
      redialDelayMin: 1,
      maxConcurrentCalls: 10,
    });
    for (let attempt = 2; attempt <= 3; attempt++) {
      clock.advance(61_000);
      await tick();
      await tick();
    }
    const log = await callsOf(api, campaign.id);
    expect(log).toHaveLength(18);
    for (const call of log) expect(call.agentVersion).toBe(armOf(experiment, campaign.id, call.contactId));
    const report = (await api('GET', `/analytics/campaigns/${campaign.id}/experiment?success=answered`)).json();
    expect(report.arms.map((arm: { calls: number }) => arm.calls).reduce((a: number, b: number) => a + b)).toBe(18);
    // No one answered in either arm: no difference to find (or an arm the split left empty: nothing to compare yet).
    expect(report.comparisons[0].significant).toBe(false);
    expect([1, null]).toContain(report.comparisons[0].pValue);
  });

  it('reports one arm for a campaign without an experiment, 404 for another tenant, 400 for an unknown success', async () => {
    const { api } = await newTenant(t.app);
    const other = (await newTenant(t.app)).api;
    const agentId = await bookingAgent(api);
    const campaign = await startedSimulatedCampaign(
      api,
      tick,
      agentId,
      [{ metadata: { simulate: 'BUSY' } }, { metadata: { simulate: 'BUSY' } }],
      {
        agentVersion: 2,
      },
    );
    const report = (await api('GET', `/analytics/campaigns/${campaign.id}/experiment`)).json();
    expect(report.arms).toHaveLength(1);
    expect(report.arms[0]).toMatchObject({ version: 2, weight: null, contacts: 2, calls: 2, outcomes: { BUSY: 2 }, successRate: 0 });
    expect(report.arms[0].durationSec).toEqual({ mean: null, median: null });
    expect(report.comparisons).toEqual([]);
    const foreign = await other('GET', `/analytics/campaigns/${campaign.id}/experiment`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().message).toBe('Campaign not found.');
    const bad = await api('GET', `/analytics/campaigns/${campaign.id}/experiment?success=answered,bought`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('answered, appointment, payment_promise, transfer');
  });
});

describe("an experiment's validation", () => {
  it('refuses fewer than 2 or more than 10 arms, weights outside 1..1000, one version twice and unpublished versions', async () => {
    const { api } = await newTenant(t.app);
    const agentId = await bookingAgent(api);
    const arms = (...pairs: [number, number][]) => ({ arms: pairs.map(([version, weight]) => ({ version, weight })) });
    const create = (experiment: unknown, extra: Record<string, unknown> = {}) =>
      api('POST', '/campaigns', { name: `E ${Math.random()}`, agentId, experiment, ...extra });
    for (const experiment of [
      arms([1, 1]),
      arms(...Array.from({ length: 11 }, (_, i): [number, number] => [i + 1, 1])),
      arms([1, 0], [2, 1]),
      arms([1, 1001], [2, 1]),
      arms([1, 1.5], [2, 1]),
      { arms: [{ version: 1, weight: 1 }, { version: 2 }] },
    ]) {
      const response = await create(experiment);
      expect(response.statusCode, JSON.stringify(experiment)).toBe(400);
      expect(response.json().code).toBe('VALIDATION_FAILED');
    }
    const twice = await create(arms([1, 1], [2, 1], [1, 5]));
    expect(twice.statusCode).toBe(400);
    expect(twice.json()).toMatchObject({ details: [{ path: '/experiment/arms/2/version' }] });
    expect(twice.json().message).toContain('version 1 is in two arms');
    const unpublished = await create(arms([1, 1], [3, 1]));
    expect(unpublished.statusCode).toBe(404);
    expect(unpublished.json()).toMatchObject({ details: [{ path: '/experiment/arms/1/version' }] });
    // The edges are taken: two arms, weights 1 and 1,000.
    const edges = await create(arms([1, 1], [2, 1000]));
    expect(edges.statusCode).toBe(201);
    expect(edges.json().experiment).toEqual(arms([1, 1], [2, 1000]));
    // A draft's experiment is replaced or removed by PATCH, checked the same way.
    expect((await api('PATCH', `/campaigns/${edges.json().id}`, { experiment: arms([2, 1], [2, 1]) })).statusCode).toBe(400);
    expect((await api('PATCH', `/campaigns/${edges.json().id}`, { experiment: null })).statusCode).toBe(200);
    expect((await api('GET', `/campaigns/${edges.json().id}`)).json().experiment).toBeNull();
  });
});
