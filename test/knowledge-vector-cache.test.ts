import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as repo from '../src/modules/knowledge/repo.ts';
import { baseCache, type BaseRef } from '../src/modules/knowledge/base-cache.ts';
import { exactVectorSearch } from '../src/modules/knowledge/vector-search.ts';
import type { Queryable } from '../src/platform/db.ts';
import { newId } from '../src/platform/ids.ts';
import { createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// The exact search's cache (KNOWLEDGE_CACHE_MB): a base's vectors are read once and kept until its
// chunk version moves; over the budget the least recently used base goes; a base bigger than the
// whole budget is read every time and never kept. Reads are counted on the real database.
const MODEL = 'test-model';
const DIMENSIONS = 4;
let t: TestApp;
let tenantId: string;
let api: ReturnType<typeof apiAs>;

beforeAll(async () => {
  t = await startTestApp();
  const session = await signUp(t.app);
  tenantId = session.tenantId;
  api = apiAs(t.app, (await createKey(t.app, session.token)).key);
});
afterAll(() => t.close());

/** A base with `count` chunks of known unit vectors, stored directly (no embedding model). */
async function baseWith(count: number): Promise<BaseRef> {
  const base = (await api('POST', '/knowledge-bases', { name: `Cache ${newId()}` })).json();
  const source = (
    await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'Vectors', rawText: 'placeholder' })
  ).json();
  await t.runtime.db.transaction(async (tx) => {
    const row = (await repo.lockGeneration(tx, tenantId, source.id, 1))!;
    const chunks = Array.from({ length: count }, (_, i) => ({
      id: newId(),
      position: i,
      text: `chunk ${i}`,
      embedding: Float32Array.from({ length: DIMENSIONS }, (_, d) => (d === i % DIMENSIONS ? 1 : 0)),
    }));
    await repo.replaceChunks(tx, tenantId, row, MODEL, chunks, false, new Date());
  });
  return { tenantId, id: base.id, chunksVersion: (await repo.baseVersion(t.runtime.db, tenantId, base.id))! };
}

/**
 * The real database, counting the statements that read a base's embeddings; `hold` makes the next
 * such read wait until the returned function is called, and `fail` makes it throw.
 */
function counting() {
  let reads = 0;
  let next: 'hold' | 'fail' | undefined;
  let release = () => {};
  const db: Queryable = {
    query: async (text, params) => {
      if (text.includes('SELECT id, embedding FROM knowledge_chunks')) {
        reads++;
        const now = next;
        next = undefined;
        if (now === 'fail') throw new Error('the read failed');
        if (now === 'hold') await new Promise<void>((resolve) => (release = resolve));
      }
      return t.runtime.db.query(text, params);
    },
    execScript: (sql) => t.runtime.db.execScript(sql),
    transaction: (fn) => t.runtime.db.transaction(fn),
  };
  return {
    db,
    reads: () => reads,
    hold: () => {
      next = 'hold';
      return () => release();
    },
    fail: () => (next = 'fail'),
  };
}

const probe = Float32Array.from([1, 0, 0, 0]);

describe('the exact search cache', () => {
  it('reads a base once, again when its chunk version moves, and evicts the least recently used over budget', async () => {
    const [first, second] = [await baseWith(4), await baseWith(4)];
    const oneBase = 4 * DIMENSIONS * 4; // bytes of one base's vectors
    const search = exactVectorSearch(baseCache(oneBase), false);
    const { db, reads } = counting();

    const nearest = await search.nearest(db, first, MODEL, probe, 2);
    expect(nearest[0]).toMatchObject({ similarity: 1 });
    await search.nearest(db, first, MODEL, probe, 2);
    expect(reads()).toBe(1);

    await search.nearest(db, { ...first, chunksVersion: first.chunksVersion + 1 }, MODEL, probe, 2);
    expect(reads()).toBe(2);

    await search.nearest(db, second, MODEL, probe, 2); // over budget: the first base goes
    await search.nearest(db, second, MODEL, probe, 2);
    expect(reads()).toBe(3);
    await search.nearest(db, { ...first, chunksVersion: first.chunksVersion + 1 }, MODEL, probe, 2);
    expect(reads()).toBe(4);
  });

  it('never keeps a base bigger than the whole budget, nor drops others for it', async () => {
    const [small, big] = [await baseWith(4), await baseWith(8)];
    const search = exactVectorSearch(baseCache(4 * DIMENSIONS * 4), false);
    const { db, reads } = counting();
    await search.nearest(db, small, MODEL, probe, 3);
    await search.nearest(db, big, MODEL, probe, 3);
    await search.nearest(db, big, MODEL, probe, 3);
    expect(reads()).toBe(3);
    await search.nearest(db, small, MODEL, probe, 3); // still cached
    expect(reads()).toBe(3);
  });

  it('reads a base once for searches that miss it together, and never lets an older version displace a newer', async () => {
    const base = await baseWith(4);
    const search = exactVectorSearch(baseCache(1024 * 1024), false);
    const { db, reads, hold } = counting();
    const at = (version: number) => ({ ...base, chunksVersion: base.chunksVersion + version });
    const together = await Promise.all([1, 2, 3, 4].map(() => search.nearest(db, base, MODEL, probe, 1)));
    expect(together.map((hits) => hits[0]!.similarity)).toEqual([1, 1, 1, 1]);
    expect(reads()).toBe(1);

    // A search that read an older version (it began before a change committed) is served the newer one kept.
    await search.nearest(db, at(2), MODEL, probe, 1);
    expect(reads()).toBe(2);
    await search.nearest(db, at(1), MODEL, probe, 1);
    expect(reads()).toBe(2);

    // An older read that ends after a newer one does not replace it.
    const release = hold();
    const older = search.nearest(db, at(3), MODEL, probe, 1);
    await until('the held read to start', () => reads() === 3);
    await search.nearest(db, at(4), MODEL, probe, 1);
    release();
    await older;
    await search.nearest(db, at(4), MODEL, probe, 1);
    expect(reads()).toBe(4);
  });

  it('keeps nothing of a read that failed: each search waiting on it gets the error, the next reads again', async () => {
    const base = await baseWith(4);
    const search = exactVectorSearch(baseCache(1024 * 1024), false);
    const { db, reads, fail } = counting();
    await search.nearest(db, base, MODEL, probe, 1);
    const moved = { ...base, chunksVersion: base.chunksVersion + 1 };
    fail();
    const results = await Promise.allSettled([1, 2].map(() => search.nearest(db, moved, MODEL, probe, 1)));
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(reads()).toBe(2);
    // The version it kept before still serves its own searches; the failed version is read again.
    await search.nearest(db, base, MODEL, probe, 1);
    expect(reads()).toBe(2);
    expect((await search.nearest(db, moved, MODEL, probe, 1))[0]).toMatchObject({ similarity: 1 });
    expect(reads()).toBe(3);
  });
});
