import { describe, expect, it } from 'vitest';
import { framedAudio } from './frames.ts';

const MULAW = { encoding: 'mulaw', sampleRate: 8000 } as const;
const bytes = (length: number, value = 1) => Buffer.alloc(length, value);

describe('the line’s audio cut to a provider’s frame sizes', () => {
  it('sends each chunk as it is when the provider has no bounds', () => {
    const sent: Buffer[] = [];
    const frames = framedAudio(undefined, MULAW, (audio) => sent.push(audio));
    frames.play(bytes(3));
    frames.flush();
    expect(sent).toEqual([bytes(3)]);
  });

  it('joins short chunks into whole frames and splits long ones at the maximum', () => {
    const sent: Buffer[] = [];
    const frames = framedAudio({ min: 160, max: 480 }, MULAW, (audio) => sent.push(audio));
    frames.play(bytes(100));
    expect(sent).toEqual([]);
    frames.play(bytes(100, 2));
    expect(sent.map((frame) => frame.length)).toEqual([160]);
    expect(sent[0]!.subarray(100, 160)).toEqual(bytes(60, 2));
    frames.play(bytes(1000, 3));
    // 40 held + 1000 = 1040: 480 + 480, then 80 held (not a whole frame).
    expect(sent.map((frame) => frame.length)).toEqual([160, 480, 480]);
  });

  it('pads the tail of a sentence with μ-law silence before its mark, and drops what a clear cleared', () => {
    const sent: Buffer[] = [];
    const frames = framedAudio({ min: 160, max: 480 }, MULAW, (audio) => sent.push(audio));
    frames.play(bytes(200));
    frames.flush();
    expect(sent.map((frame) => frame.length)).toEqual([160, 160]);
    expect(sent[1]).toEqual(Buffer.concat([bytes(40), Buffer.alloc(120, 0xff)]));
    frames.flush(); // nothing held: nothing sent
    frames.play(bytes(100));
    frames.drop();
    frames.flush();
    expect(sent).toHaveLength(2);
  });
});
