/**
 * Audio as the media pipeline moves it: mono frames in the formats phone lines, browsers and speech
 * providers use. G.711 μ-law comes from `alawmulaw`; resampling from libsamplerate (WebAssembly,
 * `@alexanderolsen/libsamplerate-js`); pcm16 is 16-bit signed little-endian.
 */
import alawmulaw from 'alawmulaw';
import libsamplerate from '@alexanderolsen/libsamplerate-js';

/**
 * Raw mono audio. `pcm16`: 16-bit signed little-endian samples; `mulaw`: G.711 μ-law, one byte per
 * sample (what phone lines carry at 8 kHz).
 */
export interface AudioFormat {
  encoding: 'pcm16' | 'mulaw';
  sampleRate: number;
}

// Both packages are CommonJS: Node gives their exports as the default import only.
const { mulaw } = alawmulaw;

/** What a phone line carries (Twilio Media Streams, Telnyx). */
export const PHONE_AUDIO: AudioFormat = { encoding: 'mulaw', sampleRate: 8000 };

const bytesPerSample = (format: AudioFormat) => (format.encoding === 'mulaw' ? 1 : 2);

/** Milliseconds of audio in `bytes` bytes of `format`. */
export const durationMs = (bytes: number, format: AudioFormat) => (bytes / bytesPerSample(format) / format.sampleRate) * 1000;

/** Bytes of `format` that hold `ms` milliseconds. */
export const bytesFor = (ms: number, format: AudioFormat) => Math.round((ms / 1000) * format.sampleRate) * bytesPerSample(format);

/** |sample| of each μ-law byte: a frame's loudness read without decoding it. */
const MULAW_MAGNITUDE = Uint16Array.from({ length: 256 }, (_, byte) => Math.abs(mulaw.decodeSample(byte)));

/** Whether a sample of `audio` is louder than `peak` (of 16-bit), stopping at the first. */
export function hasSampleAbove(audio: Buffer, format: AudioFormat, peak: number): boolean {
  if (format.encoding === 'mulaw') {
    for (const byte of audio) if (MULAW_MAGNITUDE[byte]! > peak) return true;
    return false;
  }
  for (let offset = 0; offset + 1 < audio.length; offset += 2) if (Math.abs(audio.readInt16LE(offset)) > peak) return true;
  return false;
}

/** The root mean square of `audio`'s samples (of 16-bit; 0 for none), μ-law read through its magnitudes without decoding. */
export function rmsLevel(audio: Buffer, format: AudioFormat): number {
  let energy = 0;
  let count = 0;
  if (format.encoding === 'mulaw') {
    for (const byte of audio) energy += MULAW_MAGNITUDE[byte]! ** 2;
    count = audio.length;
  } else {
    for (let offset = 0; offset + 1 < audio.length; offset += 2) energy += audio.readInt16LE(offset) ** 2;
    count = Math.floor(audio.length / 2);
  }
  return count ? Math.sqrt(energy / count) : 0;
}

export function mulawToPcm16(audio: Uint8Array): Buffer {
  const samples = mulaw.decode(audio);
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}

export function pcm16ToMulaw(audio: Buffer): Buffer {
  return Buffer.from(mulaw.encode(pcm16Samples(audio)));
}

/** The samples of pcm16 bytes (a trailing odd byte is left out). */
export function pcm16Samples(audio: Buffer): Int16Array {
  // A copy when the buffer is not aligned for 16-bit reads (a slice of a larger one may not be).
  const aligned = audio.byteOffset % 2 === 0 ? audio : Buffer.from(audio);
  return new Int16Array(aligned.buffer, aligned.byteOffset, Math.floor(aligned.byteLength / 2));
}

/** One run of samples from several, in order. */
export function joinedSamples(parts: Int16Array[]): Int16Array {
  const whole = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    whole.set(part, offset);
    offset += part.length;
  }
  return whole;
}

const sameFormat = (a: AudioFormat, b: AudioFormat) => a.encoding === b.encoding && a.sampleRate === b.sampleRate;

/** Converts a stream chunk by chunk; it keeps what it needs of earlier chunks, so use one per stream, and close it after. */
export interface AudioConverter {
  convert(chunk: Buffer): Buffer;
  /** Frees the resampler's WebAssembly memory. */
  close(): void;
}

/**
 * A converter from one format to another for one stream of chunks. Stateful: a pcm16 chunk cut
 * in the middle of a sample keeps its odd byte for the next chunk, and the resampler keeps its
 * filter's history, so chunk boundaries never click and chunked output equals whole output.
 * Async because libsamplerate's WebAssembly module is made asynchronously (compiled for each
 * converter, as a resampler's state is per stream: see createResampler for what one costs).
 * The resampler's filter delays the output by a few milliseconds: the last of a stream stays
 * inside it, which a live call never notices.
 */
export async function createAudioConverter(from: AudioFormat, to: AudioFormat): Promise<AudioConverter> {
  if (sameFormat(from, to)) return { convert: (chunk) => chunk, close: () => undefined };
  const decode = from.encoding === 'mulaw' ? (chunk: Buffer) => mulaw.decode(chunk) : pcm16Reader();
  const encode = to.encoding === 'mulaw' ? (samples: Int16Array) => Buffer.from(mulaw.encode(samples)) : pcm16Bytes;
  const resample =
    from.sampleRate === to.sampleRate
      ? { run: (samples: Int16Array) => samples, close: () => undefined }
      : await createResampler(from.sampleRate, to.sampleRate);
  return { convert: (chunk) => encode(resample.run(decode(chunk))), close: resample.close };
}

/** pcm16 bytes to samples, carrying an odd trailing byte over to the next chunk. */
function pcm16Reader(): (chunk: Buffer) => Int16Array {
  let carried: Buffer | null = null;
  return (chunk) => {
    const bytes = carried ? Buffer.concat([carried, chunk]) : chunk;
    carried = bytes.length % 2 === 1 ? Buffer.from(bytes.subarray(bytes.length - 1)) : null;
    return pcm16Samples(bytes);
  };
}

function pcm16Bytes(samples: Int16Array): Buffer {
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}

/** One stream's resampler: a libsamplerate WebAssembly instance of its own. */
export interface Resampler {
  run(samples: Int16Array): Int16Array;
  /** Forgets the stream so far (the filter's history and the tail it holds back): the next samples begin a new one. */
  restart(): void;
  /** Frees the instance (its WebAssembly memory goes once nothing holds it). */
  close(): void;
}

/**
 * libsamplerate instances open in this thread. Each is a WebAssembly module compiled for it (40–300
 * ms of this thread on this machine) with 25 MiB of linear memory (about 2 MiB of it touched), kept
 * until the garbage collector finds it closed: a count that must not grow with the calls.
 */
let openResamplers = 0;
export const resamplersOpen = () => openResamplers;

/**
 * libsamplerate's band-limited sinc resampler (medium quality: 97 dB stop band, 90% of the
 * bandwidth kept), which filters out what the lower rate cannot carry instead of folding it back.
 * Its full API keeps the filter state across calls; its filter holds back about 6 ms of a stream.
 */
export async function createResampler(fromRate: number, toRate: number): Promise<Resampler> {
  const converter = await libsamplerate.create(1, fromRate, toRate, { converterType: libsamplerate.ConverterType.SRC_SINC_MEDIUM_QUALITY });
  openResamplers++;
  const run = (samples: Int16Array) => {
    if (samples.length === 0) return samples;
    const input = new Float32Array(samples.length);
    for (let i = 0; i < samples.length; i++) input[i] = samples[i]! / 32768;
    const output = converter.full(input);
    const result = new Int16Array(output.length);
    for (let i = 0; i < output.length; i++) result[i] = Math.max(-32768, Math.min(32767, Math.round(output[i]! * 32768)));
    return result;
  };
  let closed = false;
  return {
    run,
    // The library's only reset: setting a rate frees the converter's state and makes a new one.
    restart() {
      converter.outputSampleRate = toRate;
    },
    close() {
      if (closed) return;
      closed = true;
      openResamplers--;
      converter.destroy();
    },
  };
}

/**
 * A WAV file (RIFF, PCM, 16-bit mono) around pcm16 samples, for a server that takes an utterance
 * as an uploaded file. The 44-byte canonical header is the whole format for this case.
 */
export function wavFile(pcm16: Buffer, sampleRate: number): Buffer {
  const dataBytes = pcm16.length - (pcm16.length % 2);
  return Buffer.concat([wavHeader(dataBytes, sampleRate, 1), pcm16.subarray(0, dataBytes)]);
}

/**
 * The canonical 44-byte header of a 16-bit PCM WAV file whose `dataBytes` of interleaved samples
 * follow it (a recording streamed after its header).
 */
export function wavHeader(dataBytes: number, sampleRate: number, channels: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16); // size of the fmt chunk
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28); // bytes per second
  header.writeUInt16LE(channels * 2, 32); // bytes per frame
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}
