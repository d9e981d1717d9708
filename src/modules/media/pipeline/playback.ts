/**
 * Playback, the transport's way out: the agent's audio to the line, each sentence's mark after its
 * audio, and a clear when the caller interrupts. The line reports each mark once the audio before
 * it was played: the sentence was heard, and once the last sentence of a reply is, the reply was
 * played out. Twilio, Telnyx and the browser call differ only in the line they give (their
 * framing, their messages); each reports its marks here.
 */
import type { AudioFormat } from '../../../platform/audio.ts';
import type { Reply, Spoken } from './frames.ts';
import type { Stage, StageLink } from './pipeline.ts';

/** The far end of the line: plays audio in order and reports marks once what came before them was played. */
export interface AudioLine {
  /** The format the line carries both ways. */
  readonly format: AudioFormat;
  /** Never empty: each transport sends it as one message, and a message without audio is invalid (Twilio's warning 31951). */
  play(audio: Buffer): void;
  mark(name: string): void;
  /** Drops audio queued but not yet played. */
  clear(): void;
}

export interface PlaybackStage extends Stage {
  /** The line played everything before mark `name`. */
  marked(name: string): void;
}

export function playbackStage(line: AudioLine, link: StageLink): PlaybackStage {
  /** Sentences whose marks were sent and not yet reported. */
  const sent = new Map<string, Spoken>();
  /** Replies whose last sentence's mark is awaited, by that mark. */
  const playingOut = new Map<string, Reply>();
  const playedOut = (reply: Reply) => link.up({ type: 'played_out', reply });

  return {
    name: 'playback',
    down: {
      agent_audio: ({ audio }) => line.play(audio),
      sentence_sent({ spoken }) {
        sent.set(spoken.mark, spoken);
        line.mark(spoken.mark);
      },
      reply_end({ reply }) {
        const last = reply.sentences.at(-1);
        if (!last || last.heard) return playedOut(reply);
        playingOut.set(last.mark, reply);
      },
      interrupt() {
        line.clear();
        for (const reply of playingOut.values()) playedOut(reply);
        playingOut.clear();
      },
    },
    marked(name) {
      const spoken = sent.get(name);
      sent.delete(name);
      // Audio an interruption cleared: the line reports its mark too (Twilio does), but it was never heard.
      if (spoken?.cleared) return;
      if (spoken) spoken.heard = true;
      const reply = playingOut.get(name);
      playingOut.delete(name);
      if (reply) playedOut(reply);
    },
  };
}
