// Runs in a worker thread (see speech.ts): eSpeak NG's WebAssembly build synthesises synchronously,
// about 100 ms of computing per spoken sentence, which would stall every call on the event loop.
import { parentPort } from 'node:worker_threads';
import initialise from '@echogarden/espeak-ng-emscripten';
import { createResampler, type Resampler } from '../../platform/audio.ts';
import { ESPEAK_SAMPLE_RATE, type WorkerReply, type WorkerRequest } from './protocol.ts';

const espeak = await initialise();
const engine = new espeak.eSpeakNGWorker();
const port = parentPort!;
// The main thread announces the format before the audio exists.
if (engine.get_samplerate() !== ESPEAK_SAMPLE_RATE)
  throw new Error(`eSpeak NG synthesises at ${engine.get_samplerate()} Hz, not ${ESPEAK_SAMPLE_RATE}`);

/**
 * The audio leaves at the rate the caller's line plays, resampled here: one resampler per rate for
 * every call this thread speaks for, restarted for each sentence, instead of one per call on the
 * service's thread (a WebAssembly instance each: see createResampler). A sentence is synthesised
 * in one go, so sentences never share one.
 */
const resamplers = new Map<number, Promise<Resampler>>();
const resamplerTo = (rate: number) => {
  let resampler = resamplers.get(rate);
  if (!resampler) {
    resampler = createResampler(ESPEAK_SAMPLE_RATE, rate);
    resamplers.set(rate, resampler);
    // One that could not be made is tried again by the next request.
    resampler.catch(() => resamplers.delete(rate));
  }
  return resampler;
};
/** Silence after a sentence, through the resampler: out comes the end of the sentence it held back (about 6 ms). */
const FLUSH_SAMPLES = new Int16Array(Math.round(ESPEAK_SAMPLE_RATE * 0.01));

// Requests are answered in order: each waits for the previous one (a sentence is synchronous, but
// a resampler for a new rate is made asynchronously).
let answered = Promise.resolve();
port.on('message', (request: WorkerRequest) => {
  answered = answered.then(async () => {
    try {
      await answer(request);
    } catch (error) {
      reply({ id: request.id, type: 'error', message: error instanceof Error ? error.message : String(error) });
    }
  });
});

async function answer(request: WorkerRequest): Promise<void> {
  if (request.type === 'voices') {
    const voices = engine.list_voices().map((voice) => ({
      identifier: voice.identifier,
      name: voice.name,
      languages: voice.languages.map((language) => ({ name: language.name, priority: language.priority })),
    }));
    return reply({ id: request.id, type: 'voices', voices });
  }
  const resampler = request.sampleRate === ESPEAK_SAMPLE_RATE ? undefined : await resamplerTo(request.sampleRate);
  // eSpeak answers 0 when the voice is set, an error code (EE_NOT_FOUND) otherwise.
  if (engine.set_voice(request.voice) !== 0)
    return reply({ id: request.id, type: 'error', message: `eSpeak NG has no voice "${request.voice}"` });
  const send = (samples: Int16Array) => {
    if (samples.length > 0) reply({ id: request.id, type: 'audio', audio: samples }, [samples.buffer as ArrayBuffer]);
  };
  resampler?.restart();
  engine.synthesize(request.text, (samples) => {
    // A view of eSpeak's memory, reused after the callback: copied (or resampled) before it is sent.
    send(resampler ? resampler.run(samples) : new Int16Array(samples));
  });
  if (resampler) send(resampler.run(FLUSH_SAMPLES));
  reply({ id: request.id, type: 'done' });
}

function reply(message: WorkerReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}
