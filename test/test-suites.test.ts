import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { processSource } from '../src/modules/knowledge/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startTestApp, until, type TestApp } from './harness.ts';
import { apiAs, newTenant, uniqueNumber } from './voice-fixtures.ts';

// Issue 41, item 2: test suites run through the conversation engine on the job queue, offline
// against the retrieval agent and with a model (a fake OpenAI-compatible server on loopback),
// on demand and on every publish, with results per version.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;

beforeAll(async () => {
  chat = await startFakeChat();
  // No LLM_API_URL: agents converse through the retrieval agent unless their tenant connects a model server.
  t = await startTestApp({
    clock,
    env: { ALLOW_PRIVATE_URLS: '1', LLM_TIMEOUT_MS: '2000', RATE_LLM_MODELS: '{"judge-model": {"input": "1", "output": "2"}}' },
  });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
});
afterAll(async () => {
  await t?.close();
  await chat?.close();
});

type Api = ReturnType<typeof apiAs>;

const FACTS =
  'Opening hours. The clinic opens at 8 am and closes at 6 pm on weekdays. Parking. Parking is free in the blue garage behind the building.';

/** An agent answering from a knowledge base of `FACTS` (processed as its job would). */
async function retrievalAgent(api: Api, tenantId: string, extra: Record<string, unknown> = {}) {
  const base = (await api('POST', '/knowledge-bases', { name: `KB ${uniqueNumber()}` })).json();
  const source = (
    await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'facts', rawText: FACTS })
  ).json();
  await processSource(t.runtime, { tenantId, sourceId: source.id, generation: 1 }, { retryCount: 0 });
  return (await api('POST', '/agents', { name: 'Clinic desk', knowledgeBaseIds: [base.id], ...extra })).json();
}

async function tenant() {
  const created = await newTenant(t.app);
  const tenantId = (await created.api('GET', '/profile')).json().data.tenant.id as string;
  return { ...created, tenantId };
}

const finished = (api: Api, runId: string) =>
  until(
    `run ${runId} to finish`,
    async () => {
      const run = (await api('GET', `/test-suite-runs/${runId}`)).json();
      return ['PASSED', 'FAILED'].includes(run.status) && run;
    },
    60_000,
  );

const HOURS = {
  name: 'asks the opening hours',
  script: ['Hello?', 'What time does the clinic open on weekdays?', 'Thank you, goodbye.'],
  assertions: [
    { type: 'said', phrase: 'OPENS AT 8 am' },
    { type: 'never_said', phrase: 'closed on weekdays' },
    { type: 'end_reason', equals: 'agent_ended' },
  ],
};

describe('a suite against the retrieval agent, offline', () => {
  it('runs on the job queue and passes, fails and skips each scenario for the right reason, at no cost', async () => {
    const { api, tenantId } = await tenant();
    const agent = await retrievalAgent(api, tenantId);
    const balance = (await api('GET', '/profile')).json().data.wallet.balance;
    const created = await api('POST', '/test-suites', {
      agentId: agent.id,
      name: 'Front desk',
      scenarios: [
        HOURS,
        {
          name: 'expects what the agent never does',
          script: ['Where can I park?'],
          assertions: [
            { type: 'said', phrase: 'park in the red garage' },
            { type: 'tool_called', tool: 'book_appointment', arguments: { durationMinutes: 30 } },
            { type: 'end_reason', equals: 'agent_ended' },
            { type: 'said', phrase: 'blue garage' },
          ],
        },
        {
          name: 'asks not to be called',
          contact: { name: 'Dana' },
          script: ['Please stop calling me.', 'Are you still there?'],
          assertions: [
            { type: 'end_reason', equals: 'opted_out' },
            { type: 'tool_not_called', tool: 'transfer_call' },
            { type: 'rubric', rubric: 'The agent apologises.' },
            { type: 'field', field: 'reason', equals: 'no more calls' },
          ],
        },
        {
          name: 'a persona',
          persona: { description: 'A busy parent.', goal: 'Book a visit.' },
          assertions: [{ type: 'said', phrase: 'booked' }],
        },
      ],
    });
    expect(created.statusCode).toBe(201);
    const suite = created.json();
    expect(suite).toMatchObject({ agentId: agent.id, name: 'Front desk', runOnPublish: true, description: null });

    const started = await api('POST', `/test-suites/${suite.id}/runs`);
    expect(started.statusCode).toBe(202);
    expect(started.json()).toMatchObject({ suiteId: suite.id, agentVersion: null, trigger: 'manual', status: 'QUEUED', scenarios: 4 });
    const run = await finished(api, started.json().id);
    expect(run).toMatchObject({ status: 'FAILED', passed: 2, failed: 1, skipped: 1, passRate: 2 / 3, costTotal: '0.0000' });
    const [hours, wrong, optOut, persona] = run.results;

    expect(hours).toMatchObject({ index: 0, status: 'passed', endReason: 'agent_ended', reason: null });
    expect(hours.assertions.map((verdict: { verdict: string }) => verdict.verdict)).toEqual(['passed', 'passed', 'passed']);
    expect(hours.assertions[0].why).toMatch(/^The agent said "OPENS AT 8 am" in turn \d+: ".*opens at 8 am/);
    expect(hours.transcript.filter((turn: { role: string }) => turn.role === 'contact')).toHaveLength(3);
    expect(hours.transcript.every((turn: { role: string; by?: string }) => turn.role !== 'agent' || turn.by === 'retrieval-agent')).toBe(
      true,
    );
    expect(hours.usage).toMatchObject({ llmTokens: 0, llmModel: null });

    expect(wrong.status).toBe('failed');
    expect(wrong.assertions).toEqual([
      expect.objectContaining({ verdict: 'failed', why: 'No turn of the agent says "park in the red garage".' }),
      expect.objectContaining({ verdict: 'failed', why: 'book_appointment was never called (tools called: none).' }),
      expect.objectContaining({ verdict: 'failed', why: 'The agent never ended the conversation.' }),
      expect.objectContaining({ verdict: 'passed' }),
    ]);

    // The opt-out ends the conversation: the second line is never said; the model's assertions say they need one.
    expect(optOut).toMatchObject({ status: 'passed', endReason: 'opted_out' });
    expect(optOut.transcript.filter((turn: { role: string }) => turn.role === 'contact')).toHaveLength(1);
    expect(optOut.assertions.slice(2)).toEqual([
      expect.objectContaining({ verdict: 'skipped', why: expect.stringMatching(/^skipped: needs a model/) }),
      expect.objectContaining({ verdict: 'skipped', why: expect.stringMatching(/^skipped: needs a model/) }),
    ]);
    expect(persona).toMatchObject({
      status: 'skipped',
      reason: expect.stringMatching(/^skipped: a persona needs a model/),
      transcript: [],
    });

    // Nothing was billed, nothing left the test: no call, no do-not-call entry.
    expect((await api('GET', '/profile')).json().data.wallet.balance).toBe(balance);
    expect((await api('GET', '/call-logs')).json().total).toBe(0);
    expect((await api('GET', '/test-suites/' + suite.id + '/runs')).json()).toMatchObject({
      total: 1,
      data: [{ id: run.id, status: 'FAILED' }],
    });
  });
});
