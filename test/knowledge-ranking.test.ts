import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import * as repo from '../src/modules/knowledge/repo.ts';
import { createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// The full-text side of retrieval weights a question's words as BM25 does: by how few of the base's
// chunks hold them. The word counts it reads are kept with the chunks as sources come and go.
let t: TestApp;
beforeAll(async () => {
  // Parsing runs in a child process with a time limit; a loaded machine must not fail these sources.
  t = await startTestApp({ env: { KNOWLEDGE_PARSE_TIMEOUT_SECONDS: '600' } });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
}, 180_000);
afterAll(async () => {
  await t?.close();
});

type Api = ReturnType<typeof apiAs>;

// The first source of a test process waits for the embedding workers to load the model.
const settled = (api: Api, baseId: string, sourceId: string) =>
  until(
    `source ${sourceId} to settle`,
    async () => {
      const current = (await api('GET', `/knowledge-bases/${baseId}/sources/${sourceId}`)).json();
      return current.status !== 'PROCESSING' && current;
    },
    170_000,
  );

async function tenant() {
  const session = await signUp(t.app);
  return { tenantId: session.tenantId, api: apiAs(t.app, (await createKey(t.app, session.token)).key) };
}

async function addText(api: Api, baseId: string, sourceName: string, rawText: string): Promise<string> {
  const response = await api('POST', `/knowledge-bases/${baseId}/sources`, { sourceType: 'text', sourceName, rawText });
  expect(response.statusCode, response.body).toBe(201);
  const source = await settled(api, baseId, response.json().id);
  expect(source.status, source.error).toBe('READY');
  return source.id;
}

// Sections of a handbook that repeat the common words of the question below (payment, day, month).
const COMMON = Array.from(
  { length: 24 },
  (_, i) =>
    `## Payments ${i + 1}\n\nPayment is due on the first day of the month. Payment by card is taken the same day. A payment reminder is sent each day a payment is late, and a month later the payment is passed on.`,
).join('\n\n');
const RARE = '## Garden\n\nThe gazebo behind the hall can be hired for weddings; ask at the front desk.';

/** Each word's count of chunks, as kept, and as counted from the chunks themselves. */
async function wordCounts(tenantId: string, baseId: string) {
  const kept = await t.runtime.db.query<{ term: string; chunks: number }>(
    'SELECT term, chunks FROM knowledge_terms WHERE tenant_id = $1 AND knowledge_base_id = $2 ORDER BY term',
    [tenantId, baseId],
  );
  const counted = await t.runtime.db.query<{ term: string; chunks: number }>(
    `SELECT u.lexeme AS term, count(*)::int AS chunks FROM knowledge_chunks c, unnest(c.search) AS u
     WHERE c.tenant_id = $1 AND c.knowledge_base_id = $2 GROUP BY u.lexeme ORDER BY u.lexeme`,
    [tenantId, baseId],
  );
  return { kept: kept.rows, counted: counted.rows };
}

describe('full-text ranking by rare words', () => {
  it(
    'ranks the chunk that holds the question’s rare word once above chunks that repeat its common words',
    { timeout: 180_000 },
    async () => {
      const { tenantId, api } = await tenant();
      const base = (await api('POST', '/knowledge-bases', { name: 'Venue' })).json();
      await addText(api, base.id, 'Payments', COMMON);
      await addText(api, base.id, 'Garden', RARE);
      const question = 'Is there a payment each day or each month to hire the gazebo?';

      const ranked = await repo.rankByText(t.runtime.db, tenantId, base.id, question, 5);
      const texts = await repo.chunksByIds(t.runtime.db, tenantId, ranked);
      expect(texts.find((chunk) => chunk.id === ranked[0])!.text).toContain('gazebo');

      const results = (await api('POST', `/knowledge-bases/${base.id}/query`, { query: question, topK: 3 })).json().results;
      expect(results[0].text).toContain('gazebo');
    },
  );

  it(
    'ranks as when every word of the question chooses the chunks, whether its rare words settle the ranking or not',
    { timeout: 180_000 },
    async () => {
      const { tenantId, api } = await tenant();
      const base = (await api('POST', '/knowledge-bases', { name: 'Pruning' })).json();
      await addText(api, base.id, 'Payments', COMMON);
      await addText(api, base.id, 'Garden', RARE);
      /** Every chunk of the base scored by all the question's words, no index choosing: the ranking to match. */
      const everyChunk = async (question: string, limit: number) =>
        (
          await t.runtime.db.query<{ id: string }>(
            `WITH base AS (SELECT sum(chunk_count)::float8 AS n FROM knowledge_sources WHERE tenant_id = $1 AND knowledge_base_id = $2),
                words AS (SELECT t.term, ln(1 + (greatest(base.n - t.chunks, 0) + 0.5) / (t.chunks + 0.5)) AS weight
                          FROM base, knowledge_terms t
                          WHERE t.tenant_id = $1 AND t.knowledge_base_id = $2 AND t.term = ANY (tsvector_to_array(to_tsvector('english', $3))))
           SELECT c.id FROM knowledge_chunks c, LATERAL (SELECT sum(w.weight) AS score FROM words w WHERE w.term = ANY (tsvector_to_array(c.search))) s
           WHERE c.tenant_id = $1 AND c.knowledge_base_id = $2 AND s.score > 0 ORDER BY s.score DESC, c.id LIMIT $4`,
            [tenantId, base.id, question, limit],
          )
        ).rows.map((row) => row.id);
      const chunks = (await t.runtime.db.query('SELECT 1 FROM knowledge_chunks WHERE knowledge_base_id = $1', [base.id])).rowCount;
      // At least 10 chunks: the gazebo's one chunk is a tenth of the base or less, a rare word.
      expect(chunks).toBeGreaterThanOrEqual(10);
      for (const question of [
        // The rare word's one chunk settles a ranking of 1, not one of 5: the common words' chunks are scored then.
        'Is there a payment each day or each month to hire the gazebo?',
        // Only common words: every chunk holding them is scored.
        'Is the payment taken the same day?',
      ])
        for (const limit of [1, 5])
          expect(await repo.rankByText(t.runtime.db, tenantId, base.id, question, limit)).toEqual(await everyChunk(question, limit));
    },
  );

  it('keeps the word counts equal to the chunks as sources are added, refreshed and deleted, per base', { timeout: 180_000 }, async () => {
    const { tenantId, api } = await tenant();
    const base = (await api('POST', '/knowledge-bases', { name: 'Counts' })).json();
    const other = (await api('POST', '/knowledge-bases', { name: 'Other' })).json();
    const payments = await addText(api, base.id, 'Payments', COMMON);
    await addText(api, base.id, 'Garden', RARE);
    await addText(api, other.id, 'Garden elsewhere', RARE);

    let counts = await wordCounts(tenantId, base.id);
    expect(counts.kept).toEqual(counts.counted);
    expect(counts.kept.find((row) => row.term === 'gazebo')).toEqual({ term: 'gazebo', chunks: 1 });
    expect(counts.kept.find((row) => row.term === 'payment')!.chunks).toBe(24);

    // A refresh replaces the source's chunks: counted once, not twice.
    expect((await api('POST', `/knowledge-bases/${base.id}/sources/${payments}/refresh`)).statusCode).toBe(202);
    expect((await settled(api, base.id, payments)).status).toBe('READY');
    counts = await wordCounts(tenantId, base.id);
    expect(counts.kept).toEqual(counts.counted);
    expect(counts.kept.find((row) => row.term === 'payment')!.chunks).toBe(24);

    // Deleting a source takes its words out; a word no chunk holds any more is gone.
    expect((await api('DELETE', `/knowledge-bases/${base.id}/sources/${payments}`)).statusCode).toBe(204);
    counts = await wordCounts(tenantId, base.id);
    expect(counts.kept).toEqual(counts.counted);
    expect(counts.kept.some((row) => row.term === 'payment')).toBe(false);

    // The other base kept its own counts; deleting a base deletes its counts.
    expect((await wordCounts(tenantId, other.id)).kept.find((row) => row.term === 'gazebo')).toEqual({ term: 'gazebo', chunks: 1 });
    expect((await api('DELETE', `/knowledge-bases/${other.id}`)).statusCode).toBe(204);
    expect((await wordCounts(tenantId, other.id)).kept).toEqual([]);
  });
});
