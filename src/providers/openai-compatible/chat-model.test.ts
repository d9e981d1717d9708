import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../errors.ts';
import type { ChatEvent, ChatModel, ChatRequest } from '../types.ts';
import { createChatModel } from './chat-model.ts';
import { startFakeChat } from './fake-chat.ts';

// The conversation engine's language model: streamed text and tool calls through the `openai` SDK,
// against a local fake that speaks OpenAI's server-sent events and records what it was sent.
let fake: Awaited<ReturnType<typeof startFakeChat>>;
let model: ChatModel;
const TIMEOUT_MS = 400;

beforeAll(async () => {
  fake = await startFakeChat();
  model = createChatModel({ baseUrl: `${fake.url}/v1`, apiKey: 'sk-test-key', timeoutMs: TIMEOUT_MS });
});
afterAll(async () => {
  await fake?.close();
});

const hello: ChatRequest = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] };

async function collect(events: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const seen: ChatEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

async function failureOf(events: AsyncIterable<ChatEvent>): Promise<{ error: ProviderError; before: ChatEvent[] }> {
  const before: ChatEvent[] = [];
  try {
    for await (const event of events) before.push(event);
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return { error: error as ProviderError, before };
  }
  throw new Error(`the stream ended without an error after ${JSON.stringify(before)}`);
}

describe('a streaming OpenAI-compatible chat model', () => {
  it('streams the text as several deltas in order, then done with the server’s usage and the first token’s latency', async () => {
    fake.script({ kind: 'stream', text: ['Good ', 'morning', ', how can I help?'], usage: { prompt_tokens: 21, completion_tokens: 7 } });
    const events = await collect(model.stream(hello));
    expect(events.slice(0, 3)).toEqual([
      { type: 'text', delta: 'Good ' },
      { type: 'text', delta: 'morning' },
      { type: 'text', delta: ', how can I help?' },
    ]);
    expect(events).toHaveLength(4);
    expect(events[3]).toMatchObject({ type: 'done', finishReason: 'stop', usage: { inputTokens: 21, outputTokens: 7 } });
    const done = events[3] as Extract<ChatEvent, { type: 'done' }>;
    expect(done.firstTokenMs).toBeGreaterThanOrEqual(0);
    expect(done.firstTokenMs).toBeLessThan(TIMEOUT_MS);
  });

  it('reports no usage (null, not an estimate) when the server sends no usage chunk', async () => {
    fake.script({ kind: 'stream', text: ['Hi'], usage: null });
    const events = await collect(model.stream(hello));
    expect(events.at(-1)).toMatchObject({ type: 'done', finishReason: 'stop', usage: null });
  });

  it('assembles tool calls from their pieces, by index, with id, name and raw arguments', async () => {
    fake.script({
      kind: 'stream',
      text: ['Let me check.'],
      toolCalls: [
        { id: 'call_1', name: 'lookup_order', arguments: ['{"order', '_id": "A-', '42"}'] },
        { id: 'call_2', name: 'transfer_call', arguments: ['{"department":', ' "billing"}'] },
      ],
      usage: { prompt_tokens: 80, completion_tokens: 30 },
    });
    const events = await collect(model.stream(hello));
    expect(events).toEqual([
      { type: 'text', delta: 'Let me check.' },
      { type: 'tool_call', id: 'call_1', name: 'lookup_order', arguments: '{"order_id": "A-42"}' },
      { type: 'tool_call', id: 'call_2', name: 'transfer_call', arguments: '{"department": "billing"}' },
      expect.objectContaining({ type: 'done', finishReason: 'tool_calls', usage: { inputTokens: 80, outputTokens: 30 } }),
    ]);
  });

  it('sends the model, the messages with tool calls and results, the tools, temperature, max_tokens, stream_options and the bearer key', async () => {
    fake.script({ kind: 'stream', text: ['Your order ships tomorrow.'] });
    const parameters = { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] };
    await collect(
      model.stream({
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are a courteous agent.' },
          { role: 'user', content: 'Where is order A-42?' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"A-42"}' }] },
          { role: 'tool', toolCallId: 'call_1', content: '{"ships":"tomorrow"}' },
        ],
        tools: [{ name: 'lookup_order', description: 'Finds an order by its id.', parameters }],
        temperature: 0.3,
        maxTokens: 150,
      }),
    );
    const request = fake.received.at(-1)!;
    expect(request.authorization).toBe('Bearer sk-test-key');
    expect(request.body).toMatchObject({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are a courteous agent.' },
        { role: 'user', content: 'Where is order A-42?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"A-42"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"ships":"tomorrow"}' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup_order', description: 'Finds an order by its id.', parameters } }],
      temperature: 0.3,
      max_tokens: 150,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(request.body).not.toHaveProperty('max_completion_tokens');
  });

  it('sends no key it was not given, and no tools, temperature or max_tokens it was not asked for', async () => {
    fake.script({ kind: 'stream', text: ['Hi'] });
    await collect(createChatModel({ baseUrl: `${fake.url}/v1`, timeoutMs: TIMEOUT_MS }).stream(hello));
    const request = fake.received.at(-1)!;
    expect(request.authorization).toBe('Bearer none');
    expect(Object.keys(request.body).sort()).toEqual(['messages', 'model', 'stream', 'stream_options']);
  });

  it('turns a 401 into a final ProviderError with the server’s message, never the URL or the key', async () => {
    fake.script({
      kind: 'error',
      status: 401,
      message: 'Incorrect API key provided.',
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    });
    const { error } = await failureOf(model.stream(hello));
    expect(error).toMatchObject({ message: 'LLM: Incorrect API key provided.', status: 401, retryable: false, code: 'invalid_api_key' });
    expect(error.message).not.toContain(fake.url);
    expect(error.message).not.toContain('sk-test-key');
  });

  it('turns a 500 and a 429 into retryable ProviderErrors', async () => {
    fake.script(
      { kind: 'error', status: 500, message: 'The server had an error while processing your request.', type: 'server_error', code: null },
      { kind: 'error', status: 429, message: 'Rate limit reached for gpt-4o-mini.', type: 'requests', code: 'rate_limit_exceeded' },
    );
    expect((await failureOf(model.stream(hello))).error).toMatchObject({
      message: 'LLM: The server had an error while processing your request.',
      status: 500,
      retryable: true,
    });
    expect((await failureOf(model.stream(hello))).error).toMatchObject({
      message: 'LLM: Rate limit reached for gpt-4o-mini.',
      status: 429,
      retryable: true,
      code: 'rate_limit_exceeded',
    });
  });

  it('times out, retryably, when the server never answers, within the deadline', async () => {
    fake.script({ kind: 'stall' });
    const startedAt = performance.now();
    const { error } = await failureOf(model.stream(hello));
    const elapsed = performance.now() - startedAt;
    expect(error).toMatchObject({ message: `LLM: no answer within ${TIMEOUT_MS} ms`, retryable: true });
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 1_000);
    await fake.received.at(-1)!.closed;
  });

  it('times out, retryably, when the stream falls silent mid-reply, keeping what came before', async () => {
    fake.script({ kind: 'stall', text: ['Let me ', 'see'] });
    const startedAt = performance.now();
    const { error, before } = await failureOf(model.stream(hello));
    const elapsed = performance.now() - startedAt;
    expect(before).toEqual([
      { type: 'text', delta: 'Let me ' },
      { type: 'text', delta: 'see' },
    ]);
    expect(error).toMatchObject({ message: `LLM: no answer within ${TIMEOUT_MS} ms`, retryable: true });
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 1_000);
    await fake.received.at(-1)!.closed;
  });

  it('stops the stream and closes the connection when the caller aborts', async () => {
    fake.script({ kind: 'stall', text: ['Sure, ', 'I can'] });
    const controller = new AbortController();
    const seen: ChatEvent[] = [];
    const failure = await (async () => {
      for await (const event of model.stream(hello, { signal: controller.signal })) {
        seen.push(event);
        controller.abort();
      }
    })().catch((error: unknown) => error);
    expect(seen).toEqual([{ type: 'text', delta: 'Sure, ' }]);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure).toMatchObject({ message: 'LLM: the request was cancelled.', retryable: false });
    await fake.received.at(-1)!.closed;
  });

  it('closes the connection when the consumer stops reading early (barge-in)', async () => {
    fake.script({ kind: 'stall', text: ['One. ', 'Two. '] });
    for await (const event of model.stream(hello)) {
      expect(event).toEqual({ type: 'text', delta: 'One. ' });
      break;
    }
    await fake.received.at(-1)!.closed;
  });

  it('refuses to start when the signal is already aborted, sending nothing', async () => {
    const before = fake.received.length;
    const { error } = await failureOf(model.stream(hello, { signal: AbortSignal.abort() }));
    expect(error).toMatchObject({ message: 'LLM: the request was cancelled.', retryable: false });
    expect(fake.received).toHaveLength(before);
  });

  it('turns a stream that breaks off mid-reply into a retryable ProviderError', async () => {
    fake.script({ kind: 'break', text: ['Your balance ', 'is'], how: 'reset' }, { kind: 'break', text: ['Your balance'], how: 'end' });
    const reset = await failureOf(model.stream(hello));
    expect(reset.before).toEqual([
      { type: 'text', delta: 'Your balance ' },
      { type: 'text', delta: 'is' },
    ]);
    expect(reset.error).toMatchObject({ retryable: true, message: expect.stringMatching(/^LLM: the stream broke off: \S/) });
    expect(reset.error.message).toMatch(/^LLM: the stream broke off: /);

    const ended = await failureOf(model.stream(hello));
    expect(ended.error).toMatchObject({ message: 'LLM: the stream ended before the reply was complete.', retryable: true });
    expect(ended.before.some((event) => event.type === 'done')).toBe(false);
  });

  it('turns an error the server sends inside the stream into a retryable ProviderError with its message', async () => {
    fake.script({ kind: 'error-mid-stream', text: ['Let me '], message: 'The server had an error processing your request.' });
    const { error, before } = await failureOf(model.stream(hello));
    expect(before).toEqual([{ type: 'text', delta: 'Let me ' }]);
    expect(error).toMatchObject({ message: 'LLM: The server had an error processing your request.', retryable: true });
  });

  it('reports a refused connection as retryable without the URL', async () => {
    const gone = await startFakeChat();
    await gone.close();
    const { error } = await failureOf(createChatModel({ baseUrl: `${gone.url}/v1/secret-path`, timeoutMs: TIMEOUT_MS }).stream(hello));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/^LLM: request failed: /);
    expect(error.message).not.toContain('secret-path');
  });
});
