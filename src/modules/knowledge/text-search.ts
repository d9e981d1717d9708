import type { Queryable } from '../../platform/db.ts';
import type { BaseCache, BaseRef } from './base-cache.ts';
import * as repo from './repo.ts';

/** A base's words: for each (an `english` lexeme), the rows of the chunks that hold it, in id order. */
interface BaseWords {
  ids: string[];
  chunksOf: Map<string, Int32Array>;
}

/** The best chunks of one base for a query's words, by the weights of the words each holds (best first). */
export interface TextSearch {
  rank(db: Queryable, base: BaseRef, words: string[], limit: number): Promise<string[]>;
}

// Rough bytes of what a base's words hold in memory: a chunk id string; a word's map entry with
// its array and the array's buffer (measured: about 225 bytes beside the word's characters).
const ID_BYTES = 96;
const WORD_BYTES = 225;

/**
 * The full-text ranking, in process over a per-base index of the chunks' words (`baseCache`, the
 * same budget and versioning as the vectors). A query word a chunk holds counts as BM25's inverse
 * document frequency ln(1 + (N − n + 0.5)/(n + 0.5)), n of the base's N chunks holding it, so a
 * question's rare word outweighs its common ones; term frequency and length are left out (chunks
 * are short and of similar length). The words come from the chunks' stored full-text vectors, so
 * a query's words (from `to_tsvector` too) match them exactly. Ties: lower chunk id first.
 */
export function textSearch(cache: BaseCache): TextSearch {
  const read = async (db: Queryable, base: BaseRef) => {
    const rows = await repo.baseWords(db, base.tenantId, base.id);
    const rowsOf = new Map<string, number[]>();
    let postings = 0;
    rows.forEach((row, index) => {
      for (const word of row.words) {
        const list = rowsOf.get(word);
        if (list) list.push(index);
        else rowsOf.set(word, [index]);
      }
      postings += row.words.length;
    });
    const chunksOf = new Map<string, Int32Array>();
    let bytes = rows.length * ID_BYTES + postings * 4;
    for (const [word, list] of rowsOf) {
      chunksOf.set(word, Int32Array.from(list));
      bytes += WORD_BYTES + 2 * word.length;
    }
    return { value: { ids: rows.map((row) => row.id), chunksOf }, bytes };
  };

  return {
    async rank(db, base, words, limit) {
      if (words.length === 0) return [];
      const { ids, chunksOf } = await cache.get<BaseWords>(base, 'words', () => read(db, base));
      const total = ids.length;
      const scores = new Float64Array(total);
      const scored: number[] = [];
      for (const word of words) {
        const rows = chunksOf.get(word);
        if (!rows) continue;
        const weight = Math.log(1 + (total - rows.length + 0.5) / (rows.length + 0.5));
        for (const row of rows) {
          if (scores[row] === 0) scored.push(row);
          scores[row]! += weight;
        }
      }
      return topRows(scored, scores, limit).map((row) => ids[row]!);
    },
  };
}

/** The `limit` rows with the highest scores, highest first (ties: lower row first), without sorting them all. */
function topRows(rows: number[], scores: Float64Array, limit: number): number[] {
  const better = (a: number, b: number) => scores[a]! > scores[b]! || (scores[a] === scores[b] && a < b);
  const best: number[] = [];
  for (const row of rows) {
    if (best.length === limit && !better(row, best[limit - 1]!)) continue;
    let at = best.length;
    while (at > 0 && better(row, best[at - 1]!)) at--;
    best.splice(at, 0, row);
    if (best.length > limit) best.pop();
  }
  return best;
}
