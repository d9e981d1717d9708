import { availableParallelism } from 'node:os';
import { startTypeScriptWorker } from '../../platform/worker.ts';
import { ProviderError } from '../errors.ts';
import type { SynthesisRequest, Synthesis, TextToSpeech, Voice } from '../types.ts';
import { type EspeakVoice, type WorkerReply, type WorkerRequest } from './protocol.ts';

/**
 * eSpeak NG, offline: its WebAssembly build and voice data ship in an npm package, so speech works
 * with no account and no network. Worker threads synthesise for every call (a sentence takes about
 * 100 ms of computing for 3 s of speech) and resample it to the line's rate: one per core beyond
 * the one the service runs on, at most four, started as calls need them.
 */
export const espeakSpeech: TextToSpeech = {
  synthesize,
  voices: async () => (await espeakVoices()).map(toVoice),
};

/** pcm16 at the line's rate, resampled in the worker (the line's encoding is the pipeline's to make). */
function synthesize(request: SynthesisRequest): Synthesis {
  return { format: { encoding: 'pcm16', sampleRate: request.format.sampleRate }, audio: synthesised(request) };
}

async function* synthesised(request: SynthesisRequest): AsyncGenerator<Buffer> {
  const voices = await espeakVoices();
  if (!voices.some((voice) => voice.identifier === request.voice))
    throw new ProviderError(`eSpeak NG has no voice "${request.voice}"; GET /api/v1/voices?provider=ESPEAK lists them.`, {
      retryable: false,
    });
  const chunks = leastBusyEngine().request({
    type: 'synthesize',
    text: request.text,
    voice: request.voice,
    sampleRate: request.format.sampleRate,
  });
  for await (const samples of chunks) {
    if (request.signal?.aborted) throw new ProviderError('eSpeak NG: the synthesis was cancelled.', { retryable: false });
    yield Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  }
}

/** eSpeak's voices as it lists them, best first (so the first voice that speaks a language is its best). */
let voiceList: Promise<EspeakVoice[]> | undefined;
function espeakVoices(): Promise<EspeakVoice[]> {
  voiceList ??= leastBusyEngine()
    .voices()
    .then((voices) => [...voices].sort((a, b) => bestPriority(a) - bestPriority(b)))
    .catch((error: unknown) => {
      voiceList = undefined;
      throw error;
    });
  return voiceList;
}

const bestPriority = (voice: EspeakVoice) => Math.min(...voice.languages.map((language) => language.priority));

function toVoice(voice: EspeakVoice): Voice {
  const languages = [...voice.languages].sort((a, b) => a.priority - b.priority).map((language) => canonicalTag(language.name));
  return { id: voice.identifier, name: voice.name, languages: [...new Set(languages)] };
}

/**
 * eSpeak writes tags in lower case (en-gb-x-rp); the API's are canonical (en-GB-x-rp). A few of its
 * tags are not valid BCP-47 (en-us-nyc): their longest valid beginning is made canonical.
 */
function canonicalTag(tag: string): string {
  const parts = tag.split('-');
  for (let length = parts.length; length > 0; length--) {
    try {
      const head = Intl.getCanonicalLocales(parts.slice(0, length).join('-'))[0]!;
      return [head, ...parts.slice(length)].join('-');
    } catch {
      // not valid BCP-47 this long: try a shorter beginning
    }
  }
  return tag;
}

// ---------------------------------------------------------------------------------------------
// The worker thread

interface Engine {
  voices(): Promise<EspeakVoice[]>;
  request(request: Omit<Extract<WorkerRequest, { type: 'synthesize' }>, 'id'>): AsyncIterable<Int16Array>;
  /** Requests it has not finished. */
  busy(): number;
}

/** The service's own thread keeps a core; eSpeak gets the others, up to four (each holds its own WebAssembly memory). */
const MAX_ENGINES = Math.max(1, Math.min(4, availableParallelism() - 1));
const engines: Engine[] = [];

/** An idle engine, a new one while there are fewer than MAX_ENGINES, else the one with the least work. */
function leastBusyEngine(): Engine {
  const idle = engines.find((engine) => engine.busy() === 0);
  if (idle) return idle;
  if (engines.length < MAX_ENGINES) {
    const engine = startEngine();
    engines.push(engine);
    return engine;
  }
  return engines.reduce((least, engine) => (engine.busy() < least.busy() ? engine : least));
}

/** A pending request: its audio so far, and how to wake the reader. */
interface Pending {
  chunks: Int16Array[];
  done: boolean;
  error?: ProviderError;
  wake: () => void;
  voices?: (voices: EspeakVoice[]) => void;
}

function startEngine(): Engine {
  const worker = startTypeScriptWorker(new URL('./synthesis-worker.ts', import.meta.url));
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let stopped = false;
  // The worker keeps the process alive only while it has work.
  worker.unref();
  const settle = (id: number) => {
    pending.delete(id);
    if (pending.size === 0) worker.unref();
  };
  const failAll = (error: unknown) => {
    if (!stopped) {
      // A stopped engine takes no more work; the next request starts another.
      stopped = true;
      engines.splice(engines.indexOf(engine), 1);
    }
    voiceList = undefined;
    const failure = new ProviderError(`eSpeak NG stopped: ${error instanceof Error ? error.message : String(error)}`, {
      retryable: true,
      cause: error,
    });
    for (const entry of pending.values()) Object.assign(entry, { error: failure }).wake();
    pending.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`its worker exited with code ${code}`)));
  worker.on('message', (reply: WorkerReply) => {
    const entry = pending.get(reply.id);
    if (!entry) return;
    if (reply.type === 'audio') entry.chunks.push(reply.audio);
    else if (reply.type === 'voices') entry.voices?.(reply.voices);
    else if (reply.type === 'error') entry.error = new ProviderError(reply.message, { retryable: false });
    else if (reply.type === 'done') entry.done = true;
    if (reply.type !== 'audio') settle(reply.id);
    entry.wake();
  });

  const open = (request: WorkerRequest, entry: Pending) => {
    pending.set(request.id, entry);
    worker.ref();
    worker.postMessage(request);
  };

  const engine: Engine = {
    busy: () => pending.size,
    voices: () =>
      new Promise<EspeakVoice[]>((resolve, reject) => {
        const entry: Pending = { chunks: [], done: false, voices: resolve, wake: () => entry.error && reject(entry.error) };
        open({ id: nextId++, type: 'voices' }, entry);
      }),
    async *request(request) {
      let wake: () => void = () => undefined;
      const entry: Pending = { chunks: [], done: false, wake: () => wake() };
      open({ id: nextId++, ...request }, entry);
      for (;;) {
        const chunk = entry.chunks.shift();
        if (chunk) yield chunk;
        else if (entry.error) throw entry.error;
        else if (entry.done) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  return engine;
}
