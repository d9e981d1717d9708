/**
 * Sentences: the model's words cut into sentences as it writes them, so the first is spoken while
 * it writes the rest; a line spoken whole stays one. Each sentence gets its mark here, the name the
 * line will report it by once it was played.
 */
import { sentenceCutter, type SentenceCutter } from '../../../platform/sentences.ts';
import type { Reply, Spoken } from './frames.ts';
import type { Stage, StageLink } from './pipeline.ts';

export function sentencesStage(language: string, link: StageLink): Stage {
  let marks = 0;
  /** The reply being cut, its cutter, and the model's answer within it that the cutter holds text of. */
  let cutting: { reply: Reply; cutter: SentenceCutter; round: number } | undefined;

  const say = (reply: Reply, text: string, round: number) => {
    const spoken: Spoken = { text, round, mark: `m${++marks}`, heard: false, cleared: false };
    reply.sentences.push(spoken);
    link.down({ type: 'sentence', reply, spoken });
  };
  const cuttingOf = (reply: Reply) => {
    if (cutting?.reply !== reply) cutting = { reply, cutter: sentenceCutter(language), round: -1 };
    return cutting;
  };
  /** What the cutter holds of the reply, as its last sentence. */
  const flush = (reply: Reply) => {
    const held = cuttingOf(reply);
    for (const sentence of held.cutter.flush()) say(reply, sentence, held.round);
  };

  return {
    name: 'sentences',
    down: {
      agent_text({ reply, text, round }) {
        const held = cuttingOf(reply);
        // A tool ran between two answers of the model: the next answer's first sentence is its own.
        if (round !== held.round) {
          flush(reply);
          held.round = round;
        }
        for (const sentence of held.cutter.push(text)) say(reply, sentence, round);
      },
      agent_line({ reply, text }) {
        flush(reply);
        say(reply, text, -1);
      },
      reply_end(frame) {
        flush(frame.reply);
        cutting = undefined;
        link.down(frame);
      },
    },
  };
}
