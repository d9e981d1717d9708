/**
 * Turn detection: when the caller is talking and when their turn is over. This detector takes the
 * recogniser's word: speech started or words heard mean the caller is talking (a confirmed start,
 * or words, interrupt an agent speaking; an unconfirmed start does not, so a cough or the line's
 * hiss stops nothing), and the recogniser's end of the utterance ends the turn with the final
 * words since the last one.
 */
import type { Stage, StageLink } from './pipeline.ts';

export function recogniserTurnsStage(link: StageLink): Stage {
  let words: string[] = [];
  return {
    name: 'turn detection',
    down: {
      speech_started({ confirmed }) {
        link.down({ type: 'caller_speaking', interrupts: confirmed === true });
      },
      transcript({ text, final }) {
        if (!text.trim()) return;
        link.down({ type: 'caller_speaking', interrupts: true });
        if (final) words.push(text.trim());
      },
      utterance_end() {
        if (!words.length) return;
        link.down({ type: 'caller_turn', text: words.join(' ') });
        words = [];
      },
    },
  };
}
