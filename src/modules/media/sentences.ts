/**
 * Streamed text cut into sentences as each completes, so the first can be spoken while the model
 * is still writing the rest. The language's own sentence rules come from `Intl.Segmenter`.
 */
const segmenters = new Map<string, Intl.Segmenter>();

function segmenterFor(language: string): Intl.Segmenter {
  let segmenter = segmenters.get(language);
  if (!segmenter) {
    segmenter = new Intl.Segmenter(language, { granularity: 'sentence' });
    segmenters.set(language, segmenter);
  }
  return segmenter;
}

export interface SentenceCutter {
  /** Adds text; returns the sentences it completed. */
  push(delta: string): string[];
  /** The text left over at the end of the reply, as a last sentence. */
  flush(): string[];
}

export function sentenceCutter(language: string): SentenceCutter {
  const segmenter = segmenterFor(language);
  let pending = '';
  return {
    push(delta) {
      pending += delta;
      const segments = Array.from(segmenter.segment(pending), (part) => part.segment);
      // The last segment may still grow: a sentence is complete once another has begun after it.
      if (segments.length < 2) return [];
      pending = segments.pop()!;
      return segments.map((sentence) => sentence.trim()).filter(Boolean);
    },
    flush() {
      const rest = pending.trim();
      pending = '';
      return rest ? [rest] : [];
    },
  };
}
