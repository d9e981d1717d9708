import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { putIntegration } from '../src/modules/integrations/service.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { bearer, createKey, signUp, startTestApp, twoTenantKeys, until, type TestApp } from './harness.ts';
import { apiAs, uniqueNumber } from './voice-fixtures.ts';

// Issue 16: with no model configured (the embedded default) the agent is the built-in retrieval
// agent, labelled as such. Here the whole path runs as in production: the dialer answers the
// simulated call, the worker's call.answered job converses, call.ended leads to the analytics record.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  // Polling a conversation's progress is many requests a minute.
  t = await startTestApp({ clock, env: { SIMULATOR_RING_SECONDS: '0', SIMULATOR_TALK_SECONDS: '120', RATE_LIMIT_PER_MINUTE: '100000' } });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
});
afterAll(() => t.close());

type Api = ReturnType<typeof apiAs>;

async function agentWithKnowledge(api: Api, extra: Record<string, unknown> = {}) {
  const base = (await api('POST', '/knowledge-bases', { name: `Clinic ${uniqueNumber()}` })).json();
  const source = (
    await api('POST', `/knowledge-bases/${base.id}/sources`, {
      sourceType: 'text',
      sourceName: 'Clinic FAQ',
      rawText:
        '## Opening hours\n\nThe clinic is open from 8 am to 6 pm, Monday to Friday. On Saturdays we open from 9 am to noon.\n\n' +
        '## Parking\n\nPatients park for free in the **blue garage** behind the clinic.',
    })
  ).json();
  await until(
    'the source to be indexed',
    async () => (await api('GET', `/knowledge-bases/${base.id}/sources/${source.id}`)).json().status === 'READY',
  );
  const agent = (await api('POST', '/agents', { name: `Clinic desk ${uniqueNumber()}`, knowledgeBaseIds: [base.id], ...extra })).json();
  return { agent, sourceId: source.id as string };
}

/** One contact with a script, called by a started campaign; resolves with the answered call's id. */
async function dial(api: Api, agentId: string, say: string[] | undefined, campaignFields: Record<string, unknown> = {}) {
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' })).json();
  const list = (await api('POST', '/contact-lists', { name: `List ${uniqueNumber()}` })).json();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: [
      { phoneNumber: uniqueNumber(), name: 'Rosa', metadata: say ? { simulate: { say } } : {} },
      { phoneNumber: uniqueNumber(), metadata: { simulate: 'BUSY' } },
    ],
  });
  const campaign = (
    await api('POST', '/campaigns', {
      name: `C ${uniqueNumber()}`,
      agentId,
      voiceNumberId: number.id,
      contactListId: list.id,
      timezone: 'UTC',
      maxAttempts: 1,
      // Simulated calls to fictional US numbers at the test's clock, no solicitation: relaxed as the law allows.
      callingRules: false,
      ...campaignFields,
    })
  ).json();
  await api('POST', `/campaigns/${campaign.id}/start`, {});
  await dialerTick(t.runtime);
  await dialerTick(t.runtime);
  const calls = (await api('GET', `/call-logs?campaignId=${campaign.id}`)).json().data as {
    id: string;
    status: string;
    outcome: string | null;
  }[];
  return calls.find((call) => call.status === 'IN_PROGRESS' || call.outcome === 'ANSWERED')!.id;
}

/** As `dial`, then waits for the conversation to end the call, which it resolves with. */
async function rehearse(api: Api, agentId: string, say: string[] | undefined, campaignFields: Record<string, unknown> = {}) {
  const id = await dial(api, agentId, say, campaignFields);
  return until('the conversation to end the call', async () => {
    const call = (await api('GET', `/call-logs/${id}`)).json();
    return call.status === 'ENDED' ? call : undefined;
  });
}

const said = (call: { transcript: { role: string; text: string; by?: string }[] }) =>
  call.transcript.map((turn) => [turn.role, turn.text, turn.by ?? null]);

describe('the retrieval agent (no model configured)', () => {
  it('greets with the first message, answers from knowledge in a spoken way, asks again when nothing matches, and honours "stop calling me"', async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    const { agent, sourceId } = await agentWithKnowledge(api, { firstMessage: 'Hello {{name|there}}, this is the clinic.' });
    const call = await rehearse(api, agent.id, [
      'Hi, yes?',
      'What time do you open on Saturday?',
      'Can you sing me a song about dragons?',
      'Please stop calling me.',
      'This line is never heard.',
    ]);
    expect(said(call)).toEqual([
      ['agent', 'Hello Rosa, this is the clinic.', 'first-message'],
      ['contact', 'Hi, yes?', null],
      ['agent', `This is ${agent.name}, an automated assistant. What would you like to know?`, 'retrieval-agent'],
      ['contact', 'What time do you open on Saturday?', null],
      ['agent', 'On Saturdays we open from 9 am to noon.', 'retrieval-agent'],
      ['contact', 'Can you sing me a song about dragons?', null],
      ['agent', "Sorry, I don't know that. I can only answer from the information I've been given.", 'retrieval-agent'],
      ['contact', 'Please stop calling me.', null],
      ['agent', "Understood. We won't call you again. Goodbye.", 'retrieval-agent'],
    ]);
    expect(call.transcript[4].sources).toEqual([{ sourceId, sourceName: 'Clinic FAQ', chunkId: expect.any(String) }]);
    expect(call).toMatchObject({ endReason: 'opted_out', outcomes: [{ type: 'opt_out', toolCallId: null, data: {} }] });
    // The person is on the do-not-call list, with the call and the turn where they asked.
    expect((await api('GET', `/dnc/${encodeURIComponent(call.toNumber)}`)).json()).toMatchObject({
      source: 'call',
      reason: 'Asked on a call not to be called again.',
      evidence: { callId: call.id, transcriptTurn: 7 },
    });
    // No model ran: no tokens, no model named; the line is billed for the time it was open.
    expect(call.usage).toMatchObject({ llmTokens: 0, llmModel: null, sttSeconds: 0, ttsCharacters: 0 });
    expect(call.cost.llm).toBe('0.0000');
    const record = await until(
      'the analytics record',
      async () => (await api('GET', `/analytics/results?session_id=${call.id}`)).json().data[0],
    );
    expect(record).toMatchObject({ status: 'skipped: no model configured', outcome: 'opted_out', summary: null, fields: {} });
  });

  it('says goodbye and ends the call when the contact does, greeting by itself when there is no first message', async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    const { agent } = await agentWithKnowledge(api);
    const call = await rehearse(api, agent.id, ['Where can I park?', "Thanks, that's all. Bye!"]);
    expect(said(call)).toEqual([
      ['agent', `Hello, this is ${agent.name}, an automated assistant. How can I help you?`, 'retrieval-agent'],
      ['contact', 'Where can I park?', null],
      ['agent', 'Patients park for free in the blue garage behind the clinic.', 'retrieval-agent'],
      ['contact', "Thanks, that's all. Bye!", null],
      ['agent', 'Thank you for your time. Goodbye.', 'retrieval-agent'],
    ]);
    expect(call.endReason).toBe('agent_ended');
  });

  it('is the one that answers a test chat, labelled, at no model cost', async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    const { agent } = await agentWithKnowledge(api);
    const chat = (await api('POST', '/test-chats', { agentId: agent.id })).json();
    expect(chat).toMatchObject({ brain: 'retrieval-agent', transcript: [{ role: 'agent', by: 'retrieval-agent' }] });
    const replied = (await api('POST', `/test-chats/${chat.id}/messages`, { text: 'Is parking free?' })).json();
    expect(replied.transcript.at(-1)).toMatchObject({
      text: 'Patients park for free in the blue garage behind the clinic.',
      by: 'retrieval-agent',
    });
    expect(replied).toMatchObject({ status: 'OPEN', usage: { llmTokens: 0, llmModel: null }, cost: { total: '0.0000' } });
  });

  it('streams a live call turn by turn to a viewer (server-sent events) until it ends', async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    const { agent } = await agentWithKnowledge(api);
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const id = await dial(api, agent.id, ['Is parking free?', 'Goodbye.']);
    const response = await fetch(`${address}/api/v1/call-logs/${id}/live`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events: { event: string; data: unknown }[] = [];
    const text = await response.text(); // the server ends the stream once the call has ended
    for (const block of text.split('\n\n').filter(Boolean)) {
      const [eventLine, dataLine] = block.split('\n');
      events.push({ event: eventLine!.slice('event: '.length), data: JSON.parse(dataLine!.slice('data: '.length)) });
    }
    const ended = events.at(-1)!;
    expect(ended.event).toBe('ended');
    const call = ended.data as { status: string; transcript: unknown[] };
    expect(call.status).toBe('ENDED');
    expect(events.filter((e) => e.event === 'turn').map((e) => e.data)).toEqual(call.transcript);
    expect(events.filter((e) => e.event === 'status').at(-1)!.data).toEqual({ status: 'ENDED', endReason: 'agent_ended' });
    const other = await twoTenantKeys(t.app);
    expect((await fetch(`${address}/api/v1/call-logs/${id}/live`, { headers: { authorization: `Bearer ${other.key}` } })).status).toBe(404);
  });

  it("refuses a tenant's model server at a private address when saved, and again when used: the agent says its fallback line, nothing is sent there", async () => {
    const owner = await signUp(t.app);
    const api = apiAs(t.app, (await createKey(t.app, owner.token)).key);
    const own = await startFakeChat();
    try {
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/integrations/llm',
        headers: bearer(owner.token),
        payload: { apiUrl: `${own.url}/v1`, apiKey: 'sk-tenant' },
      });
      // Refused when saved; one saved while the rule was lifted is refused again when it is used.
      expect(put.json()).toMatchObject({ statusCode: 400, details: [{ path: '/apiUrl' }] });
      const lifted = { ...tenantCtx(t.runtime, owner.tenantId), config: { ...t.runtime.config, allowPrivateUrls: true } };
      await putIntegration(lifted, 'llm', { apiUrl: `${own.url}/v1`, apiKey: 'sk-tenant' });
      // The service has no model server of its own, but the tenant has one: a model may be named.
      const agent = (await api('POST', '/agents', { name: 'Private model', llm: { model: 'm' } })).json();
      expect(agent.llm).toEqual({ provider: 'OPENAI_COMPATIBLE', model: 'm' });
      const chat = (await api('POST', '/test-chats', { agentId: agent.id })).json();
      expect(chat).toMatchObject({ status: 'ENDED', endReason: 'llm_error', transcript: [{ role: 'agent', by: 'fallback' }] });
      expect(own.received).toHaveLength(0);
    } finally {
      await own.close();
    }
  });

  it("gives a contact without a script of its own the campaign's simulatorScript", async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    const { agent } = await agentWithKnowledge(api);
    const tooLong = await api('POST', '/campaigns', {
      name: `C ${uniqueNumber()}`,
      simulatorScript: Array.from({ length: 51 }, () => 'Hi'),
    });
    expect(tooLong.statusCode).toBe(400);
    const call = await rehearse(api, agent.id, undefined, { simulatorScript: ['Is parking free?', 'Bye.'] });
    expect(call.transcript.filter((turn: { role: string }) => turn.role === 'contact').map((turn: { text: string }) => turn.text)).toEqual([
      'Is parking free?',
      'Bye.',
    ]);
    expect((await api('GET', `/campaigns/${call.campaignId}`)).json().simulatorScript).toEqual(['Is parking free?', 'Bye.']);
  });
});
