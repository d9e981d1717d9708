import { describe, expect, it } from 'vitest';
import type { DownFrame, Frame, Reply, UpFrame } from './frames.ts';
import { PHONE_AUDIO } from '../../../platform/audio.ts';
import { latencyMeter } from './latency.ts';
import { pipeline, type StageLink } from './pipeline.ts';
import { playbackStage } from './playback.ts';
import { sentencesStage } from './sentences.ts';

/** A stage at the bottom of the line that keeps what reaches it. */
function sink(frames: Frame[]) {
  return {
    name: 'sink',
    down: {
      sentence: (frame: DownFrame) => void frames.push(frame),
      reply_end: (frame: DownFrame) => void frames.push(frame),
      interrupt: (frame: DownFrame) => void frames.push(frame),
    },
  };
}

const newReply = (): Reply => ({ sentences: [], silenced: false });

describe('the voice pipeline', () => {
  it('hands a frame to the next stage that handles its type, past those that do not, and shows it to observers as it enters', () => {
    const seen: string[] = [];
    const line = pipeline([(frame, stage) => seen.push(`${frame.type}→${stage}`)]);
    const handled: string[] = [];
    let up!: StageLink;
    line.add((link) => ({
      name: 'top',
      up: { played_out: () => void handled.push('top heard played_out') },
      down: { caller_audio: () => link.down({ type: 'caller_turn', text: 'hi' }) },
    }));
    line.add(() => ({ name: 'deaf', down: { keypad: () => undefined } }));
    line.add((link) => {
      up = link;
      return { name: 'listener', down: { caller_turn: ({ text }) => void handled.push(`listener heard ${text}`) } };
    });
    line.send({ type: 'caller_audio', audio: Buffer.from([1]) });
    up.up({ type: 'played_out', reply: newReply() });
    // Handled by no stage below: dropped at the end of the line.
    line.send({ type: 'utterance_end' });
    expect(handled).toEqual(['listener heard hi', 'top heard played_out']);
    expect(seen).toEqual(['caller_audio→top', 'caller_turn→listener', 'played_out→top']);
  });

  it('cuts the model’s words into sentences, a new answer of the reply starting a sentence of its own, and keeps a line whole', () => {
    const frames: Frame[] = [];
    const line = pipeline();
    line.add((link) => sentencesStage('en', link));
    line.add(() => sink(frames));
    const reply = newReply();
    line.send({ type: 'agent_text', reply, text: 'Dr. Raman sees you at ten. Bring', round: 0 });
    line.send({ type: 'agent_text', reply, text: ' your card', round: 0 });
    line.send({ type: 'agent_text', reply, text: 'It is booked.', round: 1 });
    line.send({ type: 'agent_line', reply, text: 'Anything else? I can help.' });
    line.send({ type: 'reply_end', reply });
    const said = frames.flatMap((frame) => (frame.type === 'sentence' ? [[frame.spoken.text, frame.spoken.round, frame.spoken.mark]] : []));
    expect(said).toEqual([
      ['Dr. Raman sees you at ten.', 0, 'm1'],
      ['Bring your card', 0, 'm2'],
      ['It is booked.', 1, 'm3'],
      ['Anything else? I can help.', -1, 'm4'],
    ]);
    expect(reply.sentences.map((spoken) => spoken.mark)).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect(frames.at(-1)).toEqual({ type: 'reply_end', reply });
  });

  it('plays out a reply once its last sentence’s mark comes back, ignores the marks of cleared audio, and clears on an interruption', () => {
    const sent: string[] = [];
    const ups: UpFrame[] = [];
    const line = pipeline();
    line.add(() => ({ name: 'top', up: { played_out: (frame) => void ups.push(frame) } }));
    const playback = line.add((link) =>
      playbackStage(
        {
          format: { encoding: 'mulaw', sampleRate: 8000 },
          play: (audio) => sent.push(`audio ${audio.length}`),
          mark: (name) => sent.push(`mark ${name}`),
          clear: () => sent.push('clear'),
        },
        link,
      ),
    );
    const reply = newReply();
    const first = { text: 'One.', round: -1, mark: 'm1', heard: false, cleared: false };
    const second = { ...first, text: 'Two.', mark: 'm2' };
    reply.sentences.push(first, second);
    line.send({ type: 'agent_audio', audio: Buffer.alloc(160) });
    line.send({ type: 'sentence_sent', spoken: first });
    line.send({ type: 'sentence_sent', spoken: second });
    line.send({ type: 'reply_end', reply });
    playback.marked('m1');
    expect([first.heard, ups.length]).toEqual([true, 0]);
    playback.marked('m2');
    expect(ups).toEqual([{ type: 'played_out', reply }]);

    const cut = newReply();
    const third = { text: 'Three.', round: -1, mark: 'm3', heard: false, cleared: false };
    cut.sentences.push(third);
    line.send({ type: 'sentence_sent', spoken: third });
    line.send({ type: 'reply_end', reply: cut });
    third.cleared = true;
    line.send({ type: 'interrupt' });
    playback.marked('m3');
    expect(third.heard).toBe(false);
    expect(ups).toEqual([
      { type: 'played_out', reply },
      { type: 'played_out', reply: cut },
    ]);
    expect(sent).toEqual(['audio 160', 'mark m1', 'mark m2', 'mark m3', 'clear']);
  });

  it('times each answer from the caller’s last sound, on the line’s clock, to its first audio handed to the line', () => {
    let now = 0;
    const meter = latencyMeter(PHONE_AUDIO, () => now);
    const frame = (loud: boolean) => {
      // 20 ms of μ-law: 0xFF is silence, 0x80 the loudest sample.
      meter.observe({ type: 'caller_audio', audio: Buffer.alloc(160, loud ? 0x80 : 0xff) }, 'recognition');
      now += 20;
    };
    const reply = newReply();
    const spoken = { text: 'Hi there.', round: 0, mark: 'm1', heard: false, cleared: false };
    for (let i = 0; i < 10; i++) frame(true); // 200 ms of speech: the last sound ends at 200 ms of the line
    for (let i = 0; i < 5; i++) frame(false); // 100 ms of silence, and 20 ms since its last frame came
    meter.observe({ type: 'transcript', text: 'hello', final: true }, 'turn detection');
    now += 10; // 130 ms after the last sound
    meter.observe({ type: 'caller_turn', text: 'hello' }, 'conversation');
    frame(false);
    frame(false); // the line's clock runs on with the caller's frames
    now += 5;
    meter.observe({ type: 'agent_text', reply, text: 'Hi', round: 0 }, 'sentences');
    meter.observe({ type: 'agent_text', reply, text: ' there.', round: 0 }, 'sentences');
    meter.observe({ type: 'sentence', reply, spoken }, 'synthesis');
    now += 40;
    meter.observe({ type: 'agent_audio', audio: Buffer.alloc(160) }, 'playback');
    now += 20;
    meter.observe({ type: 'agent_audio', audio: Buffer.alloc(160) }, 'playback');
    expect(meter.of(reply)).toEqual({ callerStoppedMs: 200, endOfTurnMs: 130, sttFinalMs: 120, firstTokenMs: 165, heardMs: 205 });
  });

  it('does not time a reply that answers no sound of the caller (the opening, a keypad press in silence)', () => {
    const meter = latencyMeter(PHONE_AUDIO, () => 0);
    const reply = newReply();
    meter.observe({ type: 'caller_audio', audio: Buffer.alloc(160, 0xfe) }, 'recognition'); // the line's hiss
    meter.observe({ type: 'caller_turn', text: 'hello' }, 'conversation');
    meter.observe({ type: 'agent_line', reply, text: 'Hello.' }, 'sentences');
    meter.observe(
      { type: 'sentence', reply, spoken: { text: 'Hello.', round: -1, mark: 'm1', heard: false, cleared: false } },
      'synthesis',
    );
    meter.observe({ type: 'agent_audio', audio: Buffer.alloc(160) }, 'playback');
    expect(meter.of(reply)).toBeUndefined();
  });
});
