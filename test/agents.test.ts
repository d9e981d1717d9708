import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as agents from '../src/modules/agents/service.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// Seed §4.7 and contract §3 (agents, voice numbers), through HTTP on a real database.
let t: TestApp;
let owner: Awaited<ReturnType<typeof signUp>>;
let other: Awaited<ReturnType<typeof signUp>>;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startTestApp();
  owner = await signUp(t.app);
  other = await signUp(t.app);
  key = (await createKey(t.app, owner.token)).key;
  otherKey = (await createKey(t.app, other.token)).key;
});
afterAll(() => t.close());

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, as = key) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: bearer(as), ...(payload === undefined ? {} : { payload: payload as object }) });

let agentCounter = 0;
async function newAgent(body: Record<string, unknown> = {}, as = key) {
  const response = await api('POST', '/agents', { name: `Agent ${++agentCounter} ${randomUUID().slice(0, 8)}`, ...body }, as);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string; name: string };
}

let numberCounter = 0;
const nextPhone = () => `+1415555${String(++numberCounter).padStart(4, '0')}`;
async function newNumber(body: Record<string, unknown> = {}, as = key) {
  const response = await api('POST', '/voice-numbers', { phoneNumber: nextPhone(), provider: 'SIMULATOR', ...body }, as);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string; phoneNumber: string; inboundAgentId: string | null };
}

const LOOKUP_TOOL = {
  name: 'lookup_order',
  description: 'Finds an order by its number.',
  parameters: { type: 'object', properties: { orderNumber: { type: 'string' } }, required: ['orderNumber'] },
  url: 'https://tools.example.com/orders',
};

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('agents', () => {
  it('creates an agent with every field and answers the full record', async () => {
    const kb = (await api('POST', '/knowledge-bases', { name: 'Collections FAQ' })).json().id as string;
    const response = await api('POST', '/agents', {
      name: 'Collections',
      description: 'Friendly reminders',
      language: 'es',
      voice: 'roa/es-419',
      tts: { provider: 'ESPEAK' },
      systemPrompt: 'You remind customers of overdue invoices.',
      firstMessage: 'Hola, ¿tiene un momento?',
      knowledgeBaseIds: [kb],
      tools: ['end_call', 'collect_payment_promise'],
      customTools: [LOOKUP_TOOL],
      knowledgeInContext: true,
      transferNumber: '+34 600 000 001',
      recording: { enabled: true, retentionDays: 90 },
      metadata: { team: 'finance' },
    });
    expect(response.statusCode).toBe(201);
    const { toolSigningSecret, ...agent } = response.json();
    // Shown once: the secret that signs the custom tools' requests.
    expect(toolSigningSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(agent).toEqual({
      id: expect.any(String),
      tenantId: owner.tenantId,
      name: 'Collections',
      description: 'Friendly reminders',
      language: 'es',
      voice: 'roa/es-419',
      systemPrompt: 'You remind customers of overdue invoices.',
      firstMessage: 'Hola, ¿tiene un momento?',
      knowledgeBaseIds: [kb],
      tools: ['end_call', 'collect_payment_promise'],
      customTools: [LOOKUP_TOOL],
      llm: null,
      realtime: null,
      stt: null,
      tts: { provider: 'ESPEAK' },
      backup: null,
      voicePipeline: 'MEDIA_STREAM',
      knowledgeInContext: true,
      transferNumber: '+34600000001',
      recording: { enabled: true, retentionDays: 90 },
      metadata: { team: 'finance' },
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await api('GET', `/agents/${agent.id}`)).json()).toEqual(agent);
  });

  it('fills defaults: language en-US, eSpeak’s American English voice, no listening, empty lists and metadata, nulls', async () => {
    const response = await api('POST', '/agents', { name: 'Bare' });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({
      language: 'en-US',
      description: null,
      voice: 'gmw/en-US',
      stt: null,
      tts: { provider: 'ESPEAK' },
      systemPrompt: null,
      firstMessage: null,
      knowledgeBaseIds: [],
      tools: [],
      customTools: [],
      llm: null,
      knowledgeInContext: false,
      transferNumber: null,
      recording: { enabled: false, retentionDays: 30 },
      metadata: {},
    });
  });

  it('refuses a template variable no call can fill with 400 naming it, on create and on update', async () => {
    const refused = await api('POST', '/agents', { name: 'Templates', systemPrompt: 'Greet {{name}} about {{ plan }}.' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      code: 'UNKNOWN_TEMPLATE_VARIABLE',
      message: expect.stringMatching(
        /^systemPrompt uses \{\{plan\}\}, which is not a template variable; use \{\{name\}\}, .*\{\{metadata\.<key>\}\}/,
      ),
      details: [{ path: '/systemPrompt', message: '{{plan}} is not a template variable' }],
    });
    const agent = await newAgent({ systemPrompt: 'Plan {{metadata.plan}} for {{name}} ({{phone}}), {{campaign.name}}, {{now}}.' });
    const patched = await api('PATCH', `/agents/${agent.id}`, { firstMessage: 'Hi {{first_name}}' });
    expect(patched.json()).toMatchObject({ code: 'UNKNOWN_TEMPLATE_VARIABLE', details: [{ path: '/firstMessage' }] });
    expect((await api('GET', `/agents/${agent.id}`)).json().firstMessage).toBeNull();
  });

  it('refuses a first message whose variable may be empty without a fallback, and takes it with one', async () => {
    const refused = await api('POST', '/agents', { name: 'Greeter', firstMessage: 'Hi {{name}}, this is {{agent.name}}.' });
    expect(refused.json()).toMatchObject({
      statusCode: 400,
      code: 'TEMPLATE_NEEDS_FALLBACK',
      message: 'firstMessage uses {{name}}, which may be empty for a contact; give it a fallback, such as {{name|there}}.',
      details: [{ path: '/firstMessage', message: '{{name}} may be empty: give it a fallback' }],
    });
    // The system prompt is read by the model alone: a bare variable is fine there.
    const agent = await newAgent({ systemPrompt: 'You talk to {{name}}.', firstMessage: 'Hi {{ name | there }}, this is {{agent.name}}.' });
    expect((await api('GET', `/agents/${agent.id}`)).json().firstMessage).toBe('Hi {{ name | there }}, this is {{agent.name}}.');
    const patched = await api('PATCH', `/agents/${agent.id}`, { firstMessage: 'Your {{metadata.plan}} plan' });
    expect([patched.statusCode, patched.json().details]).toEqual([
      400,
      [{ path: '/firstMessage', message: '{{metadata.plan}} may be empty: give it a fallback' }],
    ]);
  });

  it('refuses custom tools with a built-in or repeated name, parameters that are no object schema, or a URL it may not call', async () => {
    const tryTools = async (customTools: unknown[]) =>
      (await api('POST', '/agents', { name: `Tools ${randomUUID()}`, customTools })).json();
    expect(await tryTools([{ ...LOOKUP_TOOL, name: 'end_call' }])).toMatchObject({
      code: 'INVALID_CUSTOM_TOOL',
      details: [{ path: '/customTools/0/name' }],
    });
    expect(await tryTools([LOOKUP_TOOL, { ...LOOKUP_TOOL, name: 'Lookup_Order' }])).toMatchObject({
      message: 'Custom tool "Lookup_Order": the name is used twice.',
      details: [{ path: '/customTools/1/name' }],
    });
    expect(await tryTools([{ ...LOOKUP_TOOL, parameters: { type: 'string' } }])).toMatchObject({
      details: [{ path: '/customTools/0/parameters' }],
    });
    expect(await tryTools([{ ...LOOKUP_TOOL, parameters: { type: 'object', properties: { a: { type: 'no-such-type' } } } }])).toMatchObject(
      {
        details: [{ path: '/customTools/0/parameters' }],
      },
    );
    expect(await tryTools([{ ...LOOKUP_TOOL, url: 'http://example.com/hook' }])).toMatchObject({
      message: 'Custom tool "lookup_order": url must be https.',
    });
    expect(await tryTools([{ ...LOOKUP_TOOL, url: 'https://10.0.0.5/hook' }])).toMatchObject({
      message: 'Custom tool "lookup_order": url cannot be fetched: 10.0.0.5 is a private address.',
      details: [{ path: '/customTools/0/url' }],
    });
    expect(await tryTools([{ ...LOOKUP_TOOL, url: 'https://[::127.0.0.1]/hook' }])).toMatchObject({
      message: 'Custom tool "lookup_order": url cannot be fetched: ::7f00:1 is a loopback address (IPv4-compatible 127.0.0.1).',
    });
    expect(await tryTools([{ ...LOOKUP_TOOL, url: 'https://localhost/hook' }])).toMatchObject({
      message: 'Custom tool "lookup_order": url cannot be fetched: localhost is this machine (a loopback address).',
    });
    expect(await tryTools([{ ...LOOKUP_TOOL, name: '1bad' }])).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('refuses a model while the service has no model server, and a transfer number that is not a phone number', async () => {
    const llm = await api('POST', '/agents', { name: `LLM ${randomUUID()}`, llm: { model: 'gpt-4o-mini' } });
    expect(llm.statusCode).toBe(400);
    expect(llm.json()).toMatchObject({ code: 'LLM_NOT_CONFIGURED', details: [{ path: '/llm' }] });
    const unknownProvider = await api('POST', '/agents', { name: `LLM ${randomUUID()}`, llm: { provider: 'NOPE', model: 'x' } });
    expect(unknownProvider.json()).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('OPENAI_COMPATIBLE') });
    const transfer = await api('POST', '/agents', { name: `Transfer ${randomUUID()}`, transferNumber: 'call Bob' });
    expect(transfer.json()).toMatchObject({ code: 'INVALID_PHONE_NUMBER', details: [{ path: '/transferNumber' }] });
  });

  it('refuses an end-of-turn detector the service cannot run, and one that does not exist', async () => {
    const smartTurn = await api('POST', '/agents', {
      name: `Turns ${randomUUID()}`,
      stt: { provider: 'DEEPGRAM', endOfTurn: 'SMART_TURN' },
    });
    expect(smartTurn.statusCode).toBe(400);
    expect(smartTurn.json()).toMatchObject({ code: 'SMART_TURN_NOT_CONFIGURED', details: [{ path: '/stt/endOfTurn' }] });
    const unknown = await api('POST', '/agents', { name: `Turns ${randomUUID()}`, stt: { provider: 'DEEPGRAM', endOfTurn: 'GUESS' } });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('WORDS') });
  });

  it('refuses speech-to-speech without a server to run it, with a relay, or with our turn detection and no ears', async () => {
    const refused = await api('POST', '/agents', { name: `S2S ${randomUUID()}`, realtime: { model: 'gpt-realtime' } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'REALTIME_NOT_CONFIGURED', details: [{ path: '/realtime' }] });
    const relay = await api('POST', '/agents', {
      name: `S2S ${randomUUID()}`,
      voicePipeline: 'CONVERSATION_RELAY',
      realtime: { model: 'gpt-realtime' },
    });
    expect(relay.json()).toMatchObject({ code: 'REALTIME_CONFLICT', details: [{ path: '/realtime' }] });
    const deaf = await api('POST', '/agents', {
      name: `S2S ${randomUUID()}`,
      stt: null,
      realtime: { model: 'gpt-realtime', turnDetection: 'pipeline' },
    });
    expect(deaf.json()).toMatchObject({ code: 'REALTIME_CONFLICT', details: [{ path: '/realtime/turnDetection' }] });
    const unknown = await api('POST', '/agents', { name: `S2S ${randomUUID()}`, realtime: { model: 'gpt-realtime', turnDetection: 'us' } });
    expect(unknown.json()).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('server, pipeline') });
    // Null is the staged pipeline: always accepted.
    const staged = await api('POST', '/agents', { name: `S2S ${randomUUID()}`, realtime: null });
    expect(staged.statusCode).toBe(201);
    expect(staged.json().realtime).toBeNull();
  });

  it('updates only the fields given, clears nullable ones with null and stores the language in canonical case', async () => {
    const agent = await newAgent({ description: 'old', voice: 'gmw/en-GB-x-rp', tools: ['end_call'] });
    const response = await api('PATCH', `/agents/${agent.id}`, {
      description: null,
      language: 'pt-br',
      tools: ['transfer_call', 'knowledge_search'],
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      name: agent.name,
      description: null,
      // A new language alone keeps the voice chosen.
      voice: 'gmw/en-GB-x-rp',
      language: 'pt-BR',
      tools: ['transfer_call', 'knowledge_search'],
    });
  });

  it('deletes an agent with 204', async () => {
    const agent = await newAgent();
    const response = await api('DELETE', `/agents/${agent.id}`);
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect((await api('GET', `/agents/${agent.id}`)).statusCode).toBe(404);
    expect((await api('DELETE', `/agents/${agent.id}`)).statusCode).toBe(404);
  });

  it('refuses a duplicate name in the tenant with 409, whatever the case, but not across tenants', async () => {
    await newAgent({ name: 'Front Desk' });
    const again = await api('POST', '/agents', { name: 'FRONT DESK' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({
      code: 'AGENT_NAME_TAKEN',
      message: 'An agent named "FRONT DESK" already exists; choose another name.',
    });
    expect((await api('POST', '/agents', { name: 'Front Desk' }, otherKey)).statusCode).toBe(201);
    const renamed = await api('PATCH', `/agents/${(await newAgent()).id}`, { name: 'front desk' });
    expect(renamed.statusCode).toBe(409);
    expect(renamed.json().code).toBe('AGENT_NAME_TAKEN');
  });

  it('refuses an unknown tool with 400 naming it, and a repeated one', async () => {
    const response = await api('POST', '/agents', { name: 'Toolish', tools: ['end_call', 'launch_rocket'] });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('UNKNOWN_TOOL');
    expect(response.json().message).toMatch(/^"launch_rocket" is not a tool agents can use; choose from end_call, transfer_call, /);
    expect(response.json().details).toEqual([{ path: '/tools/1', message: 'is not a known tool' }]);
    const agent = await newAgent();
    expect((await api('PATCH', `/agents/${agent.id}`, { tools: ['teleport'] })).json().message).toMatch(/^"teleport" is not a tool/);
    expect((await api('POST', '/agents', { name: 'Twice', tools: ['end_call', 'end_call'] })).statusCode).toBe(400);
  });

  it('refuses a language that is not a BCP-47 tag with 400', async () => {
    for (const language of ['english', 'en_US', 'e', 'en-US-', '']) {
      const response = await api('POST', '/agents', { name: `Lang ${language}`, language });
      expect(response.statusCode, language).toBe(400);
      expect(response.json().details[0].path).toBe('/language');
    }
    for (const language of ['en-US', 'es', 'pt-BR', 'zh-Hant-TW', 'es-419']) {
      expect((await api('POST', '/agents', { name: `Lang ok ${language}`, language })).json().language).toBe(language);
    }
  });

  it('refuses unknown body properties, a missing or empty name and knowledge base ids that are not uuids with 400', async () => {
    const unknown = await api('POST', '/agents', { name: 'Extra', prompt: 'x' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().details).toEqual([{ path: '/prompt', message: 'is not an accepted property' }]);
    expect((await api('PATCH', `/agents/${(await newAgent()).id}`, { id: randomUUID() })).statusCode).toBe(400);
    expect((await api('POST', '/agents', {})).json().details[0].path).toBe('/name');
    expect((await api('POST', '/agents', { name: '' })).statusCode).toBe(400);
    expect((await api('POST', '/agents', { name: 'x'.repeat(201) })).statusCode).toBe(400);
    expect((await api('POST', '/agents', { name: 'KB', knowledgeBaseIds: ['kb-1'] })).json().details[0].path).toBe('/knowledgeBaseIds/0');
  });

  it('lists newest first with total, page and limit, and searches by name in any case', async () => {
    const tenant = await signUp(t.app);
    const tenantKey = (await createKey(t.app, tenant.token)).key;
    for (const name of ['Sales West', 'Sales East', 'Support']) await newAgent({ name }, tenantKey);
    const all = (await api('GET', '/agents', undefined, tenantKey)).json();
    expect(all).toMatchObject({ total: 3, page: 1, limit: 25 });
    expect(all.data.map((a: { name: string }) => a.name)).toEqual(['Support', 'Sales East', 'Sales West']);
    const found = (await api('GET', '/agents?search=SALES', undefined, tenantKey)).json();
    expect(found.total).toBe(2);
    const page2 = (await api('GET', '/agents?page=2&limit=2', undefined, tenantKey)).json();
    expect(page2).toMatchObject({ total: 3, page: 2, limit: 2 });
    expect(page2.data.map((a: { name: string }) => a.name)).toEqual(['Sales West']);
    expect((await api('GET', '/agents?search=50%25', undefined, tenantKey)).json().total).toBe(0);
  });

  it('accepts limit 200 and refuses 201 and 0', async () => {
    expect((await api('GET', '/agents?limit=200')).statusCode).toBe(200);
    expect((await api('GET', '/agents?limit=201')).statusCode).toBe(400);
    expect((await api('GET', '/agents?limit=0')).statusCode).toBe(400);
    expect((await api('GET', '/voice-numbers?limit=200')).statusCode).toBe(200);
    expect((await api('GET', '/voice-numbers?limit=201')).statusCode).toBe(400);
  });

  it('answers 409 AGENT_IN_USE while a campaign that has not finished uses the agent', async () => {
    const agent = await newAgent();
    const ctx = tenantCtx(t.runtime, owner.tenantId);
    await expect(agents.deleteAgent(ctx, agent.id, async (_ctx, id) => id === agent.id)).rejects.toMatchObject({
      statusCode: 409,
      code: 'AGENT_IN_USE',
    });
    expect((await api('GET', `/agents/${agent.id}`)).statusCode).toBe(200);
    const number = await newNumber();
    await expect(agents.deleteVoiceNumber(ctx, number.id, async () => true)).rejects.toMatchObject({
      statusCode: 409,
      code: 'VOICE_NUMBER_IN_USE',
    });
    expect((await api('GET', `/voice-numbers/${number.id}`)).statusCode).toBe(200);
  });
});

describe('agent routes that do not exist (seed §4.7)', () => {
  it('answers GET /agents/{id}/executions with 404 naming GET /call-logs?agentId=, whether or not the agent exists', async () => {
    const agent = await newAgent();
    for (const id of [agent.id, randomUUID()]) {
      const response = await api('GET', `/agents/${id}/executions`);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({
        code: 'NOT_IMPLEMENTED',
        message: `Agent executions are not an endpoint; list the agent's calls with GET /api/v1/call-logs?agentId=${id}.`,
      });
    }
  });

  it('answers POST /agents/{id}/stop-calls with 404 naming POST /call-logs/{id}/hangup, whether or not the agent exists', async () => {
    const agent = await newAgent();
    for (const id of [agent.id, randomUUID()]) {
      const response = await api('POST', `/agents/${id}/stop-calls`);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({
        code: 'NOT_IMPLEMENTED',
        message: "There is no bulk stop of an agent's calls; hang up each live call with POST /api/v1/call-logs/{id}/hangup.",
      });
    }
  });
});

describe('voice numbers', () => {
  it('registers a number normalised to E.164, with defaults, and gets it', async () => {
    const response = await api('POST', '/voice-numbers', { phoneNumber: '+1 (415) 555-0100', provider: 'TWILIO' });
    expect(response.statusCode).toBe(201);
    const number = response.json();
    expect(number).toEqual({
      id: expect.any(String),
      tenantId: owner.tenantId,
      phoneNumber: '+14155550100',
      provider: 'TWILIO',
      label: null,
      inboundAgentId: null,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await api('GET', `/voice-numbers/${number.id}`)).json()).toEqual(number);
  });

  it('takes a label and an inbound agent of the tenant, and changes them with PATCH', async () => {
    const agent = await newAgent();
    const number = await newNumber({ label: 'Main line', inboundAgentId: agent.id });
    expect(number).toMatchObject({ label: 'Main line', inboundAgentId: agent.id });
    const second = await newAgent();
    const moved = await api('PATCH', `/voice-numbers/${number.id}`, { inboundAgentId: second.id });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({ label: 'Main line', inboundAgentId: second.id });
    const cleared = await api('PATCH', `/voice-numbers/${number.id}`, { label: null, inboundAgentId: null });
    expect(cleared.json()).toMatchObject({ label: null, inboundAgentId: null, phoneNumber: number.phoneNumber });
  });

  it('keeps the number and provider fixed: PATCH refuses them with 400', async () => {
    const number = await newNumber();
    const response = await api('PATCH', `/voice-numbers/${number.id}`, { phoneNumber: nextPhone() });
    expect(response.statusCode).toBe(400);
    expect(response.json().details).toEqual([{ path: '/phoneNumber', message: 'is not an accepted property' }]);
    expect((await api('PATCH', `/voice-numbers/${number.id}`, { provider: 'TWILIO' })).statusCode).toBe(400);
  });

  it('refuses an invalid number with 400', async () => {
    for (const phoneNumber of ['555-0100', '+1 415 555', 'call me', '+0123456789']) {
      const response = await api('POST', '/voice-numbers', { phoneNumber, provider: 'SIMULATOR' });
      expect(response.statusCode, phoneNumber).toBe(400);
      expect(response.json()).toMatchObject({
        code: 'INVALID_PHONE_NUMBER',
        details: [{ path: '/phoneNumber', message: 'Invalid phone number' }],
      });
    }
  });

  it('refuses a number already registered, by this tenant or another, with the same 409 that names no tenant', async () => {
    const number = await newNumber();
    const mine = await api('POST', '/voice-numbers', { phoneNumber: number.phoneNumber, provider: 'TWILIO' });
    const theirs = await api(
      'POST',
      '/voice-numbers',
      { phoneNumber: number.phoneNumber.replace(/^\+1(\d{3})/, '+1 ($1) '), provider: 'SIMULATOR' },
      otherKey,
    );
    for (const response of [mine, theirs]) {
      expect(response.statusCode).toBe(409);
      expect(response.json().code).toBe('VOICE_NUMBER_TAKEN');
      expect(response.json().message).toBe(
        `${number.phoneNumber} is already registered; a phone number can be registered only once on the platform, so register another number.`,
      );
      expect(response.body).not.toContain(owner.tenantId);
      expect(response.body).not.toContain(number.id);
    }
  });

  it('refuses an unknown provider, a missing field and unknown properties with 400', async () => {
    const provider = await api('POST', '/voice-numbers', { phoneNumber: nextPhone(), provider: 'VONAGE' });
    expect(provider.statusCode).toBe(400);
    expect(provider.json().message).toBe("Field 'provider' must be one of SIMULATOR, TWILIO, TELNYX.");
    expect((await api('POST', '/voice-numbers', { phoneNumber: nextPhone() })).json().details[0].path).toBe('/provider');
    expect((await api('POST', '/voice-numbers', { provider: 'SIMULATOR' })).json().details[0].path).toBe('/phoneNumber');
    const extra = await api('POST', '/voice-numbers', { phoneNumber: nextPhone(), provider: 'SIMULATOR', sid: 'PN123' });
    expect(extra.json().details).toEqual([{ path: '/sid', message: 'is not an accepted property' }]);
  });

  it("refuses another tenant's agent, or no agent, as inbound agent with 404 Agent not found", async () => {
    const theirAgent = await newAgent({}, otherKey);
    for (const inboundAgentId of [theirAgent.id, randomUUID()]) {
      const create = await api('POST', '/voice-numbers', { phoneNumber: nextPhone(), provider: 'SIMULATOR', inboundAgentId });
      expect(create.statusCode).toBe(404);
      expect(create.json().message).toBe('Agent not found.');
    }
    const number = await newNumber();
    const patch = await api('PATCH', `/voice-numbers/${number.id}`, { inboundAgentId: theirAgent.id });
    expect(patch.statusCode).toBe(404);
    expect(patch.json().message).toBe('Agent not found.');
  });

  it('lists numbers newest first with total, page and limit', async () => {
    const tenant = await signUp(t.app);
    const tenantKey = (await createKey(t.app, tenant.token)).key;
    const made = [await newNumber({}, tenantKey), await newNumber({}, tenantKey), await newNumber({}, tenantKey)];
    const page1 = (await api('GET', '/voice-numbers?limit=2', undefined, tenantKey)).json();
    expect(page1).toMatchObject({ total: 3, page: 1, limit: 2 });
    expect(page1.data.map((n: { id: string }) => n.id)).toEqual([made[2]!.id, made[1]!.id]);
  });

  it('deletes a number with 204, freeing it to be registered again', async () => {
    const number = await newNumber();
    expect((await api('DELETE', `/voice-numbers/${number.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/voice-numbers/${number.id}`)).statusCode).toBe(404);
    expect((await api('POST', '/voice-numbers', { phoneNumber: number.phoneNumber, provider: 'SIMULATOR' }, otherKey)).statusCode).toBe(
      201,
    );
  });

  it("clears a number's inbound agent when the agent is deleted", async () => {
    const agent = await newAgent();
    const number = await newNumber({ inboundAgentId: agent.id, label: 'Kept' });
    expect((await api('DELETE', `/agents/${agent.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/voice-numbers/${number.id}`)).json()).toMatchObject({
      inboundAgentId: null,
      label: 'Kept',
      tenantId: owner.tenantId,
    });
  });

  it('finds a number by the dialled number across tenants, for inbound calls', async () => {
    const theirAgent = await newAgent({}, otherKey);
    const number = await newNumber({ inboundAgentId: theirAgent.id }, otherKey);
    const found = await agents.findVoiceNumberByPhone(t.runtime.db, number.phoneNumber.replace(/^\+1(\d{3})/, '+1 $1-'));
    expect(found).toMatchObject({ id: number.id, tenantId: other.tenantId, inboundAgentId: theirAgent.id });
    expect(await agents.findVoiceNumberByPhone(t.runtime.db, '+14155559999')).toBeUndefined();
    expect(await agents.findVoiceNumberByPhone(t.runtime.db, 'not a number')).toBeUndefined();
  });
});

describe('API keys pinned to an agent (contract §2)', () => {
  it("refuses another tenant's agent or an unknown one with 404, and accepts the tenant's own", async () => {
    const theirAgent = await newAgent({}, otherKey);
    for (const agentId of [theirAgent.id, randomUUID()]) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/api-keys',
        headers: bearer(owner.token),
        payload: { name: 'pinned', agentId },
      });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ code: 'NOT_FOUND', message: 'Agent not found.' });
    }
    const mine = await newAgent();
    const created = await createKey(t.app, owner.token, { name: 'pinned', agentId: mine.id });
    expect(created).toMatchObject({ agentId: mine.id, status: 'ACTIVE' });
    expect(await createKey(t.app, owner.token, { name: 'unpinned', agentId: null })).toMatchObject({ agentId: null });
  });
});

describe('profile onboarding', () => {
  it('turns hasFlow on with the first agent and hasIntegration on with the first voice number', async () => {
    const tenant = await signUp(t.app);
    const tenantKey = (await createKey(t.app, tenant.token)).key;
    const onboarding = async () => (await api('GET', '/profile', undefined, tenantKey)).json().data.onboarding;
    expect(await onboarding()).toMatchObject({ hasFlow: false, hasIntegration: false, completed: false });
    await newAgent({}, tenantKey);
    expect(await onboarding()).toMatchObject({ hasFlow: true, hasIntegration: false });
    await newNumber({}, tenantKey);
    expect(await onboarding()).toMatchObject({ hasFlow: true, hasIntegration: true });
  });
});

describe('profiles asked at once', () => {
  it('answers each from its own tenant, with its own user, when several tenants, sessions and keys ask together', async () => {
    const [a, b] = [await signUp(t.app), await signUp(t.app)];
    const [aKey, bKey] = [(await createKey(t.app, a.token)).key, (await createKey(t.app, b.token)).key];
    await newAgent({}, bKey);
    // Asked in the same turn, these share one statement; each answer must still be its own.
    const tokens = [aKey, a.token, bKey, b.token, aKey];
    const answers = await Promise.all(
      tokens.map((token) => t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(token) })),
    );
    expect(
      answers.map((response) => {
        const { tenant, user, onboarding } = response.json().data;
        return [response.statusCode, tenant.id, user?.id ?? null, onboarding.hasFlow];
      }),
    ).toEqual([
      [200, a.tenantId, null, false],
      [200, a.tenantId, a.user.id, false],
      [200, b.tenantId, null, true],
      [200, b.tenantId, b.user.id, true],
      [200, a.tenantId, null, false],
    ]);
  });
});

describe('tenant isolation', () => {
  it("answers 404 for another tenant's agent and voice number on GET, PATCH and DELETE, and leaves them untouched", async () => {
    const agent = await newAgent({ description: 'mine' });
    const number = await newNumber({ label: 'mine', inboundAgentId: agent.id });
    const routes: [Parameters<typeof api>[0], string, unknown?][] = [
      ['GET', `/agents/${agent.id}`],
      ['PATCH', `/agents/${agent.id}`, { description: 'stolen' }],
      ['DELETE', `/agents/${agent.id}`],
      ['GET', `/voice-numbers/${number.id}`],
      ['PATCH', `/voice-numbers/${number.id}`, { label: 'stolen' }],
      ['DELETE', `/voice-numbers/${number.id}`],
    ];
    for (const [method, url, payload] of routes) {
      const response = await api(method, url, payload, otherKey);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().code, `${method} ${url}`).toBe('NOT_FOUND');
    }
    const listedAgents = (await api('GET', '/agents?limit=200', undefined, otherKey)).json().data.map((a: { id: string }) => a.id);
    const listedNumbers = (await api('GET', '/voice-numbers?limit=200', undefined, otherKey)).json().data.map((n: { id: string }) => n.id);
    expect(listedAgents).not.toContain(agent.id);
    expect(listedNumbers).not.toContain(number.id);
    expect((await api('GET', `/agents/${agent.id}`)).json().description).toBe('mine');
    expect((await api('GET', `/voice-numbers/${number.id}`)).json()).toMatchObject({ label: 'mine', inboundAgentId: agent.id });
  });

  it("cannot point its own number at another tenant's agent through the service either", async () => {
    const theirAgent = await newAgent({}, otherKey);
    await expect(agents.requireAgent(tenantCtx(t.runtime, owner.tenantId), theirAgent.id)).rejects.toMatchObject({
      statusCode: 404,
      message: 'Agent not found.',
    });
    expect(await agents.agentExists(tenantCtx(t.runtime, owner.tenantId), theirAgent.id)).toBe(false);
    expect(await agents.agentExists(tenantCtx(t.runtime, other.tenantId), theirAgent.id)).toBe(true);
  });
});
