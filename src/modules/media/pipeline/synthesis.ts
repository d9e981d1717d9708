/**
 * Synthesis: each sentence to the voice, one after another, its audio converted to the line's
 * format and sent down as it comes, then a word that the sentence was sent (the line's mark). An
 * interruption aborts what is being synthesised and drops what waits; a sentence of a reply cut
 * short is not synthesised. A voice that fails says so up the line, and the rest of that reply is
 * not spoken.
 */
import { createAudioConverter, type AudioConverter, type AudioFormat } from '../../../platform/audio.ts';
import type { TextToSpeech } from '../../../providers/types.ts';
import type { Reply, Spoken } from './frames.ts';
import type { Stage, StageLink } from './pipeline.ts';

export interface SynthesisOptions {
  tts: TextToSpeech;
  voice: string;
  language: string;
  model?: string;
  /** The line's format, which every sentence's audio is converted to. */
  format: AudioFormat;
}

export interface SynthesisStage extends Stage {
  /** Characters sent to the voice (billed as text-to-speech). */
  characters(): number;
}

export function synthesisStage(options: SynthesisOptions, link: StageLink): SynthesisStage {
  let characters = 0;
  /** Aborts the synthesis in flight: an interruption or the end of the call. */
  let synthesis = new AbortController();
  /** Sentences are synthesised one after another; an interruption starts a new chain. */
  let queue: Promise<void> = Promise.resolve();
  /** Replies whose voice failed: nothing more of them is spoken. */
  const failed = new WeakSet<Reply>();
  /**
   * One converter per format the voice delivers, for the whole call: a resampler is a WebAssembly
   * instance, too costly per sentence; the few milliseconds its filter holds back of one sentence
   * lead the next.
   */
  const converters = new Map<string, Promise<AudioConverter>>();
  const converterFor = (format: AudioFormat) => {
    const key = `${format.encoding}/${format.sampleRate}`;
    let converter = converters.get(key);
    if (!converter) converters.set(key, (converter = createAudioConverter(format, options.format)));
    return converter;
  };

  /** Runs `step` after everything queued so far, unless an interruption comes first or the reply's voice failed. */
  function enqueue(reply: Reply, step: (signal: AbortSignal) => Promise<void> | void): void {
    const signal = synthesis.signal;
    queue = queue
      .then(() => (signal.aborted || failed.has(reply) ? undefined : step(signal)))
      .catch((error: unknown) => {
        if (signal.aborted) return;
        failed.add(reply);
        link.up({ type: 'voice_failed', reply, error: error ?? new Error('The voice failed.') });
      });
  }

  async function speak(spoken: Spoken, signal: AbortSignal): Promise<void> {
    const synthesised = options.tts.synthesize({
      text: spoken.text,
      voice: options.voice,
      language: options.language,
      format: options.format,
      signal,
      ...(options.model ? { model: options.model } : {}),
    });
    characters += spoken.text.length;
    const converter = await converterFor(synthesised.format);
    for await (const chunk of synthesised.audio) {
      if (signal.aborted) return;
      // A chunk may hold no audio (eSpeak ends each sentence with an empty one), or convert to none
      // (a resampler keeps the last few samples for its filter): nothing is sent for it.
      const audio = converter.convert(chunk);
      if (audio.length > 0) link.down({ type: 'agent_audio', audio });
    }
    if (!signal.aborted) link.down({ type: 'sentence_sent', spoken });
  }

  return {
    name: 'synthesis',
    down: {
      sentence({ reply, spoken }) {
        if (reply.silenced) return;
        enqueue(reply, (signal) => speak(spoken, signal));
      },
      reply_end(frame) {
        enqueue(frame.reply, () => link.down(frame));
      },
      interrupt(frame) {
        synthesis.abort();
        synthesis = new AbortController();
        queue = Promise.resolve();
        link.down(frame);
      },
    },
    characters: () => characters,
    close() {
      synthesis.abort();
      for (const converter of converters.values())
        void converter.then(
          (done) => done.close(),
          () => undefined,
        );
    },
  };
}
