import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Config } from '../src/config.ts';
import { jobDefinitions } from '../src/jobs.ts';
import { generateSecretsKey } from '../src/platform/secrets.ts';
import { createKey, signUp, startTestApp, until } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// The pgvector path on one embedded database across restarts: chunks stored while the process ran
// with exact search get their vectors and are found through the HNSW index once it runs with
// `hnsw`; both paths answer the same chunks. Back on `auto` (exact on the embedded database) the
// column and its index are dropped. PGlite only (the server here has no pgvector).
describe.skipIf(!!process.env.DATABASE_URL)('the HNSW index over chunks stored without it', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'callforge-vectors-'));
  const secretsKey = generateSecretsKey();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  // One data directory and one secrets key across both starts: the key made first still works.
  const open = (mode: Config['knowledge']['vectorSearch']) =>
    startTestApp({ env: { DATA_DIR: dataDir, SECRETS_KEY: secretsKey, VECTOR_SEARCH: mode } });

  it('backfills the vectors, finds the same chunks by index as by exact search, and drops the index again under auto', async () => {
    const exact = await open('exact');
    expect(exact.runtime.knowledge.vectors).toMatchObject({ kind: 'exact', fillsVectorColumn: false });
    await exact.runtime.jobs.work(jobDefinitions(exact.runtime));
    const key = (await createKey(exact.app, (await signUp(exact.app)).token)).key;
    let api = apiAs(exact.app, key);
    const base = (await api('POST', '/knowledge-bases', { name: 'Restarts' })).json();
    const facts = [
      'The museum is closed on Mondays.',
      'Guided tours start every hour on the hour.',
      'Children under twelve enter for free.',
      'The café serves lunch from noon to three.',
    ];
    for (const [i, fact] of facts.entries())
      await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: `Fact ${i}`, rawText: fact });
    await until(
      'the sources to be READY',
      async () => (await api('GET', `/knowledge-bases/${base.id}`)).json().chunkCount === facts.length,
      60_000,
    );
    const ask = async () =>
      (
        (await api('POST', `/knowledge-bases/${base.id}/query`, { query: 'When can I have lunch?', topK: 4 })).json().results as {
          chunkId: string;
        }[]
      ).map((r) => r.chunkId);
    const exactAnswer = await ask();
    await exact.close();

    const indexed = await open('hnsw');
    try {
      expect(indexed.runtime.knowledge.vectors).toMatchObject({ kind: 'hnsw', fillsVectorColumn: true });
      const { rows } = await indexed.runtime.db.query<{ missing: number }>(
        'SELECT count(*)::int AS missing FROM knowledge_chunks WHERE embedding_vector IS NULL',
      );
      expect(rows[0]!.missing).toBe(0);
      api = apiAs(indexed.app, key);
      expect(await ask()).toEqual(exactAnswer);
      const plan = await indexed.runtime.db.transaction(async (tx) => {
        await tx.query('SET LOCAL enable_seqscan = off');
        const explained = await tx.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN SELECT id FROM knowledge_chunks ORDER BY embedding_vector <=> (SELECT embedding_vector FROM knowledge_chunks LIMIT 1) LIMIT 5`,
        );
        return explained.rows.map((row) => row['QUERY PLAN']).join('\n');
      });
      expect(plan).toContain('knowledge_chunks_vector_idx');
    } finally {
      await indexed.close();
    }

    const embeddedDefault = await open('auto');
    try {
      expect(embeddedDefault.runtime.knowledge.vectors).toMatchObject({ kind: 'exact', fillsVectorColumn: false });
      const { rows } = await embeddedDefault.runtime.db.query(
        "SELECT 1 FROM pg_attribute WHERE attrelid = 'knowledge_chunks'::regclass AND attname = 'embedding_vector' AND NOT attisdropped",
      );
      expect(rows).toEqual([]);
      api = apiAs(embeddedDefault.app, key);
      expect(await ask()).toEqual(exactAnswer);
    } finally {
      await embeddedDefault.close();
    }
  }, 180_000);
});
