import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { extractAfterCall } from '../src/modules/analytics/extraction.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { processSource } from '../src/modules/knowledge/service.ts';
import { sendDuringCall, sendMessage } from '../src/modules/messaging/dispatch.ts';
import { findCallRow } from '../src/modules/calls/service.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { manualClock } from '../src/platform/clock.ts';
import { money } from '../src/platform/money.ts';
import { listenOnLoopback, readBody } from '../src/providers/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs, uniqueNumber } from './voice-fixtures.ts';

// Issue 16: agents converse through a model on simulated calls. The model is a local
// OpenAI-compatible server speaking the real streaming wire format; the test asserts what it
// received (the filled prompt, the tool results) and what the call recorded.
const clock = manualClock('2026-11-23T10:00:00.000Z'); // a Monday
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;

beforeAll(async () => {
  chat = await startFakeChat();
  t = await startTestApp({
    clock,
    env: {
      LLM_API_URL: `${chat.url}/v1`,
      LLM_API_KEY: 'sk-fake',
      LLM_MODEL: 'house-model',
      LLM_TIMEOUT_MS: '1000',
      RATE_LLM_MODELS: '{"priced-model": {"input": "0.5", "output": "1.5"}}',
      SIMULATOR_RING_SECONDS: '0',
      SIMULATOR_TALK_SECONDS: '60',
      ALLOW_PRIVATE_URLS: '1',
    },
  });
});
afterAll(async () => {
  await t.close();
  await chat.close();
});

async function tenant() {
  const owner = await signUp(t.app);
  const created = await createKey(t.app, owner.token);
  const api = apiAs(t.app, created.key);
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  return { api, tenantId, owner };
}

type Api = ReturnType<typeof apiAs>;

/** A running one-contact campaign of `agent`, ticked until its call is answered; returns the live call. */
async function answeredCall(api: Api, agentId: string, contact: Record<string, unknown>) {
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' })).json();
  const list = (await api('POST', '/contact-lists', { name: `List ${uniqueNumber()}` })).json();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: [
      { phoneNumber: uniqueNumber(), ...contact },
      { phoneNumber: uniqueNumber(), metadata: { simulate: 'BUSY' } },
    ],
  });
  const created = await api('POST', '/campaigns', {
    name: `Rehearsal ${uniqueNumber()}`,
    agentId,
    voiceNumberId: number.id,
    contactListId: list.id,
    timezone: 'UTC',
    maxAttempts: 1,
    // Simulated rehearsals of fictional US numbers at the test's clock, no solicitation: relaxed as the law allows.
    callingRules: false,
  });
  const campaignId = created.json().id as string;
  expect((await api('POST', `/campaigns/${campaignId}/start`, {})).statusCode).toBe(202);
  await dialerTick(t.runtime); // placed: ringing for no time (SIMULATOR_RING_SECONDS=0)
  await dialerTick(t.runtime); // answered
  const live = (await api('GET', `/call-logs?campaignId=${campaignId}&limit=10`))
    .json()
    .data.find((call: { status: string }) => call.status === 'IN_PROGRESS');
  expect(live).toBeDefined();
  return { callId: live.id as string, campaignId, campaignName: created.json().name as string };
}

/** A knowledge base holding `text`, processed (chunked and embedded) as its job would. */
async function knowledgeBase(api: Api, tenantId: string, sourceName: string, rawText: string) {
  const base = (await api('POST', '/knowledge-bases', { name: `KB ${uniqueNumber()}` })).json();
  const source = (await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName, rawText })).json();
  await processSource(t.runtime, { tenantId, sourceId: source.id, generation: 1 }, { retryCount: 0 });
  expect((await api('GET', `/knowledge-bases/${base.id}/sources/${source.id}`)).json().status).toBe('READY');
  return { baseId: base.id as string, sourceId: source.id as string };
}

/** The server of the order tool, answering every request with `answer`; the requests it received. */
async function orderServer(contentType: string, answer: string) {
  const toolRequests: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];
  const toolServer = await listenOnLoopback(
    createServer(async (req, res) => {
      toolRequests.push({ headers: req.headers, body: await readBody(req) });
      res.writeHead(200, { 'content-type': contentType }).end(answer);
    }),
  );
  return { toolServer, toolRequests };
}

/** A custom HTTP tool that finds an order at `serverUrl`. */
const lookupOrder = (serverUrl: string) => ({
  name: 'lookup_order',
  description: 'Finds an order.',
  parameters: { type: 'object', properties: { orderNumber: { type: 'string' } }, required: ['orderNumber'] },
  url: `${serverUrl}/orders`,
});

const callOf = async (api: Api, id: string) => (await api('GET', `/call-logs/${id}`)).json();
const messagesOf = (i: number) => chat.received[i]!.body.messages as { role: string; content: string | null; tool_call_id?: string }[];

describe('a conversation with a model on a simulated call', () => {
  it('fills the prompt for the contact, records the real turns, and bills the tokens the server reported', async () => {
    const { api, tenantId } = await tenant();
    const before = money((await api('GET', '/profile')).json().data.wallet.balance);
    const agent = (
      await api('POST', '/agents', {
        name: 'Renewals',
        systemPrompt: 'You call {{name}} about the {{metadata.plan}} plan for {{campaign.name}}. Today is {{date}} ({{timezone}}).',
        firstMessage: 'Hi {{name|there}}, this is {{agent.name}}.',
        tools: ['end_call'],
        llm: { model: 'priced-model', temperature: 0.3, maxTokens: 120 },
      })
    ).json();
    expect(agent.llm).toEqual({ provider: 'OPENAI_COMPATIBLE', model: 'priced-model', temperature: 0.3, maxTokens: 120 });
    const { callId, campaignName } = await answeredCall(api, agent.id, {
      name: 'Ana',
      metadata: { plan: 'gold', simulate: { say: ['Which plan am I on?', 'Great, thanks. Bye!'] } },
    });
    chat.script(
      { kind: 'stream', text: ['You are on ', 'the gold plan.'], usage: { prompt_tokens: 100, completion_tokens: 10 } },
      {
        kind: 'stream',
        text: ['Goodbye, Ana!'],
        toolCalls: [{ id: 'call_end', name: 'end_call', arguments: ['{"reason":', '"done"}'] }],
        usage: { prompt_tokens: 120, completion_tokens: 5 },
      },
    );
    const sent = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId });

    const first = chat.received[sent]!;
    expect(first.authorization).toBe('Bearer sk-fake');
    expect(first.body).toMatchObject({ model: 'priced-model', temperature: 0.3, max_tokens: 120, stream: true });
    expect((first.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name)).toEqual(['end_call', 'opt_out']);
    const messages = messagesOf(sent);
    expect(messages[0]!.content).toContain(`You call Ana about the gold plan for ${campaignName}. Today is 2026-11-23 (UTC).`);
    expect(messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Hi Ana, this is Renewals.' },
      { role: 'user', content: 'Which plan am I on?' },
    ]);
    expect(messagesOf(sent + 1).slice(-2)).toEqual([
      { role: 'assistant', content: 'You are on the gold plan.' },
      { role: 'user', content: 'Great, thanks. Bye!' },
    ]);

    const call = await callOf(api, callId);
    expect(call).toMatchObject({ status: 'ENDED', outcome: 'ANSWERED', endReason: 'agent_ended' });
    expect(call.transcript.map((turn: { role: string; text: string; by?: string }) => [turn.role, turn.text, turn.by ?? null])).toEqual([
      ['agent', 'Hi Ana, this is Renewals.', 'first-message'],
      ['contact', 'Which plan am I on?', null],
      ['agent', 'You are on the gold plan.', 'model:priced-model'],
      ['contact', 'Great, thanks. Bye!', null],
      ['agent', 'Goodbye, Ana!', 'model:priced-model'],
      ['tool', 'The call ends after this turn.', null],
    ]);
    expect(call.transcript[5].tool).toEqual({ id: 'call_end', name: 'end_call', arguments: { reason: 'done' }, ok: true });
    expect(call.transcript[2].latency).toEqual({ firstTokenMs: expect.any(Number), totalMs: expect.any(Number) });
    // 220 input tokens at 0.5 and 15 output tokens at 1.5 per 1,000 (RATE_LLM_MODELS); no voice, no recogniser ran.
    expect(call.usage).toEqual({
      sttSeconds: 0,
      ttsCharacters: 0,
      llmTokens: 235,
      llmInputTokens: 220,
      llmOutputTokens: 15,
      llmInputAudioTokens: 0,
      llmOutputAudioTokens: 0,
      llmModel: 'priced-model',
      llmProvider: 'OPENAI_COMPATIBLE',
      sttProvider: null,
      ttsProvider: null,
      telephonyProvider: null,
      telephonySeconds: 0,
    });
    expect(call.cost).toMatchObject({ llm: '0.1325', stt: '0.0000', tts: '0.0000', total: '0.1325' });
    expect(money((await api('GET', '/profile')).json().data.wallet.balance).toFixed(4)).toBe(before.sub('0.1325').toFixed(4));
  });

  it('runs tools with checked arguments, reports bad calls to the model as tool errors, and records outcomes once', async () => {
    const { api, tenantId, owner } = await tenant();
    await createKey(t.app, owner.token, { name: 'hooks', webhookUrl: 'https://hooks.example.com/callforge' });
    const { toolServer, toolRequests } = await orderServer('application/json', '{"status":"shipped","eta":"Friday"}');
    try {
      const created = (
        await api('POST', '/agents', {
          name: 'Collections',
          firstMessage: 'Hello, this is Collections.',
          tools: ['book_appointment', 'collect_payment_promise', 'transfer_call'],
          customTools: [lookupOrder(toolServer.url)],
        })
      ).json();
      const { callId } = await answeredCall(api, created.id, {
        metadata: { simulate: { say: ['Where is order A1? I can pay 50 euros on December 1st.'] } },
      });
      chat.script(
        {
          kind: 'stream',
          toolCalls: [
            { id: 'c1', name: 'book_appointment', arguments: ['{"start":"tomorrow"}'] },
            { id: 'c2', name: 'lookup_order', arguments: ['{"orderNumber":', '"A1"}'] },
            { id: 'c3', name: 'teleport', arguments: ['{}'] },
            { id: 'c4', name: 'collect_payment_promise', arguments: ['{"amount": 50,'] },
            { id: 'c5', name: 'transfer_call', arguments: ['{}'] },
          ],
        },
        {
          kind: 'stream',
          toolCalls: [
            { id: 'c6', name: 'collect_payment_promise', arguments: ['{"amount":50,"currency":"EUR","date":"2026-12-01"}'] },
            { id: 'c7', name: 'book_appointment', arguments: ['{"start":"2026-11-24T10:00:00+01:00","durationMinutes":30}'] },
          ],
        },
        { kind: 'stream', text: ['Your order ships Friday, and I noted your payment.'] },
      );
      const sent = chat.received.length;
      await converseOnSimulatedCall(t.runtime, { tenantId, callId });
      await converseOnSimulatedCall(t.runtime, { tenantId, callId }); // a retried job finds the call taken
      expect(chat.received.length - sent).toBe(3);

      const toolResults = messagesOf(sent + 1).filter((message) => message.role === 'tool');
      expect(toolResults.map((message) => [message.tool_call_id, message.content])).toEqual([
        ['c1', 'Invalid arguments for book_appointment: start must match format "date-time".'],
        ['c2', '{"status":"shipped","eta":"Friday"}'],
        [
          'c3',
          'There is no tool named teleport; use one of: transfer_call, book_appointment, collect_payment_promise, opt_out, lookup_order.',
        ],
        ['c4', 'The arguments of collect_payment_promise are not valid JSON; send a JSON object.'],
        ['c5', 'No transfer number is configured for this agent; offer that someone will call back instead.'],
      ]);
      // The custom tool's request: the arguments, signed the Standard Webhooks way with the agent's secret.
      expect(toolRequests).toHaveLength(1);
      const [request] = toolRequests;
      expect(JSON.parse(request!.body)).toEqual({
        tool: 'lookup_order',
        toolCallId: 'c2',
        arguments: { orderNumber: 'A1' },
        agentId: created.id,
        callId,
        campaignId: expect.any(String),
        contactId: expect.any(String),
        test: false,
      });
      const headers = request!.headers as Record<string, string>;
      expect(headers['webhook-timestamp']).toBe(String(Math.floor(clock.now().getTime() / 1000))); // the service's clock
      const signedAt = new Date(Number(headers['webhook-timestamp']) * 1000);
      expect(headers['webhook-signature']).toBe(
        new Webhook(created.toolSigningSecret).sign(headers['webhook-id']!, signedAt, request!.body),
      );

      const call = await callOf(api, callId);
      expect(call.status).toBe('IN_PROGRESS'); // no end_call: the contact stays on the line until their time is up
      expect(call.outcomes).toEqual([
        {
          type: 'payment_promise',
          toolCallId: 'c6',
          at: expect.any(String),
          data: { amount: 50, currency: 'EUR', date: '2026-12-01', notes: null },
        },
        {
          type: 'appointment',
          toolCallId: 'c7',
          at: expect.any(String),
          data: { start: '2026-11-24T09:00:00.000Z', durationMinutes: 30, notes: null },
        },
      ]);
      const tools = call.transcript.filter((turn: { role: string }) => turn.role === 'tool');
      expect(tools.map((turn: { tool: { name: string; ok: boolean } }) => [turn.tool.name, turn.tool.ok])).toEqual([
        ['book_appointment', false],
        ['lookup_order', true],
        ['teleport', false],
        ['collect_payment_promise', false],
        ['transfer_call', false],
        ['collect_payment_promise', true],
        ['book_appointment', true],
      ]);
      const deliveries = async (eventType: string) =>
        (
          await t.app.inject({ method: 'GET', url: `/api/v1/webhook-deliveries?eventType=${eventType}`, headers: bearer(owner.token) })
        ).json();
      expect((await deliveries('appointment.booked')).total).toBe(1);
      expect((await deliveries('payment_promise.recorded')).data[0]).toMatchObject({ eventType: 'payment_promise.recorded' });
    } finally {
      await toolServer.close();
    }
  });

  it('sends an SMS during the call once per tool call, even when the step is retried, and tells the model why WhatsApp cannot', async () => {
    const { api, tenantId } = await tenant();
    const agent = (await api('POST', '/agents', { name: 'Reminders', firstMessage: 'Hi.', tools: ['send_sms', 'send_whatsapp'] })).json();
    const sms = await api('POST', '/sms-agent/campaigns', {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'SIMULATOR',
      isActive: false,
    });
    expect(sms.statusCode).toBe(201);
    const { callId } = await answeredCall(api, agent.id, { metadata: { simulate: { say: ['Text me the address please.'] } } });
    chat.script(
      {
        kind: 'stream',
        toolCalls: [
          { id: 's1', name: 'send_sms', arguments: ['{"text":"Clinic: 1 Main St."}'] },
          { id: 'w1', name: 'send_whatsapp', arguments: ['{"text":"Clinic: 1 Main St."}'] },
        ],
      },
      { kind: 'stream', text: ['Sent!'] },
    );
    const sent = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId });
    const call = await callOf(api, callId);
    const toolResults = messagesOf(sent + 1).filter((message) => message.role === 'tool');
    expect(toolResults.map((message) => message.content)).toEqual([
      `The SMS is on its way to ${call.toNumber}.`,
      expect.stringMatching(/^send_whatsapp failed: WhatsApp is not connected; connect it with PUT \/api\/v1\/integrations\/whatsapp/),
    ]);
    // The step again, as a retried job would run it: the same tool call sends nothing more.
    const ctx = tenantCtx(t.runtime, tenantId);
    const again = await sendDuringCall(ctx, {
      call: (await findCallRow(ctx, callId))!,
      channel: 'SMS',
      text: 'Clinic: 1 Main St.',
      toolCallId: 's1',
    });
    expect(again).toEqual({ to: call.toNumber, created: false });
    const messages = (await api('GET', `/messages?callId=${callId}`)).json().data;
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ channel: 'SMS', status: 'QUEUED', toNumber: call.toNumber, body: 'Clinic: 1 Main St.' });
    await sendMessage(t.runtime, { tenantId, messageId: messages[0].id }, { retryCount: 0 });
    expect((await api('GET', `/messages?callId=${callId}`)).json().data[0].status).toBe('SENT');
  });

  it("converses through the tenant's own model server when it connected one, with its key", async () => {
    const { api, tenantId, owner } = await tenant();
    const own = await startFakeChat();
    try {
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/integrations/llm',
        headers: bearer(owner.token),
        payload: { apiUrl: `${own.url}/v1`, apiKey: 'sk-tenant' },
      });
      expect(put.statusCode).toBe(200);
      expect(put.json()).toMatchObject({ kind: 'llm', settings: { apiUrl: `${own.url}/v1` }, secretsSet: ['apiKey'] });
      expect(put.body).not.toContain('sk-tenant');
      const agent = (await api('POST', '/agents', { name: 'Own model', firstMessage: 'Hi.', llm: { model: 'tenant-model' } })).json();
      const { callId } = await answeredCall(api, agent.id, { metadata: { simulate: { say: ['Hello?'] } } });
      own.script({ kind: 'stream', text: ['Hello from your own model.'], usage: { prompt_tokens: 10, completion_tokens: 5 } });
      const sentToService = chat.received.length;
      await converseOnSimulatedCall(t.runtime, { tenantId, callId });
      expect(chat.received.length).toBe(sentToService);
      expect(own.received).toHaveLength(1);
      expect(own.received[0]).toMatchObject({ authorization: 'Bearer sk-tenant', body: { model: 'tenant-model' } });
      expect((await callOf(api, callId)).transcript.at(-1)).toMatchObject({ text: 'Hello from your own model.', by: 'model:tenant-model' });
      // After the call, the same server and model read the transcript for the analytics record.
      await t.runtime.db.query("UPDATE calls SET status = 'ENDED' WHERE id = $1 AND status <> 'ENDED'", [callId]);
      own.script({
        kind: 'completion',
        content: '{"summary": "The contact said hello.", "fields": {}}',
        usage: { prompt_tokens: 60, completion_tokens: 9 },
      });
      expect(await extractAfterCall(t.runtime, { tenantId, callId })).toBe(true);
      expect(own.received[1]).toMatchObject({
        authorization: 'Bearer sk-tenant',
        body: { model: 'tenant-model', response_format: { type: 'json_schema', json_schema: { name: 'call_analytics', strict: true } } },
      });
      expect(chat.received.length).toBe(sentToService);
      expect((await api('GET', `/analytics/results?session_id=${callId}`)).json().data[0]).toMatchObject({
        status: 'extracted',
        summary: 'The contact said hello.',
      });
    } finally {
      await own.close();
    }
  });

  it('says a fallback line and ends the call with llm_error when the model fails, billing what ran', async () => {
    const { api, tenantId } = await tenant();
    const agent = (await api('POST', '/agents', { name: 'Support' })).json(); // no first message: the model opens
    const { callId } = await answeredCall(api, agent.id, { metadata: { simulate: { say: ['Hello?', 'Are you there?'] } } });
    chat.script({ kind: 'stream', text: ['Hi, this is Support.'], usage: { prompt_tokens: 40, completion_tokens: 6 } }, { kind: 'stall' });
    const sent = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId });
    expect(messagesOf(sent).map((message) => message.role)).toEqual(['system']);
    expect(chat.received[sent]!.body.model).toBe('house-model'); // the service's LLM_MODEL: the agent names none
    const call = await callOf(api, callId);
    expect(call).toMatchObject({ status: 'ENDED', endReason: 'llm_error' });
    expect(call.transcript.at(-1)).toMatchObject({ role: 'agent', by: 'fallback', text: expect.stringContaining('trouble') });
    // The stalled reply reported no usage: only the first reply's tokens are billed, at the flat rate.
    expect(call.usage).toMatchObject({ llmTokens: 46, llmModel: 'house-model' });
    expect(call.cost.llm).toBe('0.0001');
    expect(await extractAfterCall(t.runtime, { tenantId, callId }, { retryCount: 5 })).toBe(true);
    const [record] = (await api('GET', `/analytics/results?session_id=${callId}`)).json().data;
    expect(record).toMatchObject({ outcome: 'llm_error', status: expect.stringMatching(/^failed: /), fields: {} });
  });

  it('puts knowledge passages in context each turn and runs knowledge_search, recording the sources each answer used', async () => {
    const { api, tenantId } = await tenant();
    const { baseId, sourceId } = await knowledgeBase(
      api,
      tenantId,
      'Opening hours',
      'Our office is open from 9 am to 5 pm on weekdays. We are closed on public holidays.\n\nParking is free for visitors in the garage under the building.',
    );
    const agent = (
      await api('POST', '/agents', {
        name: 'Front desk',
        firstMessage: 'Front desk, hello.',
        knowledgeBaseIds: [baseId],
        knowledgeInContext: true,
        tools: ['knowledge_search'],
      })
    ).json();
    const { callId } = await answeredCall(api, agent.id, { metadata: { simulate: { say: ['When is the office open?'] } } });
    chat.script(
      { kind: 'stream', toolCalls: [{ id: 'k1', name: 'knowledge_search', arguments: ['{"query":"free parking for visitors"}'] }] },
      { kind: 'stream', text: ['We are open 9 to 5 on weekdays, and parking is free.'] },
    );
    const sent = chat.received.length;
    await converseOnSimulatedCall(t.runtime, { tenantId, callId });
    const context = messagesOf(sent).find((message) => message.role === 'system' && message.content!.startsWith('Passages'));
    expect(context!.content).toContain('(Opening hours) Our office is open from 9 am to 5 pm on weekdays.');
    // The passages sit just before the contact's words in every round, the tool result after its call.
    expect(messagesOf(sent + 1).map((message) => message.role)).toEqual(['system', 'assistant', 'system', 'user', 'assistant', 'tool']);
    expect(messagesOf(sent + 1).at(-1)!.content).toContain('Parking is free for visitors');
    const call = await callOf(api, callId);
    const [tool, answer] = call.transcript.slice(-2);
    expect(tool).toMatchObject({
      role: 'tool',
      tool: { name: 'knowledge_search', ok: true },
      sources: [{ sourceId, sourceName: 'Opening hours' }],
    });
    expect(answer).toMatchObject({
      role: 'agent',
      by: 'model:house-model',
      sources: [{ sourceId, sourceName: 'Opening hours', chunkId: expect.any(String) }],
    });
  });
});

describe('talking to an agent in a test chat', () => {
  it('runs the same engine without a call: the prompt filled for the tester, tools reported, tokens billed as a test cost', async () => {
    const { api } = await tenant();
    const balance = async () => money((await api('GET', '/profile')).json().data.wallet.balance);
    const before = await balance();
    const agent = (
      await api('POST', '/agents', {
        name: 'Bookings',
        systemPrompt: 'Book a visit for {{name}} ({{metadata.plan}}).',
        firstMessage: 'Hi {{name|there}}!',
        tools: ['book_appointment', 'end_call'],
        llm: { model: 'priced-model' },
      })
    ).json();
    const opened = await api('POST', '/test-chats', { agentId: agent.id, contact: { name: 'Lia', metadata: { plan: 'basic' } } });
    expect(opened.statusCode).toBe(201);
    const chatId = opened.json().id;
    expect(opened.json()).toMatchObject({
      agentId: agent.id,
      status: 'OPEN',
      brain: 'model:priced-model',
      transcript: [{ role: 'agent', text: 'Hi Lia!', by: 'first-message' }],
      cost: { total: '0.0000' },
    });
    chat.script(
      {
        kind: 'stream',
        toolCalls: [{ id: 'b1', name: 'book_appointment', arguments: ['{"start":"2026-11-24T09:00:00Z"}'] }],
        usage: { prompt_tokens: 200, completion_tokens: 20 },
      },
      {
        kind: 'stream',
        text: ['Booked for tomorrow at nine. Bye!'],
        toolCalls: [{ id: 'b2', name: 'end_call', arguments: ['{}'] }],
        usage: { prompt_tokens: 300, completion_tokens: 10 },
      },
    );
    const sent = chat.received.length;
    const replied = await api('POST', `/test-chats/${chatId}/messages`, { text: 'Tomorrow at 9 please.' });
    expect(replied.statusCode).toBe(200);
    expect(messagesOf(sent)[0]!.content).toContain('Book a visit for Lia (basic).');
    expect(messagesOf(sent).slice(1)).toEqual([
      { role: 'assistant', content: 'Hi Lia!' },
      { role: 'user', content: 'Tomorrow at 9 please.' },
    ]);
    // 500 input tokens at 0.5 and 30 output tokens at 1.5 per 1,000.
    expect(replied.json()).toMatchObject({
      status: 'ENDED',
      endReason: 'agent_ended',
      usage: { llmInputTokens: 500, llmOutputTokens: 30, llmModel: 'priced-model', telephonySeconds: 0 },
      cost: { llm: '0.2950', total: '0.2950' },
    });
    expect(replied.json().transcript.map((turn: { role: string }) => turn.role)).toEqual(['agent', 'contact', 'tool', 'agent', 'tool']);
    expect(replied.json().transcript[2]).toMatchObject({
      text: 'Booked for 2026-11-24T09:00:00.000Z (a test chat: recorded in the chat only).',
    });
    expect((await balance()).toFixed(4)).toBe(before.sub('0.2950').toFixed(4));
    expect((await api('GET', `/test-chats/${chatId}`)).json()).toEqual(replied.json());

    const again = await api('POST', `/test-chats/${chatId}/messages`, { text: 'Hello?' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({
      code: 'TEST_CHAT_ENDED',
      message: 'This chat has ended (agent ended); start a new chat to talk to the agent again.',
    });
    expect(chat.received.length).toBe(sent + 2);

    const other = await tenant();
    expect((await other.api('GET', `/test-chats/${chatId}`)).statusCode).toBe(404);
    expect((await other.api('POST', `/test-chats/${chatId}/messages`, { text: 'Hi' })).statusCode).toBe(404);
    expect((await other.api('POST', '/test-chats', { agentId: agent.id })).json()).toMatchObject({
      code: 'NOT_FOUND',
      message: 'Agent not found.',
    });
    expect((await api('POST', `/test-chats/${chatId}/messages`, { text: '' })).statusCode).toBe(400);
  });

  it("stores the model's and an HTTP tool's NUL characters and halves of surrogate pairs as U+FFFD, which the chat's transcript can hold", async () => {
    const { api } = await tenant();
    const { toolServer, toolRequests } = await orderServer('text/plain', 'Order A1: ship\u0000ped.');
    try {
      const agent = (
        await api('POST', '/agents', {
          name: 'Orders',
          firstMessage: 'Hi!',
          customTools: [lookupOrder(toolServer.url)],
        })
      ).json();
      const chatId = (await api('POST', '/test-chats', { agentId: agent.id })).json().id as string;
      chat.script(
        // The arguments' JSON escapes become a NUL and half a pair once parsed.
        { kind: 'stream', toolCalls: [{ id: 'o1', name: 'lookup_order', arguments: ['{"orderNumber":"A\\u00001\\ud800"}'] }] },
        { kind: 'stream', text: ['It ship\u0000ped ', 'today \ud83d, ', 'enjoy 😀.'] },
      );
      const replied = await api('POST', `/test-chats/${chatId}/messages`, { text: 'Where is my order?' });
      expect(replied.statusCode).toBe(200);
      expect(JSON.parse(toolRequests[0]!.body).arguments).toEqual({ orderNumber: 'A\uFFFD1\uFFFD' });
      const transcript = [
        { role: 'agent', text: 'Hi!' },
        { role: 'contact', text: 'Where is my order?' },
        {
          role: 'tool',
          text: 'Order A1: ship\uFFFDped.',
          tool: { name: 'lookup_order', arguments: { orderNumber: 'A\uFFFD1\uFFFD' }, ok: true },
        },
        { role: 'agent', text: 'It ship\uFFFDped today \uFFFD, enjoy 😀.' },
      ];
      expect(replied.json().transcript).toMatchObject(transcript);
      expect((await api('GET', `/test-chats/${chatId}`)).json().transcript).toMatchObject(transcript);
    } finally {
      await toolServer.close();
    }
  });
});
