import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../../jobs.ts';
import { openAiEmbeddings } from './embeddings.ts';
import { ProviderError } from '../errors.ts';
import { startFakeEmbeddings } from './fake-embeddings.ts';
import { createKey, signUp, startTestApp, until, type TestApp } from '../../../test/harness.ts';
import { apiAs } from '../../../test/voice-fixtures.ts';

// Issue 7: embeddings behind a small interface; EMBEDDINGS_API_URL selects an OpenAI-compatible
// endpoint instead of the offline model. A local fake speaks the wire format and records requests.
let fake: Awaited<ReturnType<typeof startFakeEmbeddings>>;
let t: TestApp;

beforeAll(async () => {
  fake = await startFakeEmbeddings();
  t = await startTestApp({
    env: {
      EMBEDDINGS_API_URL: `${fake.url}/v1`,
      EMBEDDINGS_API_KEY: 'sk-test',
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
      EMBEDDINGS_DIMENSIONS: '64',
    },
  });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('an OpenAI-compatible embeddings endpoint', () => {
  it('embeds the chunks and the query there, and retrieval works on its vectors', async () => {
    expect(t.runtime.knowledge.embedder).toMatchObject({ model: 'text-embedding-3-small:64', dimensions: 64 });
    const api = apiAs(t.app, (await createKey(t.app, (await signUp(t.app)).token)).key);
    const base = (await api('POST', '/knowledge-bases', { name: 'Remote vectors' })).json();
    const texts = [
      '# Parking\n\nVisitors park in the garage on Elm Street.',
      '# Payments\n\nInvoices are paid by bank transfer within thirty days.',
    ];
    for (const [i, rawText] of texts.entries())
      await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: `Doc ${i}`, rawText });
    await until('the sources to be READY', async () => (await api('GET', `/knowledge-bases/${base.id}`)).json().chunkCount === 2);
    const chunkRequests = fake.received.length;
    expect(chunkRequests).toBe(2);
    for (const request of fake.received) {
      expect(request.authorization).toBe('Bearer sk-test');
      expect(request.body).toMatchObject({ model: 'text-embedding-3-small', dimensions: 64, encoding_format: 'float' });
    }
    expect(fake.received[0]!.body.input).toEqual(['Parking\nVisitors park in the garage on Elm Street.']);

    const results = (await api('POST', `/knowledge-bases/${base.id}/query`, { query: 'garage parking', topK: 1 })).json().results;
    expect(results[0].text).toContain('Elm Street');
    expect(fake.received).toHaveLength(chunkRequests + 1);
    expect(fake.received.at(-1)!.body.input).toEqual(['garage parking']);
  });

  it('turns a 5xx into a retryable error with the provider’s words, a 4xx into a final one, and refuses vectors of the wrong length', async () => {
    const failing = await startFakeEmbeddings({ failWith: 503 });
    const wrongLength = await startFakeEmbeddings({ answerDimensions: 7 });
    try {
      await expect(openAiEmbeddings({ baseUrl: `${failing.url}/v1`, model: 'm', dimensions: 8 }).embed(['x'])).rejects.toMatchObject({
        name: 'ProviderError',
        retryable: true,
        message: 'Embeddings: The model is overloaded.',
      });
      const notFound = await openAiEmbeddings({ baseUrl: `${fake.url}/nowhere`, model: 'm', dimensions: 8 })
        .embed(['a'])
        .catch((caught: unknown) => caught);
      expect(notFound).toBeInstanceOf(ProviderError);
      expect(notFound).toMatchObject({ retryable: false, status: 404 });
      await expect(
        openAiEmbeddings({ baseUrl: `${wrongLength.url}/v1`, model: 'm', dimensions: 8 }).embed(['a', 'b']),
      ).rejects.toMatchObject({
        retryable: false,
        message: 'Embeddings: the answer does not hold 2 vectors of 8 numbers.',
      });
      const [vector] = await openAiEmbeddings({ baseUrl: `${fake.url}/v1`, model: 'm', dimensions: 8 }).embed(['unit length']);
      expect(Math.hypot(...vector!)).toBeCloseTo(1, 6);
    } finally {
      await failing.close();
      await wrongLength.close();
    }
  });
});
