import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { extractAfterCall, recordUnlessModelNeeded } from '../src/modules/analytics/extraction.ts';
import { AGENT_TOOLS } from '../src/modules/agents/tools.ts';
import { listenOnLoopback } from '../src/providers/fake-server.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { money } from '../src/platform/money.ts';
import { bearer, createKey, signUp, startTestApp, twoTenantKeys, type TestApp } from './harness.ts';
import { apiAs, uniqueNumber } from './voice-fixtures.ts';

// Contract §8: usage and trends computed from the calls the simulator really made and costed.
const clock = manualClock('2026-03-07T12:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({
    clock,
    // ALLOW_PRIVATE_URLS: a tenant's model server on loopback (the extraction test's).
    env: { SIMULATOR_RING_SECONDS: '0', SIMULATOR_TALK_SECONDS: '600', STARTING_CREDIT: '1000', ALLOW_PRIVATE_URLS: '1' },
  });
});
afterAll(() => t.close());

async function tenant(timezone?: string) {
  const { key, otherKey } = await twoTenantKeys(t.app);
  const api = apiAs(t.app, key);
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  if (timezone) await t.runtime.db.query('UPDATE tenants SET timezone = $2 WHERE id = $1', [tenantId, timezone]);
  return { api, other: apiAs(t.app, otherKey) };
}

/** An inbound simulated call answered at the clock's time and ended `seconds` later (the clock moves on). */
async function callAt(api: ReturnType<typeof apiAs>, agentId: string, at: string, seconds: number) {
  clock.set(new Date(new Date(at).getTime() - seconds * 1000));
  const number = (
    await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR', inboundAgentId: agentId })
  ).json();
  const placed = (await api('POST', '/simulator/inbound-calls', { voiceNumberId: number.id, fromNumber: uniqueNumber() })).json();
  await dialerTick(t.runtime);
  // What the conversation job does (this app runs no workers): the agent greets the simulated
  // contact, who says their two default lines, then is silent.
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  await converseOnSimulatedCall(t.runtime, { tenantId, callId: placed.id });
  await t.runtime.db.query("UPDATE calls SET deadline_at = $2 WHERE id = $1 AND status = 'IN_PROGRESS'", [placed.id, new Date(at)]); // talk exactly `seconds`
  clock.set(at);
  await dialerTick(t.runtime);
  const call = (await api('GET', `/call-logs/${placed.id}`)).json();
  expect(call).toMatchObject({ status: 'ENDED', endedAt: new Date(at).toISOString(), durationSec: seconds });
  return call as { id: string; cost: Record<string, string> };
}

describe('GET /analytics/my-detail', () => {
  it('totals each cost component to the cent of the recorded call costs, by agent', async () => {
    const { api, other } = await tenant();
    const [a, b] = [
      (await api('POST', '/agents', { name: 'Sales' })).json().id,
      (await api('POST', '/agents', { name: 'Support' })).json().id,
    ];
    const calls = [
      await callAt(api, a, '2026-03-05T10:00:00Z', 37),
      await callAt(api, a, '2026-03-05T11:00:00Z', 61),
      await callAt(api, b, '2026-03-06T09:00:00Z', 123),
    ];
    await callAt(api, b, '2026-01-01T09:00:00Z', 50); // outside the range
    const range = 'from=2026-03-01T00:00:00Z&to=2026-03-07T00:00:00Z';
    const detail = (await api('GET', `/analytics/my-detail?${range}`)).json();
    const sum = (key: string, of = calls) => of.reduce((acc, call) => acc.add(money(call.cost[key]!)), money(0)).toFixed(4);
    expect(detail).toMatchObject({
      from: '2026-03-01T00:00:00.000Z',
      to: '2026-03-07T00:00:00.000Z',
      currency: 'USD',
      calls: 3,
      minutes: Math.round(((37 + 61 + 123) / 60) * 100) / 100,
    });
    expect(detail.totals).toEqual({
      stt: sum('stt'),
      tts: sum('tts'),
      llm: sum('llm'),
      telephony: sum('telephony'),
      platformFee: sum('platformFee'),
      total: sum('total'),
    });
    expect(money(detail.totals.total).greaterThan(0)).toBe(true);
    const byAgent = Object.fromEntries(
      detail.byAgent.map((row: { agentName: string; calls: number; totals: { total: string } }) => [
        row.agentName,
        [row.calls, row.totals.total],
      ]),
    );
    expect(byAgent).toEqual({ Sales: [2, sum('total', calls.slice(0, 2))], Support: [1, sum('total', calls.slice(2))] });

    const summary = (await api('GET', `/analytics/my-detail?${range}&summary=true`)).json();
    expect(summary).toEqual({ from: detail.from, to: detail.to, currency: 'USD', totals: detail.totals });
    expect((await api('GET', `/analytics/my-detail?${range}&agentId=${b}`)).json().totals.total).toBe(sum('total', calls.slice(2)));
    expect((await other('GET', `/analytics/my-detail?${range}`)).json()).toMatchObject({
      calls: 0,
      totals: { total: '0.0000' },
      byAgent: [],
    });
    // Bare dates (ISO-8601 too): the whole of each day, so the 6th's call is in and the range ends with the 6th.
    const days = (await api('GET', '/analytics/my-detail?from=2026-03-01&to=2026-03-06&summary=true')).json();
    expect(days).toEqual({ from: '2026-03-01T00:00:00.000Z', to: '2026-03-07T00:00:00.000Z', currency: 'USD', totals: detail.totals });
    const fifth = (await api('GET', '/analytics/my-detail?from=2026-03-05&to=2026-03-05&summary=true')).json();
    expect(fifth.totals.total).toBe(sum('total', calls.slice(0, 2)));
    const backwards = await api('GET', '/analytics/my-detail?from=2026-03-07T00:00:00Z&to=2026-03-01T00:00:00Z');
    expect(backwards.statusCode).toBe(400);
    expect(backwards.json().message).toBe("'from' must not be after 'to'.");
  });
});

describe('GET /analytics/my-trends', () => {
  it("buckets by the tenant's local day across the spring-forward change, listing empty days", async () => {
    const { api } = await tenant('America/New_York');
    const agent = (await api('POST', '/agents', { name: 'Night shift' })).json().id;
    // 2026-03-08 is the 23-hour day: 02:00 EST jumps to 03:00 EDT.
    await callAt(api, agent, '2026-03-08T06:30:00Z', 60); // 01:30 EST, March 8
    await callAt(api, agent, '2026-03-08T07:30:00Z', 60); // 03:30 EDT, March 8
    await callAt(api, agent, '2026-03-09T03:59:00Z', 60); // 23:59 EDT, March 8
    await callAt(api, agent, '2026-03-09T04:01:00Z', 120); // 00:01 EDT, March 9
    const trends = (await api('GET', '/analytics/my-trends?from=2026-03-07T05:00:00Z&to=2026-03-10T04:00:00Z')).json();
    expect(trends).toMatchObject({ interval: 'day', timezone: 'America/New_York' });
    expect(
      trends.series.map((b: { bucket: string; calls: number; answered: number; minutes: number }) => [
        b.bucket,
        b.calls,
        b.answered,
        b.minutes,
      ]),
    ).toEqual([
      ['2026-03-07T05:00:00.000Z', 0, 0, 0],
      ['2026-03-08T05:00:00.000Z', 3, 3, 3],
      ['2026-03-09T04:00:00.000Z', 1, 1, 2],
    ]);
    const detail = (await api('GET', '/analytics/my-detail?from=2026-03-07T05:00:00Z&to=2026-03-10T04:00:00Z&summary=true')).json();
    expect(
      trends.series.reduce((acc: ReturnType<typeof money>, b: { spend: string }) => acc.add(money(b.spend)), money(0)).toFixed(4),
    ).toBe(detail.totals.total);
    const hours = (await api('GET', '/analytics/my-trends?from=2026-03-08T05:00:00Z&to=2026-03-09T04:00:00Z&interval=hour')).json().series;
    expect(hours).toHaveLength(23);
  });

  it('keeps the two 01:00 hours of the fall-back night apart', async () => {
    const { api } = await tenant('America/New_York');
    const agent = (await api('POST', '/agents', { name: 'Fall back' })).json().id;
    await callAt(api, agent, '2026-11-01T05:30:00Z', 60); // 01:30 EDT
    await callAt(api, agent, '2026-11-01T06:30:00Z', 60); // 01:30 EST, an hour later
    const hours = (await api('GET', '/analytics/my-trends?from=2026-11-01T04:00:00Z&to=2026-11-02T05:00:00Z&interval=hour')).json()
      .series as { bucket: string; calls: number }[];
    expect(hours).toHaveLength(25);
    expect(hours.filter((b) => b.calls > 0).map((b) => [b.bucket, b.calls])).toEqual([
      ['2026-11-01T05:00:00.000Z', 1],
      ['2026-11-01T06:00:00.000Z', 1],
    ]);
    const days = (await api('GET', '/analytics/my-trends?from=2026-11-01T04:00:00Z&to=2026-11-02T05:00:00Z')).json().series as {
      bucket: string;
      calls: number;
    }[];
    expect(days.map((b) => [b.bucket, b.calls])).toEqual([['2026-11-01T04:00:00.000Z', 2]]);
    expect((await api('GET', '/analytics/my-trends?from=2026-12-31T23:59:60Z')).statusCode).toBe(400);
  });
});

describe('analytics bindings, results and tools', () => {
  it('replaces the fields an agent extracts, with their rules, and keeps them to the tenant', async () => {
    const { api, other } = await tenant();
    const agent = (await api('POST', '/agents', { name: 'Collector' })).json().id;
    expect((await api('GET', `/analytics/agents/${agent}/bindings`)).json()).toEqual({ agentId: agent, fields: [], updatedAt: null });
    const fields = [
      { name: 'promisedAmount', type: 'number', description: 'Amount the customer promised to pay' },
      { name: 'promiseDate', type: 'date' },
      { name: 'mood', type: 'enum', enumValues: ['calm', 'upset'] },
    ];
    const put = await api('PUT', `/analytics/agents/${agent}/bindings`, { fields });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ agentId: agent, fields, updatedAt: expect.any(String) });
    expect((await api('PUT', `/analytics/agents/${agent}/bindings`, { fields: [fields[1]] })).json().fields).toEqual([fields[1]]);

    const refused: [unknown, string][] = [
      [[fields[0], fields[0]], '/fields/1/name'],
      [[{ name: 'mood', type: 'enum' }], '/fields/0/enumValues'],
      [[{ name: 'age', type: 'number', enumValues: ['1'] }], '/fields/0/enumValues'],
      [[{ name: 'age', type: 'integer' }], '/fields/0/type'],
      [[{ name: '1st', type: 'string' }], '/fields/0/name'],
      [Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, type: 'string' })), '/fields'],
    ];
    for (const [body, path] of refused) {
      const response = await api('PUT', `/analytics/agents/${agent}/bindings`, { fields: body });
      expect(response.statusCode, path).toBe(400);
      expect(
        response.json().details.map((d: { path: string }) => d.path),
        path,
      ).toContain(path);
    }
    expect(
      (
        await api('PUT', `/analytics/agents/${agent}/bindings`, {
          fields: Array.from({ length: 50 }, (_, i) => ({ name: `f${i}`, type: 'string' })),
        })
      ).statusCode,
    ).toBe(200);
    expect((await other('GET', `/analytics/agents/${agent}/bindings`)).statusCode).toBe(404);
    expect((await other('PUT', `/analytics/agents/${agent}/bindings`, { fields: [] })).statusCode).toBe(404);
    expect((await api('GET', '/analytics/agents/00000000-0000-4000-8000-000000000000/bindings')).statusCode).toBe(404);
  });

  it("lists results with the seed's agent_id and session_id filters, and the tools", async () => {
    const { api } = await tenant();
    const results = await api('GET', '/analytics/results?agent_id=00000000-0000-4000-8000-000000000000&session_id=x&channel=any');
    expect(results.statusCode).toBe(200);
    expect(results.json()).toEqual({ data: [], total: 0, page: 1, limit: 25 });
    // A list like every other: paginated, 25 a page by default.
    expect((await api('GET', '/analytics/tools')).json()).toEqual({ data: AGENT_TOOLS, total: AGENT_TOOLS.length, page: 1, limit: 25 });
    expect((await api('GET', '/analytics/tools?limit=2&page=2')).json()).toEqual({
      data: AGENT_TOOLS.slice(2, 4),
      total: AGENT_TOOLS.length,
      page: 2,
      limit: 2,
    });
    expect((await api('GET', '/analytics/tools?limit=201')).statusCode).toBe(400);
  });
});

describe('extraction of the bound fields from a transcript', () => {
  it('asks an OpenAI-compatible model with a JSON schema of the bindings and stores only values of the right type, once per call', async () => {
    const requests: { authorization?: string; body: Record<string, unknown> }[] = [];
    let answer: Record<string, unknown> = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        requests.push({
          authorization: req.headers.authorization,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
        });
        const reply = {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          model: 'test-model',
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: JSON.stringify(answer) } }],
        };
        res.writeHead(req.url === '/v1/chat/completions' ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      });
    });
    const llm = await listenOnLoopback(server);
    try {
      const owner = await signUp(t.app);
      const api = apiAs(t.app, (await createKey(t.app, owner.token)).key);
      const agent = (await api('POST', '/agents', { name: 'Collections' })).json().id;
      await api('PUT', `/analytics/agents/${agent}/bindings`, {
        fields: [
          { name: 'promisedAmount', type: 'number', description: 'Amount promised' },
          { name: 'promiseDate', type: 'date' },
          { name: 'mood', type: 'enum', enumValues: ['calm', 'upset'] },
          { name: 'callbackWanted', type: 'boolean' },
          { name: 'notes', type: 'string' },
        ],
      });
      const call = await callAt(api, agent, '2026-03-06T15:00:00Z', 45);
      // Two more calls for a batch, later on (made before the model exists: their conversations are the simulator's).
      const more = [await callAt(api, agent, '2026-03-07T15:00:00Z', 30), await callAt(api, agent, '2026-03-08T15:00:00Z', 30)];
      const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
      // Every ended call gets its record; without a model configured it says so, fields empty.
      expect(await extractAfterCall(t.runtime, { tenantId, callId: call.id })).toBe(true);
      const skipped = (await api('GET', `/analytics/results?session_id=${call.id}`)).json().data[0];
      expect(skipped).toMatchObject({ status: 'skipped: no model configured', summary: null, outcome: 'completed', fields: {} });
      await t.runtime.db.query('DELETE FROM analytics_results WHERE call_id = $1', [call.id]);
      // The agent's model: the tenant's own server (its llm integration), the one its calls converse with.
      const payload = { apiUrl: `${llm.url}/v1`, apiKey: 'sk-test' };
      expect(
        (await t.app.inject({ method: 'PUT', url: '/api/v1/integrations/llm', headers: bearer(owner.token), payload })).statusCode,
      ).toBe(200);
      expect((await api('PATCH', `/agents/${agent}`, { llm: { model: 'test-model' } })).statusCode).toBe(200);
      answer = {
        summary: 'The contact picked up and asked what the call was about.',
        fields: { promisedAmount: 'a lot', promiseDate: '2026-12-01', mood: 'furious', callbackWanted: true, notes: null },
      };
      expect(await extractAfterCall(t.runtime, { tenantId, callId: call.id })).toBe(true);

      const [request] = requests;
      expect(request!.authorization).toBe('Bearer sk-test');
      expect(request!.body).toMatchObject({
        model: 'test-model',
        response_format: { type: 'json_schema', json_schema: { name: 'call_analytics', strict: true } },
      });
      type ObjectSchema = { properties: Record<string, unknown>; required: string[] };
      const schema = (request!.body.response_format as { json_schema: { schema: ObjectSchema } }).json_schema.schema;
      expect(schema.required).toEqual(['summary', 'fields']);
      const fieldsSchema = schema.properties.fields as ObjectSchema;
      expect(fieldsSchema.required).toEqual(['promisedAmount', 'promiseDate', 'mood', 'callbackWanted', 'notes']);
      expect(fieldsSchema.properties.mood).toMatchObject({ enum: ['calm', 'upset', null] });
      const user = (request!.body.messages as { role: string; content: string }[]).find((m) => m.role === 'user')!.content;
      expect(user).toContain('agent: Hello, this is Collections, an automated assistant.');
      expect(user).toContain('contact: Yes, speaking. What is this about?');

      const results = (await api('GET', `/analytics/results?session_id=${call.id}`)).json();
      expect(results.total).toBe(1);
      // "a lot" is not a number and "furious" not an allowed value: both are dropped, null is absent.
      expect(results.data[0]).toMatchObject({
        sessionId: call.id,
        agentId: agent,
        fields: { promiseDate: '2026-12-01', callbackWanted: true },
        status: 'extracted',
        summary: 'The contact picked up and asked what the call was about.',
        outcome: 'completed',
      });
      expect(Object.keys(results.data[0].fields).sort()).toEqual(['callbackWanted', 'promiseDate']);
      expect((await api('GET', `/analytics/results?agent_id=${agent}`)).json().total).toBe(1);

      answer = {
        summary: 'x',
        fields: { promisedAmount: 120, promiseDate: '2026-12-01', mood: 'calm', callbackWanted: false, notes: 'x' },
      };
      expect(await extractAfterCall(t.runtime, { tenantId, callId: call.id })).toBe(false); // once per call
      expect(requests).toHaveLength(1); // the model is not asked again
      expect((await api('GET', `/analytics/results?session_id=${call.id}`)).json().data[0].fields).not.toHaveProperty('mood');

      // A batch handled at once, as a parallel queue does: each call asked about once, its second job included.
      const stored = await Promise.all([...more, more[0]!].map((one) => extractAfterCall(t.runtime, { tenantId, callId: one.id })));
      expect(stored).toEqual([true, true, false]);
      expect(requests).toHaveLength(3);
      for (const one of more) expect((await api('GET', `/analytics/results?session_id=${one.id}`)).json()).toMatchObject({ total: 1 });
    } finally {
      await llm.close();
    }
  });
});

describe('analytics of a call that needs no model', () => {
  it('is recorded by the call.ended job itself; a call that needs the model is left to a job of its own', async () => {
    clock.set('2026-03-09T14:00:00Z'); // the owner's session outlives the two calls
    const owner = await signUp(t.app);
    const api = apiAs(t.app, (await createKey(t.app, owner.token)).key);
    const agent = (await api('POST', '/agents', { name: 'Reminders' })).json().id;
    const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
    // Both calls converse before the agent has a model (the simulator's contact speaks).
    const [first, second] = [await callAt(api, agent, '2026-03-09T14:05:00Z', 30), await callAt(api, agent, '2026-03-09T14:10:00Z', 30)];
    const results = async (callId: string) => (await api('GET', `/analytics/results?session_id=${callId}`)).json();

    expect(await recordUnlessModelNeeded(t.runtime, { tenantId, callId: first.id })).toBe(false);
    expect((await results(first.id)).data).toMatchObject([{ status: 'skipped: no model configured', outcome: 'completed' }]);
    expect(await recordUnlessModelNeeded(t.runtime, { tenantId, callId: first.id })).toBe(false); // recorded: no job again

    // With a model, a call that had a conversation needs it: nothing is recorded here.
    const payload = { apiUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-test' };
    expect((await t.app.inject({ method: 'PUT', url: '/api/v1/integrations/llm', headers: bearer(owner.token), payload })).statusCode).toBe(
      200,
    );
    expect((await api('PATCH', `/agents/${agent}`, { llm: { model: 'test-model' } })).statusCode).toBe(200);
    expect(await recordUnlessModelNeeded(t.runtime, { tenantId, callId: second.id })).toBe(true);
    expect((await results(second.id)).total).toBe(0);
  });
});
