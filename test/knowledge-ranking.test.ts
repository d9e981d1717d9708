import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import * as repo from '../src/modules/knowledge/repo.ts';
import { newId } from '../src/platform/ids.ts';
import { createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// The full-text side of retrieval weights a question's words as BM25 does: by how few of the base's
// chunks hold them. It runs in process over an index of the base's words, read again whenever the
// base's chunks change.
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

/** The in-process full-text ranking of a base for a question, as retrieval runs it. */
async function rankByText(tenantId: string, baseId: string, question: string, limit: number): Promise<string[]> {
  const toSearch = (await repo.baseToSearch(t.runtime.db, tenantId, baseId, question))!;
  return t.runtime.knowledge.text.rank(t.runtime.db, { tenantId, id: baseId, ...toSearch }, toSearch.words, limit);
}

/** Every chunk of a base scored in SQL by all the question's words, n counted from the chunks themselves: the ranking to match. */
async function rankedInSql(tenantId: string, baseId: string, question: string, limit: number): Promise<string[]> {
  const { rows } = await t.runtime.db.query<{ id: string }>(
    `WITH base AS (SELECT count(*)::float8 AS n FROM knowledge_chunks WHERE tenant_id = $1 AND knowledge_base_id = $2),
          counted AS (SELECT u.lexeme AS term, count(*)::float8 AS chunks FROM knowledge_chunks c, unnest(c.search) AS u
                      WHERE c.tenant_id = $1 AND c.knowledge_base_id = $2 GROUP BY u.lexeme),
          words AS (SELECT w.term, ln(1 + (greatest(base.n - w.chunks, 0) + 0.5) / (w.chunks + 0.5)) AS weight
                    FROM base, counted w WHERE w.term = ANY (tsvector_to_array(to_tsvector('english', $3))))
     SELECT c.id FROM knowledge_chunks c, LATERAL (SELECT sum(w.weight) AS score FROM words w WHERE w.term = ANY (tsvector_to_array(c.search))) s
     WHERE c.tenant_id = $1 AND c.knowledge_base_id = $2 AND s.score > 0 ORDER BY s.score DESC, c.id LIMIT $4`,
    [tenantId, baseId, question, limit],
  );
  return rows.map((row) => row.id);
}

const gazeboQuestion = 'Is there a payment each day or each month to hire the gazebo?';

describe('full-text ranking by rare words', () => {
  it(
    'ranks the chunk that holds the question’s rare word once above chunks that repeat its common words',
    { timeout: 180_000 },
    async () => {
      const { tenantId, api } = await tenant();
      const base = (await api('POST', '/knowledge-bases', { name: 'Venue' })).json();
      await addText(api, base.id, 'Payments', COMMON);
      await addText(api, base.id, 'Garden', RARE);
      const question = gazeboQuestion;

      const ranked = await rankByText(tenantId, base.id, question, 5);
      const texts = await repo.chunksByIds(t.runtime.db, tenantId, ranked);
      expect(texts.find((chunk) => chunk.id === ranked[0])!.text).toContain('gazebo');

      const results = (await api('POST', `/knowledge-bases/${base.id}/query`, { query: question, topK: 3 })).json().results;
      expect(results[0].text).toContain('gazebo');
    },
  );

  it('ranks as BM25 weights over every chunk of the base, computed in SQL, ties by chunk id', { timeout: 180_000 }, async () => {
    const { tenantId, api } = await tenant();
    const base = (await api('POST', '/knowledge-bases', { name: 'Weights' })).json();
    await addText(api, base.id, 'Payments', COMMON);
    await addText(api, base.id, 'Garden', RARE);
    for (const question of [gazeboQuestion, 'Is the payment taken the same day?', 'Nothing here matches'])
      for (const limit of [1, 5, 50])
        expect(await rankByText(tenantId, base.id, question, limit)).toEqual(await rankedInSql(tenantId, base.id, question, limit));
  });

  it('breaks ties by chunk id, however the chunks were stored', { timeout: 180_000 }, async () => {
    const { tenantId, api } = await tenant();
    const base = (await api('POST', '/knowledge-bases', { name: 'Ties' })).json();
    const sourceId = await addText(api, base.id, 'Placeholder', 'Placeholder.');
    // Chunks written in descending id order, all holding the same words: every one ties.
    const ids = Array.from({ length: 6 }, () => newId())
      .sort()
      .reverse();
    await t.runtime.db.transaction(async (tx) => {
      const source = (await repo.lockGeneration(tx, tenantId, sourceId, 1))!;
      const chunks = ids.map((id, position) => ({ id, position, text: 'The gazebo is free on Sundays.', embedding: new Float32Array(4) }));
      await repo.replaceChunks(tx, tenantId, source, 'test-model', chunks, false, new Date());
    });
    const ranked = await rankByText(tenantId, base.id, 'gazebo', 4);
    expect(ranked).toEqual([...ids].sort().slice(0, 4));
    expect(ranked).toEqual(await rankedInSql(tenantId, base.id, 'gazebo', 4));
  });

  it(
    "weighs each word by the formula over the base's chunk count, to the last decimal that orders them",
    { timeout: 180_000 },
    async () => {
      const { tenantId, api } = await tenant();
      const base = (await api('POST', '/knowledge-bases', { name: 'Weights exactly' })).json();
      const sourceId = await addText(api, base.id, 'Placeholder', 'Placeholder.');
      // 27 chunks: "xylophone" in 16, "yacht" and "zeppelin" in 21 each. The chunk with the xylophone
      // alone scores w(16) = 0.5288 and the chunks with yacht and zeppelin 2 × w(21) = 0.5283, w(n)
      // = ln(1 + (27 − n + 0.5)/(n + 0.5)): so close that counting 28 or 30 chunks, or smoothing by
      // 1 instead of 0.5, puts the two words' chunks first.
      const texts = [
        'The xylophone is in the hall.',
        'The yacht and the zeppelin are in the harbour.',
        ...Array.from({ length: 15 }, (_, i) => `Room ${i}: a xylophone, a yacht and a zeppelin.`),
        ...Array.from({ length: 5 }, (_, i) => `Shelf ${i}: a yacht and a zeppelin.`),
        ...Array.from({ length: 5 }, (_, i) => `Drawer ${i}: pencils.`),
      ];
      const ids = texts.map(() => newId());
      await t.runtime.db.transaction(async (tx) => {
        const source = (await repo.lockGeneration(tx, tenantId, sourceId, 1))!;
        const chunks = texts.map((text, position) => ({ id: ids[position]!, position, text, embedding: new Float32Array(4) }));
        await repo.replaceChunks(tx, tenantId, source, 'test-model', chunks, false, new Date());
      });
      const ranked = await rankByText(tenantId, base.id, 'xylophone yacht zeppelin', 50);
      expect(ranked).toHaveLength(22);
      expect(ranked.slice(0, 15).sort()).toEqual(ids.slice(2, 17).sort());
      expect(ranked[15]).toBe(ids[0]);
      expect(ranked).toEqual(await rankedInSql(tenantId, base.id, 'xylophone yacht zeppelin', 50));
    },
  );

  it('ranks the chunks the base holds now, as sources are added, refreshed and deleted, per base', { timeout: 180_000 }, async () => {
    const { tenantId, api } = await tenant();
    const base = (await api('POST', '/knowledge-bases', { name: 'Changes' })).json();
    const other = (await api('POST', '/knowledge-bases', { name: 'Other' })).json();
    const payments = await addText(api, base.id, 'Payments', COMMON);
    const matches = async () => {
      const ranked = await rankByText(tenantId, base.id, gazeboQuestion, 50);
      expect(ranked).toEqual(await rankedInSql(tenantId, base.id, gazeboQuestion, 50));
      return ranked;
    };
    expect(await matches()).toHaveLength(24);

    // Another base's chunks are not this base's.
    await addText(api, other.id, 'Garden elsewhere', RARE);
    const gazeboFirst = async () => (await repo.chunksByIds(t.runtime.db, tenantId, (await matches()).slice(0, 1)))[0]?.text ?? '';
    expect(await gazeboFirst()).not.toContain('gazebo');

    // A source added is ranked at once (the base's chunk version moved), and weights move with it.
    const garden = await addText(api, base.id, 'Garden', RARE);
    expect(await gazeboFirst()).toContain('gazebo');

    // A refresh replaces the source's chunks: each ranked once, not twice.
    expect((await api('POST', `/knowledge-bases/${base.id}/sources/${payments}/refresh`)).statusCode).toBe(202);
    expect((await settled(api, base.id, payments)).status).toBe('READY');
    expect(await matches()).toHaveLength(25);

    // Deleting a source takes its chunks out of the ranking.
    expect((await api('DELETE', `/knowledge-bases/${base.id}/sources/${garden}`)).statusCode).toBe(204);
    expect(await matches()).toHaveLength(24);
    expect(await gazeboFirst()).not.toContain('gazebo');
  });
});
