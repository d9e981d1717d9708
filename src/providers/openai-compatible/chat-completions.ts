import { ProviderError, providerFetch } from '../errors.ts';
import type { StructuredExtractor } from '../types.ts';

/**
 * An OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM…)
 * asked for one JSON object that follows a JSON schema (`response_format: json_schema`).
 */
export interface ChatCompletionsOptions {
  /** Base URL up to and including the version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs?: number;
}

export function createChatCompletions(options: ChatCompletionsOptions): StructuredExtractor {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  return {
    async extract(request) {
      const response = await providerFetch(
        'LLM',
        url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify({
            model: options.model,
            temperature: 0,
            messages: [
              { role: 'system', content: request.system },
              { role: 'user', content: request.user },
            ],
            response_format: { type: 'json_schema', json_schema: { name: request.schemaName, strict: true, schema: request.schema } },
          }),
        },
        options.timeoutMs ?? 30_000,
      );
      const body = response.json as { choices?: { message?: { content?: unknown } }[]; error?: { message?: unknown } } | null;
      if (response.status < 200 || response.status >= 300) {
        const message = typeof body?.error?.message === 'string' ? body.error.message : `HTTP ${response.status}`;
        throw new ProviderError(`LLM: ${message}`, {
          status: response.status,
          retryable: response.status === 429 || response.status >= 500,
        });
      }
      const content = body?.choices?.[0]?.message?.content;
      if (typeof content !== 'string')
        throw new ProviderError('LLM: the answer has no message content.', { status: response.status, retryable: false });
      try {
        const parsed: unknown = JSON.parse(content);
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        return parsed as Record<string, unknown>;
      } catch {
        throw new ProviderError('LLM: the answer is not the JSON object asked for.', { status: response.status, retryable: false });
      }
    },
  };
}
