import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// Issue 40, item 5: an agent's backup takes over mid-conversation when its model fails or stalls,
// for the rest of the conversation, and the transcript and the bill say so. The models are a local
// OpenAI-compatible server speaking the real streaming wire format; the test asserts which model
// each request named.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;
const STALL_MS = 500;

beforeAll(async () => {
  chat = await startFakeChat();
  t = await startTestApp({
    clock,
    env: {
      LLM_API_URL: `${chat.url}/v1`,
      LLM_MODEL: 'house-model',
      LLM_TIMEOUT_MS: '10000',
      VOICE_FAILOVER_STALL_MS: String(STALL_MS),
      RATE_LLM_MODELS: '{"main-model": {"input": "0.5", "output": "1.5"}, "spare-model": {"input": "0.1", "output": "0.2"}}',
    },
  });
});
afterAll(async () => {
  await t.close();
  await chat.close();
});

async function tenant() {
  const owner = await signUp(t.app);
  return apiAs(t.app, (await createKey(t.app, owner.token)).key);
}

const BACKED = { name: 'Front desk', firstMessage: 'Hello!', llm: { model: 'main-model' }, backup: { llm: { model: 'spare-model' } } };

/** A test chat of a new agent with a backup model; its id and the tenant's api. */
async function chatWithBackup() {
  const api = await tenant();
  const agent = (await api('POST', '/agents', BACKED)).json();
  expect(agent.backup).toEqual({ llm: { provider: 'OPENAI_COMPATIBLE', model: 'spare-model' }, stt: null, tts: null });
  const opened = await api('POST', '/test-chats', { agentId: agent.id });
  expect(opened.statusCode).toBe(201);
  return { api, chatId: opened.json().id as string };
}

const modelsAskedSince = (sent: number) => chat.received.slice(sent).map((request) => request.body.model);

describe("an agent's backup model", () => {
  it('answers when the model fails, and every reply after; the transcript names both, the bill prices each at its rates', async () => {
    const { api, chatId } = await chatWithBackup();
    chat.script(
      { kind: 'error', status: 503, message: 'The server is overloaded.', type: 'server_error', code: null },
      { kind: 'stream', text: ['We open at nine.'], usage: { prompt_tokens: 100, completion_tokens: 10 } },
      { kind: 'stream', text: ['Yes, on Saturdays too.'], usage: { prompt_tokens: 200, completion_tokens: 20 } },
    );
    const sent = chat.received.length;
    const first = (await api('POST', `/test-chats/${chatId}/messages`, { text: 'When do you open?' })).json();
    expect(first.status).toBe('OPEN');
    expect(first.transcript.at(-1)).toMatchObject({
      role: 'agent',
      text: 'We open at nine.',
      by: 'model:spare-model',
      failover: { component: 'llm', from: 'model:main-model', to: 'model:spare-model', reason: expect.stringContaining('overloaded') },
    });
    const second = (await api('POST', `/test-chats/${chatId}/messages`, { text: 'Saturdays?' })).json();
    expect(second.transcript.at(-1)).toMatchObject({ text: 'Yes, on Saturdays too.', by: 'model:spare-model' });
    expect(second.transcript.at(-1).failover).toBeUndefined();
    // The failed request, the backup's answer to the same words, then the backup alone.
    expect(modelsAskedSince(sent)).toEqual(['main-model', 'spare-model', 'spare-model']);
    expect(chat.received.at(-2)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open?' });
    // 300 input and 30 output tokens, all the backup's: 0.1 and 0.2 per 1,000, none at the main model's rates.
    expect(second.usage).toMatchObject({
      llmInputTokens: 300,
      llmOutputTokens: 30,
      backup: { llmInputTokens: 300, llmOutputTokens: 30, llmModel: 'spare-model', llmProvider: 'OPENAI_COMPATIBLE' },
    });
    expect(second.cost).toMatchObject({ llm: '0.0360', total: '0.0360' });
  });

  it('answers when the model says nothing for the stall time, and the stalled request is abandoned', async () => {
    const { api, chatId } = await chatWithBackup();
    chat.script(
      { kind: 'stall' },
      { kind: 'stream', text: ['Sorry for the wait: nine.'], usage: { prompt_tokens: 50, completion_tokens: 5 } },
    );
    const sent = chat.received.length;
    const replied = (await api('POST', `/test-chats/${chatId}/messages`, { text: 'When do you open?' })).json();
    expect(replied.transcript.at(-1)).toMatchObject({
      by: 'model:spare-model',
      failover: { component: 'llm', reason: `The model said nothing for ${STALL_MS} ms.` },
    });
    expect(modelsAskedSince(sent)).toEqual(['main-model', 'spare-model']);
    // The client gave the stalled request up: its connection is closed.
    await chat.received[sent]!.closed;
  });

  it('does not take over a reply the model had begun: the caller heard it, so the call ends as without a backup', async () => {
    const { api, chatId } = await chatWithBackup();
    chat.script({ kind: 'error-mid-stream', text: ['We open '], message: 'The model crashed.' });
    const sent = chat.received.length;
    const replied = (await api('POST', `/test-chats/${chatId}/messages`, { text: 'When do you open?' })).json();
    expect(replied).toMatchObject({ status: 'ENDED', endReason: 'llm_error' });
    expect(replied.transcript.at(-1)).toMatchObject({ by: 'fallback' });
    expect(modelsAskedSince(sent)).toEqual(['main-model']);
  });

  it('ends the call as without a backup when the backup fails too', async () => {
    const { api, chatId } = await chatWithBackup();
    const down = { kind: 'error', status: 500, message: 'Down.', type: 'server_error', code: null } as const;
    chat.script(down, down);
    const replied = (await api('POST', `/test-chats/${chatId}/messages`, { text: 'When do you open?' })).json();
    expect(replied).toMatchObject({ status: 'ENDED', endReason: 'llm_error' });
    expect(replied.transcript.at(-1)).toMatchObject({ by: 'fallback' });
  });

  it('is refused when it is the agent’s own model, and is kept, changed and cleared like any field', async () => {
    const api = await tenant();
    const same = await api('POST', '/agents', { ...BACKED, backup: { llm: { model: 'main-model' } } });
    expect(same.statusCode).toBe(400);
    expect(same.json()).toMatchObject({
      code: 'BACKUP_CONFLICT',
      message: "The backup llm is the agent's own model: name another.",
      details: [{ path: '/backup/llm' }],
    });
    // The service's model is the agent's own when it names none.
    const house = await api('POST', '/agents', { name: 'House', backup: { llm: { model: 'house-model' } } });
    expect(house.json()).toMatchObject({ code: 'BACKUP_CONFLICT' });
    const agent = (await api('POST', '/agents', { name: 'Plain' })).json();
    expect(agent.backup).toBeNull();
    const patched = await api('PATCH', `/agents/${agent.id}`, { backup: { llm: { model: 'spare-model', maxTokens: 100 } } });
    expect(patched.json().backup).toEqual({
      llm: { provider: 'OPENAI_COMPATIBLE', model: 'spare-model', maxTokens: 100 },
      stt: null,
      tts: null,
    });
    expect((await api('GET', `/agents/${agent.id}`)).json().backup.llm.model).toBe('spare-model');
    expect((await api('PATCH', `/agents/${agent.id}`, { backup: null })).json().backup).toBeNull();
    const unknown = await api('PATCH', `/agents/${agent.id}`, { backup: { model: 'spare-model' } });
    expect(unknown.statusCode).toBe(400);
  });
});
