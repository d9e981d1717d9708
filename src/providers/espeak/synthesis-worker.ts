// Runs in a worker thread (see speech.ts): eSpeak NG's WebAssembly build synthesises synchronously,
// about 100 ms of computing per spoken sentence, which would stall every call on the event loop.
import { parentPort } from 'node:worker_threads';
import initialise from '@echogarden/espeak-ng-emscripten';
import { ESPEAK_SAMPLE_RATE, type WorkerReply, type WorkerRequest } from './protocol.ts';

const espeak = await initialise();
const engine = new espeak.eSpeakNGWorker();
const port = parentPort!;
// The main thread announces the format before the audio exists.
if (engine.get_samplerate() !== ESPEAK_SAMPLE_RATE)
  throw new Error(`eSpeak NG synthesises at ${engine.get_samplerate()} Hz, not ${ESPEAK_SAMPLE_RATE}`);

port.on('message', (request: WorkerRequest) => {
  try {
    answer(request);
  } catch (error) {
    reply({ id: request.id, type: 'error', message: error instanceof Error ? error.message : String(error) });
  }
});

function answer(request: WorkerRequest): void {
  if (request.type === 'voices') {
    const voices = engine.list_voices().map((voice) => ({
      identifier: voice.identifier,
      name: voice.name,
      languages: voice.languages.map((language) => ({ name: language.name, priority: language.priority })),
    }));
    return reply({ id: request.id, type: 'voices', voices });
  }
  // eSpeak answers 0 when the voice is set, an error code (EE_NOT_FOUND) otherwise.
  if (engine.set_voice(request.voice) !== 0)
    return reply({ id: request.id, type: 'error', message: `eSpeak NG has no voice "${request.voice}"` });
  engine.synthesize(request.text, (samples) => {
    // A view of eSpeak's memory, reused after the callback: copied before it is sent.
    const copy = new Int16Array(samples);
    reply({ id: request.id, type: 'audio', audio: copy }, [copy.buffer]);
  });
  reply({ id: request.id, type: 'done' });
}

function reply(message: WorkerReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}
