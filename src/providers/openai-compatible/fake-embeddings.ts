// A local OpenAI-compatible `/v1/embeddings` endpoint: the request shape OpenAI documents, and
// deterministic vectors (words hashed into buckets), so texts that share words are near.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { listenOnLoopback, readBody, sendJson } from '../fake-server.ts';

export interface EmbeddingsRequest {
  authorization: string | undefined;
  body: { model: string; input: string[]; dimensions: number; encoding_format?: string };
}

function vectorOf(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) vector[createHash('sha1').update(word).digest()[0]! % dimensions]! += 1;
  return vector;
}

/** `failWith` answers every request with that status; `answerDimensions` answers vectors of another length. */
export async function startFakeEmbeddings(options: { failWith?: number; answerDimensions?: number } = {}) {
  const received: EmbeddingsRequest[] = [];
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as EmbeddingsRequest['body'];
    received.push({ authorization: req.headers.authorization, body });
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') return sendJson(res, 404, { error: { message: 'Unknown path' } });
    if (options.failWith) return sendJson(res, options.failWith, { error: { message: 'The model is overloaded.', type: 'server_error' } });
    // Answered out of order on purpose: clients must place each vector by its index.
    const data = body.input
      .map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text, options.answerDimensions ?? body.dimensions) }))
      .reverse();
    sendJson(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } });
  });
  const listening = await listenOnLoopback(server);
  return { ...listening, received };
}
