/**
 * The browser call's microphone capture, run on the audio thread (an AudioWorklet module, served
 * as /assets/capture-worklet.js): the microphone at the context's rate (44.1 or 48 kHz) down to the
 * call's rate, as PCM16 frames of 20 ms posted to the page, which sends them on the call's socket.
 *
 * Resampling averages the input over each output sample's span (area resampling): a box filter
 * that keeps what speech recognition needs below 8 kHz and damps what would fold back into it,
 * at any ratio, with no state beyond the sample being built.
 */

// The AudioWorklet scope's globals, which TypeScript's DOM library does not describe.
declare const sampleRate: number;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
  constructor(options?: { processorOptions?: unknown });
}
declare function registerProcessor(
  name: string,
  processor: new (options: { processorOptions: CaptureOptions }) => AudioWorkletProcessor,
): void;

export interface CaptureOptions {
  /** The call's sample rate (16 kHz). */
  targetRate: number;
  /** Samples per posted frame at that rate. */
  frameSamples: number;
}

class Capture extends AudioWorkletProcessor {
  /** Input samples per output sample. */
  private readonly span: number;
  private readonly frameSamples: number;
  /** How much of the current output sample's span is filled, and the weighted sum so far. */
  private filled = 0;
  private sum = 0;
  private frame: Int16Array;
  private written = 0;

  constructor(options: { processorOptions: CaptureOptions }) {
    super(options);
    this.span = sampleRate / options.processorOptions.targetRate;
    this.frameSamples = options.processorOptions.frameSamples;
    this.frame = new Int16Array(this.frameSamples);
  }

  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (const sample of channel) {
      // Each input sample covers one unit of time; it may finish the output sample being built.
      let left = 1;
      while (this.filled + left >= this.span) {
        const part = this.span - this.filled;
        this.emit((this.sum + sample * part) / this.span);
        left -= part;
        this.sum = 0;
        this.filled = 0;
      }
      this.sum += sample * left;
      this.filled += left;
    }
    return true;
  }

  private emit(value: number): void {
    this.frame[this.written++] = Math.max(-32768, Math.min(32767, Math.round(value * 32768)));
    if (this.written < this.frameSamples) return;
    this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
    this.frame = new Int16Array(this.frameSamples);
    this.written = 0;
  }
}

registerProcessor('callforge-capture', Capture);
