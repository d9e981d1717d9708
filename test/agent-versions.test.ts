import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractAfterCall } from '../src/modules/analytics/extraction.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { apiAs, newTenant, startedSimulatedCampaign, uniqueNumber } from './voice-fixtures.ts';

// Issue 41, item 1: publishing freezes an agent's conversational config as a version; versions are
// listed, compared and restored; a campaign pins one, and its calls converse with the frozen config
// (asserted on what the model server received), naming the version they ran.
const clock = manualClock('2026-11-23T10:00:00.000Z'); // a Monday
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;

beforeAll(async () => {
  chat = await startFakeChat();
  const model = { LLM_API_URL: `${chat.url}/v1`, LLM_API_KEY: 'sk-fake', LLM_MODEL: 'house-model', LLM_TIMEOUT_MS: '1000' };
  t = await startTestApp({ clock, env: { ...model, SIMULATOR_RING_SECONDS: '0', SIMULATOR_TALK_SECONDS: '60' } });
});
afterAll(async () => {
  await t.close();
  await chat.close();
});

type Api = ReturnType<typeof apiAs>;

const V1 = { systemPrompt: 'You are the renewals agent, version one.', firstMessage: 'Hello from version one.', tools: ['end_call'] };
const V2 = { systemPrompt: 'You are the renewals agent, version two.', firstMessage: 'Hello from version two.' };

async function agentWithTwoVersions(api: Api) {
  const agent = (await api('POST', '/agents', { name: `Renewals ${uniqueNumber()}`, ...V1, llm: { model: 'house-model' } })).json();
  const first = await api('POST', `/agents/${agent.id}/versions`, { note: 'first script' });
  expect(first.statusCode).toBe(201);
  expect((await api('PATCH', `/agents/${agent.id}`, V2)).statusCode).toBe(200);
  const second = await api('POST', `/agents/${agent.id}/versions`);
  expect(second.statusCode).toBe(201);
  return { agent, v1: first.json(), v2: second.json() };
}

describe('publishing, listing and reading versions', () => {
  it('freezes the conversational config as version 1, 2…, refuses a publish that changes nothing, and lists newest first', async () => {
    const { api } = await newTenant(t.app);
    const { agent, v1, v2 } = await agentWithTwoVersions(api);
    expect(v1).toMatchObject({ agentId: agent.id, version: 1, note: 'first script' });
    expect(v1.config).toMatchObject({ ...V1, language: 'en-US', knowledgeBaseIds: [], llm: { model: 'house-model' } });
    // Only the conversational fields: the name, description, metadata and recording stay the agent's.
    expect(Object.keys(v1.config).sort()).toEqual(
      [
        'backup',
        'customTools',
        'firstMessage',
        'knowledgeBaseIds',
        'knowledgeInContext',
        'language',
        'llm',
        'realtime',
        'stt',
        'systemPrompt',
        'tools',
        'transferNumber',
        'tts',
        'voice',
        'voicePipeline',
      ].sort(),
    );
    expect(v2).toMatchObject({ version: 2, note: null, config: { ...V2, tools: ['end_call'] } });

    const again = await api('POST', `/agents/${agent.id}/versions`, {});
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'AGENT_VERSION_UNCHANGED' });
    expect(again.json().message).toContain('version 2');
    // A field outside the config changes nothing a version holds.
    await api('PATCH', `/agents/${agent.id}`, { description: 'renamed desk', metadata: { team: 'b' } });
    expect((await api('POST', `/agents/${agent.id}/versions`, {})).statusCode).toBe(409);

    const list = await api('GET', `/agents/${agent.id}/versions?limit=1`);
    expect(list.json()).toMatchObject({ total: 2, page: 1, limit: 1 });
    expect(list.json().data.map((version: { version: number }) => version.version)).toEqual([2]);
    expect((await api('GET', `/agents/${agent.id}/versions?page=2&limit=1`)).json().data[0].version).toBe(1);
    expect((await api('GET', `/agents/${agent.id}/versions/1`)).json()).toEqual(v1);
    const missing = await api('GET', `/agents/${agent.id}/versions/3`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(missing.json().message).toBe(
      `Agent ${agent.id} has no version 3; GET /api/v1/agents/${agent.id}/versions lists its published versions.`,
    );
    expect((await api('GET', `/agents/${agent.id}/versions/0`)).statusCode).toBe(400);
    expect((await api('POST', `/agents/${agent.id}/versions`, { note: 'x', extra: 1 })).statusCode).toBe(400);
  });

  it("answers 404 for another tenant's agent and versions, on every route, and publishes nothing for it", async () => {
    const { api } = await newTenant(t.app);
    const other = (await newTenant(t.app)).api;
    const { agent } = await agentWithTwoVersions(api);
    for (const [method, url] of [
      ['POST', `/agents/${agent.id}/versions`],
      ['GET', `/agents/${agent.id}/versions`],
      ['GET', `/agents/${agent.id}/versions/1`],
      ['GET', `/agents/${agent.id}/versions/2/diff?against=1`],
      ['POST', `/agents/${agent.id}/versions/1/restore`],
    ] as const) {
      const response = await other(method, url, method === 'POST' ? {} : undefined);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().message).toBe('Agent not found.');
    }
    expect((await api('GET', `/agents/${agent.id}/versions`)).json().total).toBe(2);
    expect((await api('GET', `/agents/${agent.id}`)).json().systemPrompt).toBe(V2.systemPrompt);
  });

  it('publishes distinct numbers when two publishes race', async () => {
    const { api } = await newTenant(t.app);
    const agent = (await api('POST', '/agents', { name: 'Racer', systemPrompt: 'a' })).json();
    await api('POST', `/agents/${agent.id}/versions`);
    await api('PATCH', `/agents/${agent.id}`, { systemPrompt: 'b' });
    const [one, two] = await Promise.all([api('POST', `/agents/${agent.id}/versions`), api('POST', `/agents/${agent.id}/versions`)]);
    // The second waits for the first's lock, then finds the config published.
    expect([one.statusCode, two.statusCode].sort()).toEqual([201, 409]);
    expect((await api('GET', `/agents/${agent.id}/versions`)).json().total).toBe(2);
  });
});

describe('diff and restore', () => {
  it('lists the fields that differ between two versions, or against the current config', async () => {
    const { api } = await newTenant(t.app);
    const { agent } = await agentWithTwoVersions(api);
    const diff = (await api('GET', `/agents/${agent.id}/versions/2/diff?against=1`)).json();
    expect(diff).toEqual({
      agentId: agent.id,
      version: 2,
      against: 1,
      changes: [
        { field: 'systemPrompt', from: V1.systemPrompt, to: V2.systemPrompt },
        { field: 'firstMessage', from: V1.firstMessage, to: V2.firstMessage },
      ],
    });
    expect((await api('GET', `/agents/${agent.id}/versions/1/diff?against=1`)).json().changes).toEqual([]);
    // Against the current config: what restoring version 1 would change.
    await api('PATCH', `/agents/${agent.id}`, { tools: [], language: 'es' });
    expect((await api('GET', `/agents/${agent.id}/versions/1/diff`)).json()).toMatchObject({
      against: null,
      changes: [
        { field: 'language', from: 'es', to: 'en-US' },
        { field: 'systemPrompt', from: V2.systemPrompt, to: V1.systemPrompt },
        { field: 'firstMessage', from: V2.firstMessage, to: V1.firstMessage },
        { field: 'tools', from: [], to: ['end_call'] },
      ],
    });
    expect((await api('GET', `/agents/${agent.id}/versions/1/diff?against=9`)).statusCode).toBe(404);
  });

  it("makes the agent's config the version's, keeps its name and metadata, and publishes nothing", async () => {
    const { api } = await newTenant(t.app);
    const { agent } = await agentWithTwoVersions(api);
    await api('PATCH', `/agents/${agent.id}`, { systemPrompt: 'draft three', metadata: { owner: 'ana' } });
    const restored = await api('POST', `/agents/${agent.id}/versions/1/restore`, {});
    expect(restored.statusCode).toBe(200);
    expect(restored.json()).toMatchObject({ id: agent.id, name: agent.name, metadata: { owner: 'ana' }, ...V1 });
    expect((await api('GET', `/agents/${agent.id}`)).json()).toMatchObject(V1);
    expect((await api('GET', `/agents/${agent.id}/versions`)).json().total).toBe(2);
    expect((await api('GET', `/agents/${agent.id}/versions/1/diff`)).json().changes).toEqual([]);
    // Restoring the latest config and publishing it again is refused: it is version 1's, not the latest's (2).
    expect((await api('POST', `/agents/${agent.id}/versions`)).statusCode).toBe(201);
    expect((await api('POST', `/agents/${agent.id}/versions/9/restore`)).statusCode).toBe(404);
  });

  it('refuses to restore a version whose knowledge base was deleted since, and leaves the agent as it was', async () => {
    const { api } = await newTenant(t.app);
    const base = (await api('POST', '/knowledge-bases', { name: `KB ${uniqueNumber()}` })).json();
    const agent = (await api('POST', '/agents', { name: 'With KB', knowledgeBaseIds: [base.id] })).json();
    await api('POST', `/agents/${agent.id}/versions`);
    await api('PATCH', `/agents/${agent.id}`, { knowledgeBaseIds: [] });
    expect((await api('DELETE', `/knowledge-bases/${base.id}`)).statusCode).toBe(204);
    const restored = await api('POST', `/agents/${agent.id}/versions/1/restore`);
    expect(restored.statusCode).toBe(404);
    expect(restored.json().message).toContain(base.id);
    expect((await api('GET', `/agents/${agent.id}`)).json().knowledgeBaseIds).toEqual([]);
  });
});

/** A running campaign of `agent` whose first contact says `say`, ticked until its call is answered; the live call id. */
async function answeredCall(api: Api, agentId: string, fields: Record<string, unknown>, say: string[]) {
  const contacts = [{ name: 'Ana', metadata: { simulate: { say } } }, { metadata: { simulate: 'BUSY' } }];
  const created = await startedSimulatedCampaign(api, () => dialerTick(t.runtime), agentId, contacts, fields);
  const live = (await api('GET', `/call-logs?campaignId=${created.id}&limit=10`))
    .json()
    .data.find((call: { status: string }) => call.status === 'IN_PROGRESS');
  expect(live).toBeDefined();
  return { callId: live.id as string, campaignId: created.id, created };
}

describe('a campaign that pins a version', () => {
  it('converses with the frozen prompt and first message, not the edited ones, and names the version on the call and its result', async () => {
    const { api } = await newTenant(t.app);
    const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
    const { agent } = await agentWithTwoVersions(api);
    await api('PATCH', `/agents/${agent.id}`, { systemPrompt: 'An unpublished draft.', firstMessage: 'Hello from the draft.' });

    const pinned = await answeredCall(api, agent.id, { agentVersion: 1 }, ['Hi?']);
    expect(pinned.created).toMatchObject({ agentVersion: 1, experiment: null });
    expect((await api('GET', `/campaigns/${pinned.campaignId}`)).json()).toMatchObject({ agentVersion: 1, experiment: null });
    const contacts = (await api('GET', `/campaigns/${pinned.campaignId}/contacts`)).json().data;
    expect(contacts.map((contact: { agentVersion?: number }) => contact.agentVersion)).toEqual([1, 1]);
    chat.script({ kind: 'stream', text: ['Bye.'], toolCalls: [{ id: 'end', name: 'end_call', arguments: ['{"reason":"done"}'] }] });
    const sent = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId: pinned.callId });
    const messages = chat.received[sent]!.body.messages as { role: string; content: string }[];
    expect(messages[0]!.content).toContain(V1.systemPrompt);
    expect(messages[0]!.content).not.toContain('draft');
    expect(messages[1]).toEqual({ role: 'assistant', content: V1.firstMessage });
    // The version's tools, not the agent's: version 1 had end_call, and so the model was offered it.
    expect((chat.received[sent]!.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name)).toContain('end_call');
    const call = (await api('GET', `/call-logs/${pinned.callId}`)).json();
    expect(call).toMatchObject({ agentVersion: 1, status: 'ENDED' });
    expect(call.transcript[0]).toMatchObject({ role: 'agent', text: V1.firstMessage, by: 'first-message' });
    chat.script({
      kind: 'completion',
      content: JSON.stringify({ summary: 'Said bye.', fields: {} }),
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    });
    await extractAfterCall(t.runtime, { tenantId, callId: pinned.callId }, { retryCount: 0 });
    const [result] = (await api('GET', `/analytics/results?session_id=${pinned.callId}`)).json().data;
    expect(result).toMatchObject({ sessionId: pinned.callId, agentVersion: 1 });

    // No version pinned: the agent as it is now, the unpublished draft, and the call says null.
    const live = await answeredCall(api, agent.id, {}, ['Hi?']);
    expect(live.created.agentVersion).toBeNull();
    expect((await api('GET', `/campaigns/${live.campaignId}/contacts`)).json().data[0]).not.toHaveProperty('agentVersion');
    chat.script({ kind: 'stream', text: ['Bye.'], toolCalls: [{ id: 'end', name: 'end_call', arguments: ['{"reason":"done"}'] }] });
    const before = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId: live.callId });
    expect((chat.received[before]!.body.messages as { content: string }[])[0]!.content).toContain('An unpublished draft.');
    expect((await api('GET', `/call-logs/${live.callId}`)).json()).toMatchObject({ agentVersion: null });
  });

  it('refuses a version the agent has not published, one of another tenant, a version without an agent, and both a version and an experiment', async () => {
    const { api } = await newTenant(t.app);
    const other = (await newTenant(t.app)).api;
    const { agent } = await agentWithTwoVersions(api);
    const foreign = (await agentWithTwoVersions(other)).agent;

    const unpublished = await api('POST', '/campaigns', { name: 'Pin 3', agentId: agent.id, agentVersion: 3 });
    expect(unpublished.statusCode).toBe(404);
    expect(unpublished.json()).toMatchObject({ code: 'NOT_FOUND', details: [{ path: '/agentVersion' }] });
    expect((await api('POST', '/campaigns', { name: 'Foreign', agentId: foreign.id, agentVersion: 1 })).json().message).toBe(
      'Agent not found.',
    );
    const noAgent = await api('POST', '/campaigns', { name: 'No agent', agentVersion: 1 });
    expect(noAgent.statusCode).toBe(400);
    expect(noAgent.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: '/agentVersion' }] });
    const both = await api('POST', '/campaigns', {
      name: 'Both',
      agentId: agent.id,
      agentVersion: 1,
      experiment: {
        arms: [
          { version: 1, weight: 1 },
          { version: 2, weight: 1 },
        ],
      },
    });
    expect(both.statusCode).toBe(400);
    expect(both.json().message).toContain('not both');

    // A draft pinned to version 2 that moves to another agent keeps no version of the first.
    const draft = (await api('POST', '/campaigns', { name: 'Draft', agentId: agent.id, agentVersion: 2 })).json();
    const another = (await api('POST', '/agents', { name: 'Another', systemPrompt: 'x' })).json();
    const moved = await api('PATCH', `/campaigns/${draft.id}`, { agentId: another.id });
    expect(moved.statusCode).toBe(404);
    expect(moved.json().message).toContain(`Agent ${another.id} has no version 2`);
    const unpinned = await api('PATCH', `/campaigns/${draft.id}`, { agentId: another.id, agentVersion: null });
    expect(unpinned.statusCode).toBe(200);
    // The update answers the seed's fields, as before: the version is read with GET.
    expect(unpinned.json()).not.toHaveProperty('agentVersion');
    expect((await api('GET', `/campaigns/${draft.id}`)).json()).toMatchObject({ agentId: another.id, agentVersion: null });
  });
});
