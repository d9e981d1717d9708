/**
 * Recognition: the caller's audio to the recogniser, its events down the line. A recogniser of
 * whole utterances arrives here already wrapped in the pipeline's voice-activity detection
 * (utterance-recognition.ts), so this stage takes a streaming one and such a pair alike. When the
 * recogniser fails mid-call and the agent has a backup recogniser, the backup hears the caller
 * from then on (the failure is said down the line); without one, the line cannot hear any more.
 */
import { ProviderError } from '../../../providers/errors.ts';
import type { AudioFormat } from '../../../platform/audio.ts';
import type { LiveRecognition } from '../../../providers/types.ts';
import type { Stage, StageLink } from './pipeline.ts';

export interface RecognitionStage extends Stage {
  /** Seconds of the caller's audio the recognisers were sent (billed as speech-to-text), and of those the backup's. */
  seconds(): number;
  backupSeconds(): number;
}

/** The agent's backup recogniser, opened only when the first fails. */
export interface BackupRecognition {
  listen(): LiveRecognition;
  /** The providers' names, as the transcript gives them. */
  from: string;
  to: string;
}

export function recognitionStage(
  first: LiveRecognition,
  format: AudioFormat,
  link: StageLink,
  backup?: BackupRecognition,
): RecognitionStage {
  const bytesPerSecond = (format.encoding === 'mulaw' ? 1 : 2) * format.sampleRate;
  let closed = false;
  /** The recogniser listening, and the seconds it was sent. */
  let recognition = first;
  let sentSeconds = 0;
  /** Of the first recogniser, once the backup took over. */
  let firstSeconds: number | undefined;
  // An utterance recogniser knows what it sent; a streaming one was sent everything.
  const secondsOf = (heard: LiveRecognition) => heard.sentSeconds?.() ?? sentSeconds;

  async function hear(heard: LiveRecognition): Promise<void> {
    for await (const event of heard.events) {
      if (closed) break;
      link.down(event);
    }
  }

  void (async () => {
    try {
      await hear(first).catch(async (error: unknown) => {
        if (closed || !backup) throw error;
        firstSeconds = secondsOf(first);
        sentSeconds = 0;
        void first.close().catch(() => undefined);
        recognition = backup.listen();
        const reason = error instanceof Error ? error.message : String(error);
        link.down({ type: 'recognition_failed_over', failover: { component: 'stt', from: backup.from, to: backup.to, reason } });
        await hear(recognition);
      });
    } catch (error) {
      if (closed) return;
      const failure =
        error instanceof ProviderError ? error : new ProviderError(`Speech-to-text failed: ${String(error)}`, { retryable: false });
      link.down({ type: 'recognition_failed', error: failure });
    }
  })();

  return {
    name: 'recognition',
    down: {
      caller_audio(frame) {
        if (closed) return;
        sentSeconds += frame.audio.length / bytesPerSecond;
        recognition.send(frame.audio);
        // A stage below may hear the caller too (a speech-to-speech model whose turns ours detects).
        link.down(frame);
      },
    },
    seconds: () => (firstSeconds ?? 0) + secondsOf(recognition),
    backupSeconds: () => (firstSeconds === undefined ? 0 : secondsOf(recognition)),
    async close() {
      if (closed) return;
      closed = true;
      await recognition.close().catch(() => undefined);
    },
  };
}
