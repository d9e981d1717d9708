/**
 * Recognition: the caller's audio to the recogniser, its events down the line. A recogniser of
 * whole utterances arrives here already wrapped in the pipeline's voice-activity detection
 * (utterance-recognition.ts), so this stage takes a streaming one and such a pair alike.
 */
import { ProviderError } from '../../../providers/errors.ts';
import type { AudioFormat } from '../../../platform/audio.ts';
import type { LiveRecognition } from '../../../providers/types.ts';
import type { Stage, StageLink } from './pipeline.ts';

export interface RecognitionStage extends Stage {
  /** Seconds of the caller's audio the recogniser was sent (billed as speech-to-text). */
  seconds(): number;
}

export function recognitionStage(recognition: LiveRecognition, format: AudioFormat, link: StageLink): RecognitionStage {
  const bytesPerSecond = (format.encoding === 'mulaw' ? 1 : 2) * format.sampleRate;
  let closed = false;
  let sentSeconds = 0;

  void (async () => {
    try {
      for await (const event of recognition.events) {
        if (closed) break;
        link.down(event);
      }
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
    // An utterance recogniser knows what it sent; a streaming one was sent everything.
    seconds: () => recognition.sentSeconds?.() ?? sentSeconds,
    async close() {
      if (closed) return;
      closed = true;
      await recognition.close().catch(() => undefined);
    },
  };
}
