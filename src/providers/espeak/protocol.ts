/** eSpeak NG synthesises every voice at this rate (the worker checks it when it starts), then resamples to the rate asked. */
export const ESPEAK_SAMPLE_RATE = 22050;

/** What the main thread and the synthesis worker say to each other. */
export type WorkerRequest =
  { id: number; type: 'voices' } | { id: number; type: 'synthesize'; text: string; voice: string; sampleRate: number };

export interface EspeakVoice {
  /** eSpeak's voice file (`gmw/en-US`), which selects the voice. */
  identifier: string;
  name: string;
  /** Lower priority: a better voice for that language. */
  languages: { name: string; priority: number }[];
}

export type WorkerReply =
  | { id: number; type: 'voices'; voices: EspeakVoice[] }
  | { id: number; type: 'audio'; audio: Int16Array }
  | { id: number; type: 'done' }
  | { id: number; type: 'error'; message: string };
