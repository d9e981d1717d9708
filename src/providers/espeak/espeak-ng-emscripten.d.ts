// The package ships no types; these are the members of its Emscripten binding that synthesis-worker.ts uses.
declare module '@echogarden/espeak-ng-emscripten' {
  interface ESpeakNGEngine {
    list_voices(): { name: string; identifier: string; languages: { name: string; priority: number }[] }[];
    set_voice(name: string): number;
    get_samplerate(): number;
    /** Calls `onAudio` with each block of 16-bit samples as it is synthesised, synchronously. */
    synthesize(text: string, onAudio: (samples: Int16Array, events: unknown[]) => void): void;
  }
  interface ESpeakNGModule {
    eSpeakNGWorker: new () => ESpeakNGEngine;
  }
  export default function initialise(options?: object): Promise<ESpeakNGModule>;
}
