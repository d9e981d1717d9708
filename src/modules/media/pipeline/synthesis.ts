/**
 * Synthesis: each sentence to the voice, one after another, its audio converted to the line's
 * format and sent down as it comes, then a word that the sentence was sent (the line's mark). An
 * interruption aborts what is being synthesised and drops what waits; a sentence of a reply cut
 * short is not synthesised. A voice that fails says so up the line, and the rest of that reply is
 * not spoken; unless the agent has a backup voice: a voice that fails, or gives no audio for the
 * stall time, before a sentence's first audio hands that sentence and every one after to the backup
 * (once, for the rest of the call), and says so up the line.
 */
import { createAudioConverter, type AudioConverter, type AudioFormat } from '../../../platform/audio.ts';
import { ProviderError } from '../../../providers/errors.ts';
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
  /** The provider's name, as the transcript names it when the backup takes over. */
  provider: string;
  /** The agent's backup voice, and how long a voice may give no audio before it takes over. */
  backup?: { tts: TextToSpeech; voice: string; model?: string; provider: string; stallMs: number };
}

export interface SynthesisStage extends Stage {
  /** Characters sent to the voices (billed as text-to-speech), and of those the backup's. */
  characters(): number;
  backupCharacters(): number;
}

/** A voice as the stage speaks with it. */
type Voice = Pick<SynthesisOptions, 'tts' | 'voice' | 'model'>;

export function synthesisStage(options: SynthesisOptions, link: StageLink): SynthesisStage {
  let characters = 0;
  let backupCharacters = 0;
  /** The voice speaking: the agent's, or its backup once it took over. */
  let voice: Voice = options;
  const { backup } = options;
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

  /**
   * The sentence's audio down the line as `by` speaks it; false when it failed (or stalled, when
   * `stallMs` is given) before any of it was sent, so another voice may say it whole.
   */
  async function speakWith(by: Voice, spoken: Spoken, signal: AbortSignal, stallMs?: number): Promise<{ error: unknown } | undefined> {
    const attempt = new AbortController();
    const aborted = () => attempt.abort();
    signal.addEventListener('abort', aborted, { once: true });
    let stalled = false;
    const timer = stallMs === undefined ? undefined : setTimeout(() => ((stalled = true), attempt.abort()), stallMs);
    let sent = false;
    try {
      const synthesised = by.tts.synthesize({
        text: spoken.text,
        voice: by.voice,
        language: options.language,
        format: options.format,
        signal: attempt.signal,
        ...(by.model ? { model: by.model } : {}),
      });
      const converter = await converterFor(synthesised.format);
      for await (const chunk of synthesised.audio) {
        clearTimeout(timer);
        if (signal.aborted) return undefined;
        // A chunk may hold no audio (eSpeak ends each sentence with an empty one), or convert to none
        // (a resampler keeps the last few samples for its filter): nothing is sent for it.
        const audio = converter.convert(chunk);
        if (audio.length > 0) {
          sent = true;
          link.down({ type: 'agent_audio', audio });
        }
      }
      if (stalled) throw new ProviderError(`The voice gave no audio for ${stallMs} ms.`, { retryable: true });
      return undefined;
    } catch (error) {
      if (signal.aborted && !stalled) return undefined;
      const failure = stalled ? new ProviderError(`The voice gave no audio for ${stallMs} ms.`, { retryable: true }) : error;
      if (sent || stallMs === undefined || !(failure instanceof ProviderError)) throw failure;
      return { error: failure };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
    }
  }

  async function speak(reply: Reply, spoken: Spoken, signal: AbortSignal): Promise<void> {
    if (backup && voice !== backup) {
      // The agent's voice, watched: failing or stalling before its first audio hands the sentence to
      // the backup, and it is not billed for what it did not say.
      const failed = await speakWith(voice, spoken, signal, backup.stallMs);
      if (!failed) {
        characters += spoken.text.length;
        if (!signal.aborted) link.down({ type: 'sentence_sent', spoken });
        return;
      }
      voice = backup;
      const reason = failed.error instanceof Error ? failed.error.message : String(failed.error);
      link.up({ type: 'voice_failed_over', reply, failover: { component: 'tts', from: options.provider, to: backup.provider, reason } });
    }
    characters += spoken.text.length;
    if (voice === backup) backupCharacters += spoken.text.length;
    await speakWith(voice, spoken, signal);
    if (!signal.aborted) link.down({ type: 'sentence_sent', spoken });
  }

  return {
    name: 'synthesis',
    down: {
      sentence({ reply, spoken }) {
        if (reply.silenced) return;
        enqueue(reply, (signal) => speak(reply, spoken, signal));
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
    backupCharacters: () => backupCharacters,
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
