import { describe, expect, it } from 'vitest';
import type { RecordingChunk } from '../calls/service.ts';
import { startCallRecording } from './recording.ts';

// 8 kHz μ-law, chunks of 10 ms (80 frames). Caller bytes are 0x11, agent bytes 0x22, silence 0xFF.
const CALLER = 0x11;
const AGENT = 0x22;
const SILENCE = 0xff;
const bytes = (count: number, value: number) => Buffer.alloc(count, value);

function recorder(write?: (chunk: RecordingChunk) => Promise<void>) {
  const chunks: RecordingChunk[] = [];
  const errors: unknown[] = [];
  const recording = startCallRecording({
    format: { encoding: 'mulaw', sampleRate: 8000 },
    chunkSeconds: 0.01,
    write: write ?? (async (chunk) => void chunks.push(chunk)),
    onError: (error) => errors.push(error),
  });
  /** Each channel of everything written, as strings of C (caller), A (agent) and . (silence). */
  const channels = () => {
    const frames = Buffer.concat(chunks.map((chunk) => chunk.audio));
    const name = (byte: number) => (byte === CALLER ? 'C' : byte === AGENT ? 'A' : byte === SILENCE ? '.' : '?');
    let left = '';
    let right = '';
    for (let i = 0; i < frames.length; i += 2) {
      left += name(frames[i]!);
      right += name(frames[i + 1]!);
    }
    return { left, right };
  };
  return { recording, chunks, errors, channels };
}

describe('a call recording on the line timeline', () => {
  it("places the agent's audio when it is sent, and queued audio back to back", async () => {
    const { recording, chunks, channels } = recorder();
    recording.callerAudio(bytes(10, CALLER));
    recording.agentAudio(bytes(20, AGENT)); // plays from line time 10
    recording.agentAudio(bytes(20, AGENT)); // queued behind the first: 30 to 50
    recording.callerAudio(bytes(70, SILENCE)); // the line reaches 80: one chunk is complete
    await recording.finish();
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ seq: 0, frames: 80 });
    expect(channels().left).toBe('C'.repeat(10) + '.'.repeat(70));
    expect(channels().right).toBe('.'.repeat(10) + 'A'.repeat(40) + '.'.repeat(30));
  });

  it('starts a later reply where the line is, not where the last one ended', async () => {
    const { recording, channels } = recorder();
    recording.agentAudio(bytes(10, AGENT));
    recording.callerAudio(bytes(30, CALLER));
    recording.agentAudio(bytes(10, AGENT));
    recording.callerAudio(bytes(10, SILENCE));
    await recording.finish();
    expect(channels().right).toBe('A'.repeat(10) + '.'.repeat(20) + 'A'.repeat(10));
  });

  it('drops what a clear dropped: the agent is cut where the line was', async () => {
    const { recording, channels } = recorder();
    recording.agentAudio(bytes(60, AGENT)); // a long reply, queued on the line
    recording.callerAudio(bytes(25, CALLER)); // the caller speaks over it
    recording.cleared();
    recording.callerAudio(bytes(15, CALLER));
    await recording.finish();
    expect(channels()).toEqual({ left: 'C'.repeat(40), right: 'A'.repeat(25) + '.'.repeat(15) });
  });

  it("keeps a reply queued across a chunk's end for the next chunk, and ends where the caller's audio ends", async () => {
    const { recording, chunks, channels } = recorder();
    recording.callerAudio(bytes(70, SILENCE));
    recording.agentAudio(bytes(30, AGENT)); // 70 to 100: crosses the first chunk's end at 80
    recording.callerAudio(bytes(20, SILENCE)); // the line at 90: the agent's last 10 were never played
    await recording.finish();
    expect(chunks.map((chunk) => chunk.frames)).toEqual([80, 10]);
    expect(channels().right).toBe('.'.repeat(70) + 'A'.repeat(20));
  });

  it('stops at a failed write rather than leave a gap', async () => {
    let writes = 0;
    const stored: RecordingChunk[] = [];
    const { recording, errors } = recorder(async (chunk) => {
      if (++writes === 2) throw new Error('the database is gone');
      stored.push(chunk);
    });
    recording.callerAudio(bytes(80 * 3, CALLER));
    await recording.finish();
    expect(stored.map((chunk) => chunk.seq)).toEqual([0]);
    expect(errors).toHaveLength(1);
  });
});
