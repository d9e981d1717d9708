import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { scoreEndedCall } from '../src/modules/suites/scorecards.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { manualClock } from '../src/platform/clock.ts';
import { money } from '../src/platform/money.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs, startedSimulatedCampaign } from './voice-fixtures.ts';

// Issue 41, item 5: a tenant's scorecard judges every ended call (phrases from the transcript, a
// rubric by the agent's model), once; the verdict is sealed into the compliance chain and a failed
// one is sent as a webhook event. The model is the local OpenAI-compatible fake.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;

beforeAll(async () => {
  chat = await startFakeChat();
  t = await startTestApp({
    clock,
    env: {
      LLM_API_URL: `${chat.url}/v1`,
      LLM_MODEL: 'house-model',
      LLM_TIMEOUT_MS: '5000',
      SIMULATOR_RING_SECONDS: '0',
      SIMULATOR_TALK_SECONDS: '600',
      RATE_LLM_MODELS: '{"house-model": {"input": "1", "output": "2"}}',
      ALLOW_PRIVATE_URLS: '1',
    },
  });
});
afterAll(async () => {
  await t.close();
  await chat.close();
});

const CHECKS = [
  { name: 'AI disclosed', assertion: { type: 'said', phrase: 'automated assistant' } },
  { name: 'Recording announced', assertion: { type: 'said', phrase: 'this call is recorded' } },
  { name: 'No forbidden promise', assertion: { type: 'never_said', phrase: 'guaranteed' } },
  { name: 'Polite', assertion: { type: 'rubric', rubric: 'The agent is polite throughout.' } },
];

async function tenant() {
  const owner = await signUp(t.app);
  // A key with a webhook: the tenant's events are delivered to it (nothing listens there; the delivery is what counts).
  const hooked = await createKey(t.app, owner.token, { name: 'CRM', webhookUrl: 'http://127.0.0.1:9/hooks' });
  const api = apiAs(t.app, hooked.key);
  return { api, tenantId: (await api('GET', '/profile')).json().data.tenant.id as string };
}

describe('scorecards', () => {
  it('judge an ended call once against every check, seal the verdict in the compliance chain and announce a failure', async () => {
    const { api, tenantId } = await tenant();
    expect((await api('GET', '/scorecard')).json()).toEqual({ checks: [], updatedAt: null });
    const put = await api('PUT', '/scorecard', { checks: CHECKS });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ checks: CHECKS, updatedAt: clock.now().toISOString() });

    const agent = (
      await api('POST', '/agents', {
        name: 'Clinic',
        firstMessage: 'Hello, I am an automated assistant of the clinic.',
        tools: ['end_call'],
      })
    ).json();
    const campaign = await startedSimulatedCampaign(api, () => dialerTick(t.runtime), agent.id, [{ name: 'Ana' }, { name: 'Ben' }]);
    const [call] = (await api('GET', `/call-logs?campaignId=${campaign.id}`)).json().data;
    chat.script({
      kind: 'stream',
      text: ['Your refund is guaranteed. Goodbye!'],
      toolCalls: [{ id: 'e', name: 'end_call', arguments: ['{}'] }],
      usage: { prompt_tokens: 100, completion_tokens: 10 },
    });
    await converseOnSimulatedCall(t.runtime, { tenantId, callId: call.id });
    expect((await api('GET', `/call-logs/${call.id}`)).json().status).toBe('ENDED');

    // The rubric is the model's to judge: it reads the transcript and gives its reasoning.
    chat.script({
      kind: 'completion',
      content: JSON.stringify({ reasoning: 'The agent greets and says goodbye courteously.', passed: true }),
      usage: { prompt_tokens: 300, completion_tokens: 20 },
    });
    const balance = async () => money((await api('GET', '/profile')).json().data.wallet.balance);
    const before = await balance();
    const ctx = tenantCtx(t.runtime, tenantId);
    await scoreEndedCall(t.runtime, ctx, { tenantId, callId: call.id });
    expect(chat.received.at(-1)!.body.messages.at(-1)).toMatchObject({ content: expect.stringContaining('guaranteed') });

    const failed = (await api('GET', '/call-scorecards?passed=false')).json();
    expect(failed.data).toHaveLength(1);
    const [scored] = failed.data;
    expect(scored).toMatchObject({ callId: call.id, agentId: agent.id, campaignId: campaign.id, passed: false, cost: '0.3400' });
    expect(scored.checks.map((check: { name: string; verdict: string }) => [check.name, check.verdict])).toEqual([
      ['AI disclosed', 'passed'],
      ['Recording announced', 'failed'],
      ['No forbidden promise', 'failed'],
      ['Polite', 'passed'],
    ]);
    expect(scored.checks[3].reasoning).toBe('The agent greets and says goodbye courteously.');
    // 300 input and 20 output tokens at 1 and 2 per 1,000: the judging is billed.
    expect(before.sub(await balance()).toFixed(4)).toBe('0.3400');
    expect((await api('GET', '/call-scorecards?passed=true')).json().data).toEqual([]);

    // Sealed into the chain after the dial's own record, the chain still whole.
    const records = (await api('GET', `/campaigns/${campaign.id}/compliance-records?format=json`)).json() as {
      verdict: string;
      reason: string;
      facts: { callId?: string; checks?: unknown[] };
    }[];
    expect(records.at(-1)).toMatchObject({ verdict: 'scored', reason: 'failed', facts: { callId: call.id } });
    expect(records.at(-1)!.facts.checks).toHaveLength(4);
    expect((await api('GET', '/compliance/records/verify')).json()).toMatchObject({ valid: true, firstBroken: null });
    const deliveries = (await api('GET', '/webhook-deliveries?eventType=call.scorecard_failed')).json().data;
    expect(deliveries).toHaveLength(1);

    // A repeated call.ended scores nothing again: no second record, event or debit.
    const asked = chat.received.length;
    await scoreEndedCall(t.runtime, ctx, { tenantId, callId: call.id });
    expect(chat.received.length).toBe(asked);
    expect((await api('GET', `/campaigns/${campaign.id}/compliance-records?format=json`)).json()).toHaveLength(records.length);
    expect((await api('GET', '/webhook-deliveries?eventType=call.scorecard_failed')).json().data).toHaveLength(1);

    // Another tenant sees none of it.
    const other = await tenant();
    expect((await other.api('GET', '/call-scorecards')).json()).toMatchObject({ data: [], total: 0 });
    expect((await other.api('GET', '/scorecard')).json()).toEqual({ checks: [], updatedAt: null });
  });

  it('judges calls that end together each on its own transcript', async () => {
    const { api, tenantId } = await tenant();
    const phraseChecks = CHECKS.filter((check) => check.assertion.type !== 'rubric');
    expect((await api('PUT', '/scorecard', { checks: phraseChecks })).statusCode).toBe(200);
    const agent = (await api('POST', '/agents', { name: 'Desk', firstMessage: 'Hello.', tools: ['end_call'] })).json();
    const campaign = await startedSimulatedCampaign(api, () => dialerTick(t.runtime), agent.id, [{ name: 'Ana' }, { name: 'Ben' }]);
    const ended = (await api('GET', `/call-logs?campaignId=${campaign.id}`)).json().data as { id: string }[];
    expect(ended).toHaveLength(2);
    const [promised, disclosed] = ended as [{ id: string }, { id: string }];
    const endsSaying = async (callId: string, text: string) => {
      chat.script({
        kind: 'stream',
        text: [text],
        toolCalls: [{ id: 'e', name: 'end_call', arguments: ['{}'] }],
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      });
      await converseOnSimulatedCall(t.runtime, { tenantId, callId });
    };
    await endsSaying(promised.id, 'Your refund is guaranteed. Goodbye!');
    await endsSaying(disclosed.id, 'I am an automated assistant and this call is recorded. Goodbye!');

    // Both call.ended jobs of one batch, scored in the same turn.
    const ctx = tenantCtx(t.runtime, tenantId);
    await Promise.all([promised, disclosed].map((call) => scoreEndedCall(t.runtime, ctx, { tenantId, callId: call.id })));

    const scored = (await api('GET', '/call-scorecards')).json().data as {
      callId: string;
      passed: boolean;
      checks: { name: string; verdict: string }[];
    }[];
    const verdictsOf = (callId: string) => {
      const scorecard = scored.find((one) => one.callId === callId)!;
      return [scorecard.passed, scorecard.checks.map((check) => [check.name, check.verdict])];
    };
    expect(scored).toHaveLength(2);
    expect(verdictsOf(promised.id)).toEqual([
      false,
      [
        ['AI disclosed', 'failed'],
        ['Recording announced', 'failed'],
        ['No forbidden promise', 'failed'],
      ],
    ]);
    expect(verdictsOf(disclosed.id)).toEqual([
      true,
      [
        ['AI disclosed', 'passed'],
        ['Recording announced', 'passed'],
        ['No forbidden promise', 'passed'],
      ],
    ]);
  });

  it('refuses two checks of one name, more than 20 checks and an unknown assertion', async () => {
    const { api } = await tenant();
    const twice = await api('PUT', '/scorecard', { checks: [CHECKS[0], { ...CHECKS[1], name: 'ai DISCLOSED' }] });
    expect(twice.statusCode).toBe(400);
    expect(twice.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: "Field 'checks.1.name' repeats the name of another check: name each check once.",
      details: [{ path: '/checks/1/name' }],
    });
    const many = Array.from({ length: 21 }, (_, i) => ({ name: `Check ${i}`, assertion: { type: 'said', phrase: 'hello' } }));
    expect((await api('PUT', '/scorecard', { checks: many.slice(0, 20) })).statusCode).toBe(200);
    expect((await api('PUT', '/scorecard', { checks: many })).statusCode).toBe(400);
    expect((await api('PUT', '/scorecard', { checks: [{ name: 'x', assertion: { type: 'vibes' } }] })).statusCode).toBe(400);
  });
});
