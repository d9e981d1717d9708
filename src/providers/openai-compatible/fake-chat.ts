// A local OpenAI-compatible `POST /v1/chat/completions` that streams the way OpenAI does: server-sent
// events of `chat.completion.chunk` objects, tool-call arguments in pieces, the usage in a last chunk
// with no choices (when asked for), then `data: [DONE]`. Each test scripts its replies in order.
import { createServer, type ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, sendJson } from '../fake-server.ts';

export type FakeChatReply =
  | {
      kind: 'stream';
      /** Text deltas, one chunk each. */
      text?: string[];
      /** Each call's arguments in the pieces they are sent in. */
      toolCalls?: { id: string; name: string; arguments: string[] }[];
      finishReason?: string;
      /** null: no usage chunk, as from a server that ignores `stream_options`. */
      usage?: { prompt_tokens: number; completion_tokens: number } | null;
      /** How long the model thinks before its first words (a hosted model's time to first token); none by default. */
      firstTokenMs?: number;
    }
  /** An HTTP error with OpenAI's error body. */
  | { kind: 'error'; status: number; message: string; type: string; code: string | null }
  /** Sends these text chunks (none: not even the headers), then stays silent until the client leaves. */
  | { kind: 'stall'; text?: string[] }
  /** Sends these text chunks, then an error event in the stream, as OpenAI does when it fails mid-reply. */
  | { kind: 'error-mid-stream'; text: string[]; message: string }
  /** Sends these text chunks, then drops the connection (`reset`) or ends the response early without `[DONE]` (`end`). */
  | { kind: 'break'; text: string[]; how: 'reset' | 'end' }
  /** One `chat.completion` (not streamed), as OpenAI answers a request with `response_format` and no `stream`. */
  | { kind: 'completion'; content: string; usage: { prompt_tokens: number; completion_tokens: number } };

export interface ChatCompletionsRequest {
  authorization: string | undefined;
  body: {
    model: string;
    messages: unknown[];
    tools?: unknown[];
    temperature?: number;
    max_tokens?: number;
    stream?: boolean;
    stream_options?: { include_usage?: boolean };
    response_format?: { type: string; json_schema?: { name: string; strict?: boolean; schema: object } };
  };
  /** Resolves when the client's connection is gone (after the reply, or when it gave up). */
  closed: Promise<void>;
}

export async function startFakeChat() {
  const replies: FakeChatReply[] = [];
  const received: ChatCompletionsRequest[] = [];
  let answerOf: ((body: ChatCompletionsRequest['body']) => FakeChatReply | undefined) | undefined;
  const server = createServer(async (req, res) => {
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return sendJson(res, 404, { error: { message: 'Unknown path' } });
    const body = JSON.parse(text) as ChatCompletionsRequest['body'];
    received.push({ authorization: req.headers.authorization, body, closed });
    const reply = answerOf?.(body) ?? replies.shift();
    if (!reply) return sendJson(res, 500, { error: { message: 'The fake has no reply scripted.', type: 'server_error', code: null } });
    if (reply.kind === 'error')
      return sendJson(res, reply.status, { error: { message: reply.message, type: reply.type, param: null, code: reply.code } });
    if (reply.kind === 'stall' && !reply.text?.length) return; // no headers, no body
    if (reply.kind === 'completion') {
      const message = { role: 'assistant', content: reply.content, refusal: null };
      const choices = [{ index: 0, message, finish_reason: 'stop', logprobs: null }];
      const usage = { ...reply.usage, total_tokens: reply.usage.prompt_tokens + reply.usage.completion_tokens };
      return sendJson(res, 200, { id: 'chatcmpl-fake', object: 'chat.completion', created: 0, model: body.model, choices, usage });
    }

    const sse = openStream(res, body.model, body.stream_options?.include_usage === true);
    sse.chunk({ role: 'assistant', content: '' });
    if (reply.kind === 'stall') {
      for (const piece of reply.text ?? []) sse.chunk({ content: piece });
      return;
    }
    if (reply.kind === 'error-mid-stream') {
      for (const piece of reply.text) sse.chunk({ content: piece });
      sse.error(reply.message);
      return sse.end();
    }
    if (reply.kind === 'break') {
      for (const piece of reply.text) sse.chunk({ content: piece });
      // Once what came before is on the wire, so the client sees a stream cut short, not a refused request.
      if (reply.how === 'end') res.end();
      else res.write('', () => res.socket?.destroy());
      return;
    }
    if (reply.firstTokenMs) await new Promise((resolve) => setTimeout(resolve, reply.firstTokenMs));
    for (const piece of reply.text ?? []) sse.chunk({ content: piece });
    for (const [index, call] of (reply.toolCalls ?? []).entries()) {
      sse.chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
      for (const piece of call.arguments) sse.chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
    }
    sse.chunk({}, reply.finishReason ?? (reply.toolCalls?.length ? 'tool_calls' : 'stop'));
    if (reply.usage !== null) sse.usage(reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 });
    sse.end();
  });
  const listening = await listenOnLoopback(server);
  return {
    ...listening,
    received,
    /** Queues the replies to the next requests, in order. */
    script(...next: FakeChatReply[]) {
      replies.push(...next);
    },
    /**
     * Answers each request `answer` has a reply for by what it asks, whatever the order of requests
     * made side by side (undefined: the next scripted reply); `answerBy(undefined)` stops it.
     */
    answerBy(answer: typeof answerOf) {
      answerOf = answer;
    },
    /** Drops the replies no request took (a test that ended early leaves none for the next), and returns them. */
    forget(): FakeChatReply[] {
      return replies.splice(0);
    },
  };
}

function openStream(res: ServerResponse, model: string, includeUsage: boolean) {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const created = Math.floor(Date.now() / 1000);
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake' };
  const send = (chunk: object) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  return {
    chunk(delta: object, finishReason: string | null = null) {
      send({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
        ...(includeUsage ? { usage: null } : {}),
      });
    },
    usage(usage: { prompt_tokens: number; completion_tokens: number }) {
      if (!includeUsage) return;
      send({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
    },
    error(message: string) {
      send({ error: { message, type: 'server_error', param: null, code: null } });
    },
    end() {
      res.end('data: [DONE]\n\n');
    },
  };
}
