/**
 * Keys pressed as tones on the line itself (DTMF in the call's audio), for a provider that cannot
 * press them while its media stream runs (Twilio): each key its two frequencies (ITU-T Q.23) for
 * 100 ms, then 100 ms of silence; `w` is half a second of silence. A phone menu hears them as it
 * hears a handset's keypad (G.711 carries them unchanged).
 */
import { pcm16ToMulaw, type AudioFormat } from '../../platform/audio.ts';

const ROWS = [697, 770, 852, 941];
const COLUMNS = [1209, 1336, 1477, 1633];
const KEYPAD = ['123A', '456B', '789C', '*0#D'];
/** Each key's tone, its gap after, and `w`'s pause (ms). */
const TONE_MS = 100;
const GAP_MS = 100;
const PAUSE_MS = 500;
/** Each frequency at -10 dBFS: the pair well above a line's noise, below clipping together. */
const AMPLITUDE = 32767 * 10 ** (-10 / 20);

/** A key's two frequencies (Hz): its row's and its column's. */
export function keyFrequencies(key: string): [number, number] | undefined {
  const row = KEYPAD.findIndex((keys) => keys.includes(key.toUpperCase()));
  if (row < 0) return undefined;
  return [ROWS[row]!, COLUMNS[KEYPAD[row]!.indexOf(key.toUpperCase())]!];
}

/** The keys as audio in the line's format. */
export function keyTones(digits: string, format: AudioFormat): Buffer {
  const rate = format.sampleRate;
  const samplesOf = (ms: number) => Math.round((ms / 1000) * rate);
  const parts: Int16Array[] = [];
  for (const key of digits) {
    if (key === 'w' || key === 'W') {
      parts.push(new Int16Array(samplesOf(PAUSE_MS)));
      continue;
    }
    const pair = keyFrequencies(key);
    if (!pair) continue;
    const tone = new Int16Array(samplesOf(TONE_MS));
    for (let i = 0; i < tone.length; i++)
      tone[i] = Math.round(AMPLITUDE * (Math.sin((2 * Math.PI * pair[0] * i) / rate) + Math.sin((2 * Math.PI * pair[1] * i) / rate)));
    parts.push(tone, new Int16Array(samplesOf(GAP_MS)));
  }
  const pcm = Buffer.alloc(parts.reduce((sum, part) => sum + part.length, 0) * 2);
  let at = 0;
  for (const part of parts) for (const sample of part) at = pcm.writeInt16LE(sample, at);
  return format.encoding === 'mulaw' ? pcm16ToMulaw(pcm) : pcm;
}
