import { performance } from 'node:perf_hooks';
import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { storableJsonText, storableText } from '../../platform/input.ts';
import { ProviderError } from '../errors.ts';
import { cancelled, sdkClient, watchRequest, type SdkEndpoint } from './sdk.ts';
import type { ChatEvent, ChatFinishReason, ChatModel, ChatRequest, ChatToolCall, StructuredAnswer, StructuredRequest } from '../types.ts';

const LABEL = 'LLM';

/**
 * Where the model is served. `timeoutMs` is the longest the server may stay silent: before its
 * answer starts and between two chunks. A stream has no total deadline (a long reply is fine), but
 * a stalled one must not hold a call.
 */
export type ChatModelOptions = SdkEndpoint;

/**
 * An OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM…)
 * streamed through the vendor's SDK, which parses the server-sent events and the error bodies.
 */
export function createChatModel(options: ChatModelOptions): ChatModel {
  const client = sdkClient(options);
  return {
    stream: (request, streamOptions) => streamReply(client, options.timeoutMs, request, streamOptions?.signal),
    extract: (request) => extractObject(client, options.timeoutMs, request),
  };
}

/** One JSON object that follows the request's schema (`response_format: json_schema`, strict), with the tokens it cost. */
async function extractObject(client: OpenAI, timeoutMs: number, request: StructuredRequest): Promise<StructuredAnswer> {
  const watch = watchRequest(LABEL, timeoutMs, undefined);
  try {
    const completion = await watch.waitForServer(
      client.chat.completions.create(
        {
          model: request.model,
          temperature: 0,
          messages: [
            { role: 'system', content: request.system },
            { role: 'user', content: request.user },
          ],
          response_format: {
            type: 'json_schema',
            json_schema: { name: request.schemaName, strict: true, schema: request.schema as Record<string, unknown> },
          },
        },
        { signal: watch.signal },
      ),
    );
    const content = completion.choices[0]?.message?.content;
    if (typeof content !== 'string') throw new ProviderError('LLM: the answer has no message content.', { retryable: false });
    let answer: unknown;
    try {
      answer = JSON.parse(storableJsonText(content));
    } catch {
      answer = undefined;
    }
    if (answer === null || typeof answer !== 'object' || Array.isArray(answer))
      throw new ProviderError('LLM: the answer is not the JSON object asked for.', { retryable: false });
    const usage = completion.usage
      ? { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens }
      : null;
    return { answer: answer as Record<string, unknown>, usage };
  } finally {
    watch.end();
  }
}

async function* streamReply(
  client: OpenAI,
  timeoutMs: number,
  request: ChatRequest,
  callerSignal: AbortSignal | undefined,
): AsyncGenerator<ChatEvent> {
  if (callerSignal?.aborted) throw cancelled(LABEL);
  const watch = watchRequest(LABEL, timeoutMs, callerSignal);
  const startedAt = performance.now();
  let chunks: AsyncIterator<ChatCompletionChunk> | undefined;
  let readToTheEnd = false;
  try {
    const stream = await watch.waitForServer(client.chat.completions.create(wireRequest(request), { signal: watch.signal }));
    const reading = stream[Symbol.asyncIterator]();
    chunks = reading;

    const toolCalls = new Map<number, { id?: string; name?: string; arguments: string }>();
    let finishReason: ChatFinishReason | undefined;
    let usage: { inputTokens: number; outputTokens: number } | null = null;
    let firstTokenMs: number | undefined;
    for (;;) {
      const next = await watch.waitForServer(reading.next());
      // The SDK ends a stream quietly when its request is aborted; say why it ended.
      const stopped = watch.stopped();
      if (stopped) throw stopped;
      if (next.done) {
        readToTheEnd = true;
        break;
      }
      const chunk = next.value;
      if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
      const choice = chunk.choices[0];
      if (!choice) continue;
      const delta = choice.delta;
      if ((delta?.content || delta?.tool_calls?.length) && firstTokenMs === undefined) firstTokenMs = performance.now() - startedAt;
      // Each delta on its own: servers send text decoded from UTF-8, which never splits a surrogate pair.
      if (delta?.content) yield { type: 'text', delta: storableText(delta.content) };
      for (const piece of delta?.tool_calls ?? []) {
        const call = toolCalls.get(piece.index) ?? { arguments: '' };
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.name = piece.function.name;
        if (piece.function?.arguments) call.arguments += piece.function.arguments;
        toolCalls.set(piece.index, call);
      }
      if (choice.finish_reason) {
        finishReason = normalisedFinishReason(choice.finish_reason);
        for (const call of completedToolCalls(toolCalls)) yield { type: 'tool_call', ...call };
        toolCalls.clear();
      }
    }
    if (finishReason === undefined) throw new ProviderError('LLM: the stream ended before the reply was complete.', { retryable: true });
    yield { type: 'done', finishReason, usage, ...(firstTokenMs === undefined ? {} : { firstTokenMs: Math.round(firstTokenMs) }) };
  } finally {
    watch.end();
    // A consumer that stops early (barge-in) closes the connection, so the server stops generating.
    // A stream read to its end has nothing to stop: its connection goes back to the pool as it is.
    if (!readToTheEnd) {
      if (chunks) await chunks.return?.().catch(() => undefined);
      watch.abort();
    }
  }
}

/**
 * `max_tokens` rather than `max_completion_tokens`: every OpenAI-compatible server (vLLM, Ollama,
 * llama.cpp, LiteLLM, Groq, Azure) accepts it, and OpenAI still does for its chat models; only
 * OpenAI's reasoning models require the newer name, and those are too slow for a live call.
 */
function wireRequest(request: ChatRequest): ChatCompletionCreateParamsStreaming {
  return {
    model: request.model,
    messages: request.messages.map(wireMessage),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((tool) => ({
            type: 'function' as const,
            function: { name: tool.name, description: tool.description, parameters: tool.parameters as Record<string, unknown> },
          })),
        }
      : {}),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
    stream: true,
    stream_options: { include_usage: true },
  };
}

function wireMessage(message: ChatRequest['messages'][number]): ChatCompletionMessageParam {
  switch (message.role) {
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls?.length
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
    default:
      return { role: message.role, content: message.content };
  }
}

function completedToolCalls(calls: Map<number, { id?: string; name?: string; arguments: string }>): ChatToolCall[] {
  return [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => {
      // Without its id the result cannot be sent back; without its name it cannot be run.
      if (!call.id || !call.name) throw new ProviderError('LLM: the reply holds a tool call without its id or name.', { retryable: false });
      return { id: call.id, name: call.name, arguments: storableJsonText(call.arguments) };
    });
}

function normalisedFinishReason(reason: string): ChatFinishReason {
  if (reason === 'function_call') return 'tool_calls';
  return reason === 'stop' || reason === 'length' || reason === 'tool_calls' || reason === 'content_filter' ? reason : 'other';
}
