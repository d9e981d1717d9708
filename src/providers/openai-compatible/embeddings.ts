import { isRetryableStatus, ProviderError, providerFetch } from '../errors.ts';
import { unitVector, type Embedder } from '../types.ts';

export interface OpenAiEmbeddingsOptions {
  /** Base URL up to and including the version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  dimensions: number;
  timeoutMs?: number;
}

const BATCH = 96;

/** An OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM…). */
export function openAiEmbeddings(options: OpenAiEmbeddingsOptions): Embedder {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
  const embedBatch = async (input: string[]): Promise<Float32Array[]> => {
    const response = await providerFetch(
      'Embeddings',
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
        body: JSON.stringify({ model: options.model, input, dimensions: options.dimensions, encoding_format: 'float' }),
      },
      options.timeoutMs ?? 30_000,
    );
    const body = response.json as { data?: { index?: unknown; embedding?: unknown }[]; error?: { message?: unknown } } | undefined;
    if (response.status < 200 || response.status >= 300) {
      const message = typeof body?.error?.message === 'string' ? body.error.message : `HTTP ${response.status}`;
      throw new ProviderError(`Embeddings: ${message}`, { status: response.status, retryable: isRetryableStatus(response.status) });
    }
    const data = [...(body?.data ?? [])].sort((a, b) => Number(a.index) - Number(b.index));
    const vectors = data.map((item) => item.embedding);
    if (
      vectors.length !== input.length ||
      !vectors.every((v) => Array.isArray(v) && v.length === options.dimensions && v.every((x) => typeof x === 'number'))
    ) {
      throw new ProviderError(`Embeddings: the answer does not hold ${input.length} vectors of ${options.dimensions} numbers.`, {
        status: response.status,
        retryable: false,
      });
    }
    return (vectors as number[][]).map(unitVector);
  };
  return {
    model: `${options.model}:${options.dimensions}`,
    dimensions: options.dimensions,
    async embed(texts) {
      const vectors: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += BATCH) vectors.push(...(await embedBatch(texts.slice(i, i + BATCH))));
      return vectors;
    },
  };
}
