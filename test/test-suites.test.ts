import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { RUN_TEST_SUITE, runSuite, runTestSuiteJob } from '../src/modules/suites/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { refusedWrites, startTestApp, until, type TestApp } from './harness.ts';
import { finishedRun, retrievalAgent, suiteTenant, type Api } from './suite-fixtures.ts';
import { parseXml } from './xml-parser.ts';

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

const tenant = () => suiteTenant(t);
// The tests that wait here for runs on the job queue give themselves 120 s: beyond finishedRun's
// 60 s deadline, so on a loaded machine a run that never finishes fails there, by name.
const finished = (api: Api, runId: string) => finishedRun(api, runId);

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
    const agent = await retrievalAgent(t, api, tenantId);
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
  }, 120_000);
});

const scenario = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  script: ['Hello?'],
  assertions: [{ type: 'said', phrase: 'hello' }],
  ...extra,
});

describe('exactly once', () => {
  it('stores and counts each scenario once when the run is handled twice at once (a job retried while it still ran)', async () => {
    const { api, tenantId } = await tenant();
    const agent = await retrievalAgent(t, api, tenantId);
    const scenarios = [HOURS, { ...HOURS, name: 'again' }, { ...HOURS, name: 'and again' }];
    const suite = (await api('POST', '/test-suites', { agentId: agent.id, name: 'Twice', scenarios })).json();
    const runId = (await api('POST', `/test-suites/${suite.id}/runs`)).json().id;
    // The queue's worker runs it too; the three handle it side by side.
    await Promise.all([
      runSuite(t.runtime, { tenantId, runId }, { retryCount: 0 }),
      runSuite(t.runtime, { tenantId, runId }, { retryCount: 0 }),
    ]);
    const run = await finished(api, runId);
    expect(run).toMatchObject({ status: 'PASSED', passed: 3, failed: 0, skipped: 0 });
    expect(run.results.map((result: { index: number }) => result.index)).toEqual([0, 1, 2]);
  }, 120_000);
});

describe('validation', () => {
  it('takes 200 scenarios of 30 lines and refuses one more of either, in the catalogue’s words', async () => {
    const { api } = await tenant();
    const agent = (await api('POST', '/agents', { name: 'Limits' })).json();
    const thirty = Array.from({ length: 30 }, (_, i) => `Line ${i + 1}.`);
    const many = (n: number) => Array.from({ length: n }, (_, i) => scenario(`Scenario ${i + 1}`, i === 0 ? { script: thirty } : {}));
    const ok = await api('POST', '/test-suites', { agentId: agent.id, name: 'Largest', scenarios: many(200) });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().scenarios).toHaveLength(200);

    const tooMany = await api('POST', '/test-suites', { agentId: agent.id, name: 'Too large', scenarios: many(201) });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json()).toMatchObject({ code: 'VALIDATION_FAILED', message: "Field 'scenarios' must have at most 200 items." });
    const tooLong = await api('POST', '/test-suites', {
      agentId: agent.id,
      name: 'Too long',
      scenarios: [scenario('Long', { script: [...thirty, 'One more.'] })],
    });
    expect(tooLong.json()).toMatchObject({ code: 'VALIDATION_FAILED', message: "Field 'scenarios.0.script' must have at most 30 items." });
    const unknownAssertion = await api('POST', '/test-suites', {
      agentId: agent.id,
      name: 'Odd',
      scenarios: [scenario('Odd', { assertions: [{ type: 'vibes', phrase: 'x' }] })],
    });
    expect(unknownAssertion.statusCode).toBe(400);
    expect(unknownAssertion.json().code).toBe('VALIDATION_FAILED');

    const both = await api('POST', '/test-suites', {
      agentId: agent.id,
      name: 'Both callers',
      scenarios: [scenario('Both', { persona: { description: 'A caller.', goal: 'Talk.' } }), scenario('Both')],
    });
    expect(both.statusCode).toBe(400);
    expect(both.json()).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'VALIDATION_FAILED',
      message: "Field 'scenarios.0' needs exactly one caller: a script (lines) or a persona (a model plays it).",
      details: [
        { path: '/scenarios/0', message: 'needs exactly one caller: a script (lines) or a persona (a model plays it)' },
        { path: '/scenarios/1/name', message: 'repeats the scenario name "Both"' },
      ],
      requestId: expect.any(String),
    });
    const twoMocks = await api('PATCH', `/test-suites/${ok.json().id}`, {
      scenarios: [
        scenario('Mocked', {
          mocks: [
            { tool: 'end_call', answer: 'a' },
            { tool: 'end_call', answer: 'b' },
          ],
        }),
      ],
    });
    expect(twoMocks.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: "Field 'scenarios.0.mocks.1.tool' repeats the mock of end_call.",
    });
    // Nothing changed by a refused edit.
    expect((await api('GET', `/test-suites/${ok.json().id}`)).json().scenarios).toHaveLength(200);
    expect((await api('POST', `/test-suites/${ok.json().id}/runs?version=0`)).statusCode).toBe(400);
  });
});

describe('tenant isolation', () => {
  it("answers 404 for another tenant's suites, runs and agents, and changes nothing", async () => {
    const { api, tenantId } = await tenant();
    const other = (await tenant()).api;
    const agent = await retrievalAgent(t, api, tenantId);
    const suite = (await api('POST', '/test-suites', { agentId: agent.id, name: 'Mine', scenarios: [HOURS] })).json();
    const run = (await api('POST', `/test-suites/${suite.id}/runs`)).json();
    await finished(api, run.id);
    for (const [method, url, body] of [
      ['GET', `/test-suites/${suite.id}`],
      ['PATCH', `/test-suites/${suite.id}`, { name: 'Theirs' }],
      ['DELETE', `/test-suites/${suite.id}`],
      ['POST', `/test-suites/${suite.id}/runs`],
      ['GET', `/test-suites/${suite.id}/runs`],
      ['GET', `/test-suites/${suite.id}/pass-rates`],
      ['GET', `/test-suite-runs/${run.id}`],
    ] as const) {
      const response = await other(method, url, body);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().code).toBe('NOT_FOUND');
    }
    const foreignAgent = await other('POST', '/test-suites', { agentId: agent.id, name: 'Theirs', scenarios: [HOURS] });
    expect(foreignAgent.statusCode).toBe(404);
    expect(foreignAgent.json().message).toBe('Agent not found.');
    expect((await other('GET', '/test-suites')).json().total).toBe(0);
    expect((await api('GET', `/test-suites?agentId=${agent.id}`)).json()).toMatchObject({ total: 1, data: [{ name: 'Mine' }] });
    expect((await api('GET', `/test-suites/${suite.id}/runs`)).json().total).toBe(1);
    expect((await api('DELETE', `/test-suites/${suite.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/test-suite-runs/${run.id}`)).statusCode).toBe(404);
  }, 120_000);
});

describe('versions and publishing', () => {
  it('runs a version as it was frozen, runs every suite on publish, and keeps pass rates per version', async () => {
    const { api, tenantId } = await tenant();
    const agent = await retrievalAgent(t, api, tenantId, { firstMessage: 'Hello from version one.' });
    const greeting = (name: string, runOnPublish = true) => ({
      agentId: agent.id,
      name,
      runOnPublish,
      scenarios: [scenario('greets as version one', { assertions: [{ type: 'said', phrase: 'version one' }] })],
    });
    const suite = (await api('POST', '/test-suites', greeting('Greeting'))).json();
    const quiet = (await api('POST', '/test-suites', greeting('Not on publish', false))).json();
    expect((await api('POST', `/test-suites/${suite.id}/runs?version=1`)).json()).toMatchObject({
      code: 'NOT_FOUND',
      message: `Agent ${agent.id} has no version 1; GET /api/v1/agents/${agent.id}/versions lists its published versions.`,
    });

    expect((await api('POST', `/agents/${agent.id}/versions`, {})).statusCode).toBe(201);
    const onPublish = await until('the run of version 1', async () => (await api('GET', `/test-suites/${suite.id}/runs`)).json().data[0]);
    expect(onPublish).toMatchObject({ trigger: 'publish', agentVersion: 1 });
    expect((await finished(api, onPublish.id)).status).toBe('PASSED');
    expect((await api('GET', `/test-suites/${quiet.id}/runs`)).json().total).toBe(0);

    // The agent changes; version 1 still greets as it did, the live agent does not.
    await api('PATCH', `/agents/${agent.id}`, { firstMessage: 'Hello from version two.' });
    const again = (await api('POST', `/test-suites/${suite.id}/runs?version=1`)).json();
    expect(again).toMatchObject({ agentVersion: 1, trigger: 'manual' });
    expect((await finished(api, again.id)).status).toBe('PASSED');
    const live = await finished(api, (await api('POST', `/test-suites/${suite.id}/runs`)).json().id);
    expect(live).toMatchObject({ status: 'FAILED', agentVersion: null, passRate: 0 });
    expect(live.results[0].assertions[0].why).toBe('No turn of the agent says "version one".');

    const rates = (await api('GET', `/test-suites/${suite.id}/pass-rates`)).json();
    expect(rates.versions).toEqual([
      expect.objectContaining({ agentVersion: 1, runs: 2, passRate: 1, latest: expect.objectContaining({ id: again.id }) }),
      expect.objectContaining({ agentVersion: null, runs: 1, passRate: 0, latest: expect.objectContaining({ id: live.id }) }),
    ]);
    // A publish that changes nothing is refused, and runs nothing.
    await api('PATCH', `/agents/${agent.id}`, { firstMessage: 'Hello from version one.' });
    expect((await api('POST', `/agents/${agent.id}/versions`, {})).statusCode).toBe(409);
    expect((await api('GET', `/test-suites/${suite.id}/runs`)).json().total).toBe(3);
  }, 120_000);
});

describe('a suite with a model', () => {
  async function modelTenant() {
    const created = await tenant();
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/integrations/llm',
      headers: { authorization: `Bearer ${created.owner.token}` },
      payload: { apiUrl: `${chat.url}/v1`, apiKey: 'sk-tenant' },
    });
    expect(put.statusCode).toBe(200);
    const agent = (
      await created.api('POST', '/agents', {
        name: 'Bank desk',
        firstMessage: 'Hello, this is the bank.',
        llm: { model: 'judge-model' },
        customTools: [
          {
            name: 'check_balance',
            description: 'The balance of an account.',
            parameters: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
            url: 'https://balance.example.invalid/tools',
          },
        ],
      })
    ).json();
    return { ...created, agent };
  }
  const MOCK = { tool: 'check_balance', answer: { balance: 42.5, currency: 'USD' } };
  const balanceCall = { id: 'call_1', name: 'check_balance', arguments: ['{"account":', '"A-1"}'] };
  const wallet = async (api: Api) => Number((await api('GET', '/profile')).json().data.wallet.balance);

  it("gives the model the mocked tool's answer, judges fields and a rubric with it, and bills the tenant", async () => {
    const { api, agent } = await modelTenant();
    expect((await api('PUT', `/analytics/agents/${agent.id}/bindings`, { fields: [{ name: 'balance', type: 'number' }] })).statusCode).toBe(
      200,
    );
    const suite = (
      await api('POST', '/test-suites', {
        agentId: agent.id,
        name: 'Balances',
        scenarios: [
          {
            name: 'tells the balance',
            script: ['What is the balance of account A-1?'],
            mocks: [MOCK],
            assertions: [
              { type: 'tool_called', tool: 'check_balance', arguments: { account: 'A-1' } },
              { type: 'tool_called', tool: 'check_balance', arguments: { account: 'B-2' } },
              { type: 'said', phrase: '42.50' },
              { type: 'field', field: 'balance', equals: 42.5 },
              { type: 'field', field: 'branch', equals: null },
              { type: 'rubric', rubric: 'The agent tells the caller the balance.' },
            ],
          },
        ],
      })
    ).json();
    const before = await wallet(api);
    const sent = chat.received.length;
    chat.script(
      { kind: 'stream', toolCalls: [balanceCall], usage: { prompt_tokens: 200, completion_tokens: 10 } },
      { kind: 'stream', text: ['Your balance is ', '42.50 dollars.'], usage: { prompt_tokens: 300, completion_tokens: 12 } },
      {
        kind: 'completion',
        content: '{"summary": "The balance.", "fields": {"balance": 42.5}}',
        usage: { prompt_tokens: 400, completion_tokens: 14 },
      },
      {
        kind: 'completion',
        content: '{"reasoning": "The agent said the balance, 42.50 dollars.", "passed": true}',
        usage: { prompt_tokens: 500, completion_tokens: 16 },
      },
    );
    const run = await finished(api, (await api('POST', `/test-suites/${suite.id}/runs`)).json().id);
    const requests = chat.received.slice(sent);
    expect(requests).toHaveLength(4);
    expect(requests.every((request) => request.authorization === 'Bearer sk-tenant' && request.body.model === 'judge-model')).toBe(true);
    expect(requests[0]!.body.tools).toContainEqual(
      expect.objectContaining({ function: expect.objectContaining({ name: 'check_balance' }) }),
    );
    // The mock's answer reached the model as the tool's result.
    expect(requests[1]!.body.messages).toContainEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: '{"balance":42.5,"currency":"USD"}',
    });
    expect(requests[2]!.body.response_format?.json_schema?.name).toBe('call_analytics');
    expect(requests[3]!.body.response_format?.json_schema?.name).toBe('rubric_verdict');
    expect(JSON.stringify(requests[3]!.body.messages)).toContain('The agent tells the caller the balance.');

    const [result] = run.results;
    expect(result.transcript.find((turn: { role: string }) => turn.role === 'tool')).toMatchObject({
      text: '{"balance":42.5,"currency":"USD"}',
      tool: { name: 'check_balance', arguments: { account: 'A-1' }, ok: true },
    });
    expect(result.assertions.map((verdict: { verdict: string }) => verdict.verdict)).toEqual([
      'passed',
      'failed',
      'passed',
      'passed',
      'failed',
      'passed',
    ]);
    expect(result.assertions[1].why).toBe('check_balance was called 1 time(s), never with {"account":"B-2"}: with {"account":"A-1"}.');
    expect(result.assertions[3].why).toBe('The model extracted balance = 42.5.');
    expect(result.assertions[4].why).toMatch(/^The agent's analytics binds no field branch \(bound: balance\)/);
    expect(result.assertions[5]).toMatchObject({
      why: 'The model judged the rubric met.',
      reasoning: 'The agent said the balance, 42.50 dollars.',
    });
    expect(result.usage).toMatchObject({ llmInputTokens: 1400, llmOutputTokens: 52, llmTokens: 1452, llmModel: 'judge-model' });
    expect(Number(run.costTotal)).toBeGreaterThan(0);
    expect(run).toMatchObject({ status: 'FAILED', failed: 1, costTotal: result.cost.total });
    expect((await wallet(api)).toFixed(4)).toBe((before - Number(run.costTotal)).toFixed(4));
  }, 120_000);

  it('lets a model play the persona until its goal is reached', async () => {
    const { api, agent } = await modelTenant();
    const suite = (
      await api('POST', '/test-suites', {
        agentId: agent.id,
        name: 'Persona',
        scenarios: [
          {
            name: 'Ana wants her balance',
            persona: { description: 'Ana, a customer in a hurry.', goal: 'Learn the balance of account A-1.', maxTurns: 3 },
            mocks: [MOCK],
            assertions: [
              { type: 'said', phrase: '42.50' },
              { type: 'end_reason', equals: null },
            ],
          },
        ],
      })
    ).json();
    const sent = chat.received.length;
    chat.script(
      { kind: 'stream', text: ['Hi, what is the balance of account A-1?'] },
      { kind: 'stream', toolCalls: [balanceCall] },
      { kind: 'stream', text: ['It is 42.50 dollars.'] },
      { kind: 'stream', text: ['[END]'] },
    );
    const run = await finished(api, (await api('POST', `/test-suites/${suite.id}/runs`)).json().id);
    const requests = chat.received.slice(sent);
    expect(requests).toHaveLength(4);
    const persona = requests[0]!.body.messages as { role: string; content: string }[];
    expect(persona[0]!.content).toContain('Learn the balance of account A-1.');
    expect(persona.slice(1)).toEqual([{ role: 'user', content: 'Hello, this is the bank.' }]);
    // The persona hears the agent as the user, and itself as the assistant.
    expect((requests[3]!.body.messages as unknown[]).slice(1)).toEqual([
      { role: 'user', content: 'Hello, this is the bank.' },
      { role: 'assistant', content: 'Hi, what is the balance of account A-1?' },
      { role: 'user', content: 'It is 42.50 dollars.' },
    ]);
    expect(run).toMatchObject({ status: 'PASSED', passed: 1 });
    expect(run.results[0].transcript.map((turn: { role: string; text: string }) => `${turn.role}: ${turn.text}`)).toEqual([
      'agent: Hello, this is the bank.',
      'contact: Hi, what is the balance of account A-1?',
      'tool: {"balance":42.5,"currency":"USD"}',
      'agent: It is 42.50 dollars.',
    ]);
  }, 120_000);
  it('fails a scenario on the last attempt of a run whose job throws every time: the run finishes FAILED, that scenario unbilled', async () => {
    const { api, agent, tenantId } = await modelTenant();
    const suite = (
      await api('POST', '/test-suites', {
        agentId: agent.id,
        name: 'One always throws',
        scenarios: [
          { name: 'fine', script: ['What is my balance?'], assertions: [{ type: 'said', phrase: '42 dollars' }] },
          { name: 'breaks', script: ['Say the odd word.'], assertions: [{ type: 'said', phrase: 'odd' }] },
        ],
      })
    ).json();
    const before = await wallet(api);
    chat.answerBy(({ messages }) =>
      JSON.stringify(messages).includes('odd word')
        ? { kind: 'stream', text: ['The odd word.'], usage: { prompt_tokens: 100, completion_tokens: 5 } }
        : { kind: 'stream', text: ['It is 42 dollars.'], usage: { prompt_tokens: 300, completion_tokens: 12 } },
    );
    // The database refuses the result of the scenario that breaks once it ran (one with a transcript): it converses, its
    // tokens are spent, and storing its result throws on every attempt, which the run does not expect.
    const refusal = 'the test refuses this result';
    const allowResults = await refusedWrites(
      t.runtime.db,
      'test_suite_results',
      'INSERT',
      `NEW.tenant_id = '${tenantId}' AND NEW.name = 'breaks' AND NEW.transcript <> '[]'::jsonb`,
      refusal,
    );
    try {
      const runId = (await api('POST', `/test-suites/${suite.id}/runs`)).json().id as string;
      const job = { tenantId, runId };
      // The queue's first attempt stored (and billed) the scenario that ran, and threw for the other, to be retried.
      await until("the queue's first attempt to fail", async () => {
        const { rows } = await t.runtime.db.query<{ state: string }>(
          `SELECT state FROM pgboss.job WHERE name = $1 AND data->>'runId' = $2`,
          [RUN_TEST_SUITE, runId],
        );
        return rows[0]?.state === 'retry';
      });
      const { retryLimit } = runTestSuiteJob(t.runtime);
      await expect(runSuite(t.runtime, job, { retryCount: retryLimit! - 1 })).rejects.toThrow(refusal);
      const running = (await api('GET', `/test-suite-runs/${runId}`)).json();
      expect([running.status, running.results.map((result: { name: string }) => result.name)]).toEqual(['RUNNING', ['fine']]);

      // The last attempt stores the failure rather than throw it: the run is finished, and the dashboard stops polling it.
      await runSuite(t.runtime, job, { retryCount: retryLimit! });
      const run = (await api('GET', `/test-suite-runs/${runId}`)).json();
      expect(run).toMatchObject({ status: 'FAILED', passed: 1, failed: 1, finishedAt: expect.any(String) });
      const [fine, breaks] = run.results;
      expect(breaks).toMatchObject({ name: 'breaks', status: 'failed', assertions: [], transcript: [], cost: { total: '0.0000' } });
      expect(breaks.reason).toBe(
        `could not run: it failed on each of the run's 4 attempts (${refusal}); nothing was billed for it, and you may run the suite again.`,
      );
      // Billed for the scenario that ran, once; nothing for the one that could not be stored, though the model was asked for it.
      expect(chat.received.filter((request) => JSON.stringify(request.body.messages).includes('odd word')).length).toBeGreaterThanOrEqual(
        3,
      );
      expect(Number(fine.cost.total)).toBeGreaterThan(0);
      expect(run.costTotal).toBe(fine.cost.total);
      const { rows: debits } = await t.runtime.db.query('SELECT 1 FROM wallet_transactions WHERE tenant_id = $1 AND reference = $2', [
        tenantId,
        runId,
      ]);
      expect(debits).toHaveLength(1);
      expect((await wallet(api)).toFixed(4)).toBe((before - Number(fine.cost.total)).toFixed(4));
    } finally {
      chat.answerBy(undefined);
      await allowResults();
    }
  }, 120_000);
});

describe('callforge test, for CI', () => {
  const CLI = fileURLToPath(new URL('../bin/callforge.js', import.meta.url));
  const cli = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [CLI, 'test', ...args],
        { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 120_000 },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
      );
    });

  it('waits for the run, exits 1 on a failure and 0 without one, and writes a JUnit report of it', async () => {
    const { api, key, tenantId } = await tenant();
    const agent = await retrievalAgent(t, api, tenantId);
    const failing = (
      await api('POST', '/test-suites', {
        agentId: agent.id,
        name: 'Desk <CI>',
        scenarios: [HOURS, scenario('expects a garage of the wrong colour', { assertions: [{ type: 'said', phrase: 'red garage' }] })],
      })
    ).json();
    const passing = (await api('POST', '/test-suites', { agentId: agent.id, name: 'Hours', scenarios: [HOURS] })).json();
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const dir = mkdtempSync(join(tmpdir(), 'callforge-junit-'));
    try {
      const junit = join(dir, 'report.xml');
      const failed = await cli(['--suite', failing.id, '--url', address, '--key', key, '--junit', junit]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toContain('PASS asks the opening hours');
      expect(failed.stderr).toContain('FAIL expects a garage of the wrong colour — said: No turn of the agent says "red garage".');
      expect(failed.stdout).toMatch(
        /^Run [0-9a-f-]{36} of "Desk <CI>" \(live agent\): FAILED, 1 passed, 1 failed, 0 skipped, pass rate 50%, cost 0\.0000\. JUnit report: /,
      );
      const { document: report, problems } = parseXml(readFileSync(junit, 'utf8'));
      expect(problems).toEqual([]);
      const suite = report.getElementsByTagName('testsuite')[0]!;
      expect([suite.getAttribute('name'), suite.getAttribute('tests'), suite.getAttribute('failures')]).toEqual([
        'Desk <CI> (live agent)',
        '2',
        '1',
      ]);
      const cases = report.getElementsByTagName('testcase');
      expect(cases[0]!.getElementsByTagName('failure').length).toBe(0);
      expect(cases[1]!.getElementsByTagName('failure')[0]!.getAttribute('message')).toBe('said: No turn of the agent says "red garage".');

      // The key may come from the environment; --json prints one object.
      const passed = await cli(['--suite', passing.id, '--url', address, '--json'], { CALLFORGE_API_KEY: key });
      expect(passed.code).toBe(0);
      expect(JSON.parse(passed.stdout)).toMatchObject({ run: { status: 'PASSED', passed: 1, failed: 0, passRate: 1 }, junit: null });

      // --voice asks for the voice pipeline, which an agent without a recogniser cannot be run through: 1 with the API's sentence.
      const voice = await cli(['--suite', passing.id, '--url', address, '--key', key, '--voice']);
      expect(voice.code).toBe(1);
      expect(voice.stderr).toMatch(
        new RegExp(
          `^POST /test-suites/${passing.id}/runs\\?voice=true answered 409: ${agent.name} has no speech-to-text to hear the caller with`,
        ),
      );

      // Not the tenant's suite: 1 with the API's sentence; no key or suite: 2, bad usage.
      const other = (await tenant()).key;
      const foreign = await cli(['--suite', passing.id, '--url', address, '--key', other]);
      expect(foreign).toMatchObject({ code: 1, stderr: `GET /test-suites/${passing.id} answered 404: Test suite not found.\n` });
      expect((await cli(['--suite', passing.id, '--url', address])).code).toBe(2);
      expect((await cli(['--url', address, '--key', key])).code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000); // six CLI processes, each starting TypeScript through tsx
});
