/**
 * The agent's audio cut to the sizes a provider plays in one message (Telnyx: 20 ms to 30 s). A
 * voice delivers chunks of any size; short ones are held until a frame's worth has come, and the
 * tail of a sentence (shorter than a frame when a mark follows it) is padded with silence, at most
 * one frame's length, so nothing the agent says is dropped. Without bounds each chunk goes as it is.
 */
import type { AudioFormat } from '../../providers/types.ts';

export interface FramedAudio {
  play(audio: Buffer): void;
  /** Sends what is held (padded to a whole frame): the sentence ended, its mark follows. */
  flush(): void;
  /** Forgets what is held: the queue was cleared. */
  drop(): void;
}

/** The byte of silence in each encoding: μ-law's zero level is 0xFF; 16-bit PCM's is 0. */
const SILENCE: Record<AudioFormat['encoding'], number> = { mulaw: 0xff, pcm16: 0 };

export function framedAudio(
  bounds: { min: number; max: number } | undefined,
  format: AudioFormat,
  send: (audio: Buffer) => void,
): FramedAudio {
  if (!bounds) return { play: send, flush() {}, drop() {} };
  let held: Buffer = Buffer.alloc(0);
  const sendWhole = () => {
    while (held.length >= bounds.min) {
      // A last piece shorter than a frame stays held for the next chunk.
      const size = Math.min(bounds.max, held.length - (held.length % bounds.min));
      send(held.subarray(0, size));
      held = held.subarray(size);
    }
  };
  return {
    play(audio) {
      held = held.length === 0 ? audio : Buffer.concat([held, audio]);
      sendWhole();
    },
    flush() {
      if (held.length === 0) return;
      const frame = Buffer.alloc(bounds.min, SILENCE[format.encoding]);
      held.copy(frame);
      held = Buffer.alloc(0);
      send(frame);
    },
    drop() {
      held = Buffer.alloc(0);
    },
  };
}
