import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromBytes } from '../src/modules/knowledge/repo.ts';
import { processSource } from '../src/modules/knowledge/service.ts';
import type { Deps } from '../src/platform/context.ts';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// A source is embedded a slice of 256 chunks at a time, and the job checks between slices that the
// source still wants them: one deleted meanwhile stops costing the model. The job is run directly
// (no queue worker here), with the real model, counting its calls.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { KNOWLEDGE_PARSE_TIMEOUT_SECONDS: '600' } });
}, 180_000);
afterAll(async () => {
  await t?.close();
});

/** About 300 chunks of text: two slices. */
const LONG_TEXT = Array.from(
  { length: 300 },
  (_, i) =>
    `## Section ${i + 1}\n\nRule ${i + 1} of the handbook says that request ${i + 1} is answered within ${i + 2} days by the team on floor ${(i % 9) + 1}; a reminder goes out after ${i + 3} days, and the case is closed when the customer confirms it in writing to the office of section ${i + 1}.`,
).join('\n\n');

async function longSource() {
  const session = await signUp(t.app);
  const api = apiAs(t.app, (await createKey(t.app, session.token)).key);
  const base = (await api('POST', '/knowledge-bases', { name: 'Long' })).json();
  const source = (
    await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'Long', rawText: LONG_TEXT })
  ).json();
  return { api, tenantId: session.tenantId, baseId: base.id as string, sourceId: source.id as string };
}

/** The runtime with its embedder observed: each call's size, and `before` run ahead of each call. */
function observed(before: (call: number) => Promise<void> = async () => undefined) {
  const sizes: number[] = [];
  const { embedder } = t.runtime.knowledge;
  const deps: Deps = {
    ...t.runtime,
    knowledge: {
      ...t.runtime.knowledge,
      embedder: {
        ...embedder,
        embed: async (texts, purpose) => {
          sizes.push(texts.length);
          await before(sizes.length);
          return embedder.embed(texts, purpose);
        },
      },
    },
  };
  return { deps, sizes };
}

describe('processing a long source', () => {
  it('embeds it a slice at a time and stores every chunk in order', { timeout: 180_000 }, async () => {
    const { api, tenantId, baseId, sourceId } = await longSource();
    const { deps, sizes } = observed();
    await processSource(deps, { tenantId, sourceId, generation: 1 }, { retryCount: 0 });
    const source = (await api('GET', `/knowledge-bases/${baseId}/sources/${sourceId}`)).json();
    expect(source.status, source.error).toBe('READY');
    expect(sizes[0]).toBe(256);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(source.chunkCount);
    expect(sizes.length).toBeGreaterThan(1);
    // The last chunk's stored vector is its own text's: the slices' vectors and texts stayed together.
    const { rows } = await t.runtime.db.query<{ text: string; embedding: Buffer }>(
      'SELECT text, embedding FROM knowledge_chunks WHERE tenant_id = $1 AND source_id = $2 ORDER BY position DESC LIMIT 1',
      [tenantId, sourceId],
    );
    const stored = fromBytes(rows[0]!.embedding);
    const [fresh] = await t.runtime.knowledge.embedder.embed([rows[0]!.text]);
    expect(stored.reduce((sum, value, i) => sum + value * fresh![i]!, 0)).toBeGreaterThan(0.999);
  });

  it('stops at the next slice when the source is deleted meanwhile, storing nothing', { timeout: 180_000 }, async () => {
    const { api, tenantId, baseId, sourceId } = await longSource();
    const { deps, sizes } = observed(async (call) => {
      if (call === 1) expect((await api('DELETE', `/knowledge-bases/${baseId}/sources/${sourceId}`)).statusCode).toBe(204);
    });
    await processSource(deps, { tenantId, sourceId, generation: 1 }, { retryCount: 0 });
    expect(sizes).toEqual([256]);
    const { rows } = await t.runtime.db.query('SELECT 1 FROM knowledge_chunks WHERE tenant_id = $1 AND source_id = $2', [
      tenantId,
      sourceId,
    ]);
    expect(rows).toHaveLength(0);
  });
});
