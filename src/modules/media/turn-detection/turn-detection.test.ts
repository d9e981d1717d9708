import { describe, expect, it } from 'vitest';
import type { DownFrame } from '../pipeline/frames.ts';
import { pipeline } from '../pipeline/pipeline.ts';
import { turnsStage, UNCONFIRMED_HOLD_MS, type HoldTimer } from '../pipeline/turns.ts';
import { turnDetectorOf } from './registry.ts';
import type { TurnDetector } from './types.ts';
import { completeness } from './words/index.ts';

const SETTINGS = { format: { encoding: 'mulaw', sampleRate: 8000 }, language: 'en-US', endOfSpeechMs: 600, unfinishedMs: 1500 } as const;

describe('the words detector', () => {
  it.each([
    ['When do you open tomorrow?', 'finished'],
    ['I need a refill of my prescription.', 'finished'],
    ["I'd like to", 'unfinished'],
    // Recognisers punctuate fragments too: the last word outweighs the full stop.
    ["I'd like to.", 'unfinished'],
    ['Can you tell me um.', 'unfinished'],
    ['I was wondering if', 'unfinished'],
    ['My number is', 'unfinished'],
    ['My number is 4 1 5', 'unfinished'],
    ['My number is 415 555.', 'unfinished'],
    ['My number is 4 1 5 5 5 5 0 1 0 0.', 'finished'],
    ['My number is 415-555-0100.', 'finished'],
    ['The zip code is 9 4 1 1 0.', 'finished'],
    ['So the appointment is for...', 'unfinished'],
    ['Well,', 'unfinished'],
    ['yes', 'unknown'],
    ['', 'unknown'],
  ])('%j is %s', (text, verdict) => {
    expect(completeness(text, 'en-US').verdict).toBe(verdict);
  });

  it('knows English words only in English; punctuation and numbers in any language', () => {
    expect(completeness('Je voudrais le', 'fr-FR').verdict).toBe('unknown');
    expect(completeness('Quand ouvrez-vous ?', 'fr-FR').verdict).toBe('finished');
    expect(completeness('Mon numéro est 06 12', 'fr-FR').verdict).toBe('unfinished');
  });

  it('answers a finished turn at once and holds an unfinished one up to the unfinished wait, an unclear one up to the end of speech', () => {
    const words = turnDetectorOf('WORDS', SETTINGS);
    expect(words.decide({ text: 'When do you open?', silenceMs: 200 })).toMatchObject({ holdMs: 0 });
    expect(words.decide({ text: "I'd like to", silenceMs: 200 })).toMatchObject({ holdMs: 1300 });
    expect(words.decide({ text: 'yes', silenceMs: 200 })).toMatchObject({ holdMs: 400 });
    expect(words.decide({ text: "I'd like to", silenceMs: 2000 })).toMatchObject({ holdMs: 0 });
  });

  it('is the default; SILENCE waits the end-of-speech silence whatever was said', () => {
    expect(turnDetectorOf(undefined, SETTINGS).decide({ text: 'When do you open?', silenceMs: 200 })).toMatchObject({ holdMs: 0 });
    const silence = turnDetectorOf('SILENCE', SETTINGS);
    expect(silence.decide({ text: 'When do you open?', silenceMs: 200 })).toMatchObject({ holdMs: 400 });
    expect(silence.decide({ text: "I'd like to", silenceMs: 300 })).toMatchObject({ holdMs: 300 });
  });
});

/** Timers run by hand: `advance` fires those due. */
function steppedTimer(): HoldTimer & { advance(ms: number): void; pending(): number } {
  let now = 0;
  let timers: { at: number; run: () => void; id: number }[] = [];
  let next = 1;
  return {
    set(run, ms) {
      const id = next++;
      timers.push({ at: now + ms, run, id });
      return id;
    },
    clear(handle) {
      timers = timers.filter((timer) => timer.id !== handle);
    },
    advance(ms) {
      now += ms;
      for (const timer of timers.filter((timer) => timer.at <= now)) {
        timers = timers.filter((other) => other !== timer);
        timer.run();
      }
    },
    pending: () => timers.length,
  };
}

function turnLine(detector: TurnDetector = turnDetectorOf('WORDS', SETTINGS)) {
  const timer = steppedTimer();
  const frames: DownFrame[] = [];
  const line = pipeline();
  line.add((link) => turnsStage(detector, link, timer));
  line.add(() => ({
    name: 'conversation',
    down: {
      caller_turn: (frame: DownFrame) => void frames.push(frame),
      caller_speaking: (frame: DownFrame) => void frames.push(frame),
    },
  }));
  const said = (text: string) => {
    line.send({ type: 'speech_started', confirmed: true });
    line.send({ type: 'transcript', text, final: true });
    line.send({ type: 'utterance_end', afterSilenceMs: 200 });
  };
  const turns = () => frames.flatMap((frame) => (frame.type === 'caller_turn' ? [frame.text] : []));
  return { line, timer, frames, said, turns };
}

describe('turn detection on the line', () => {
  it('ends a finished question at the pause, with no wait', () => {
    const { said, turns, timer } = turnLine();
    said('When do you open tomorrow?');
    expect(turns()).toEqual(['When do you open tomorrow?']);
    expect(timer.pending()).toBe(0);
  });

  it('holds an unfinished phrase; the caller going on within the hold makes it one turn', () => {
    const { said, turns, timer } = turnLine();
    said("I'd like to.");
    timer.advance(1299);
    expect(turns()).toEqual([]);
    said('book an appointment for Tuesday.');
    expect(turns()).toEqual(["I'd like to. book an appointment for Tuesday."]);
  });

  it('answers an unfinished phrase once the caller has stayed silent the whole hold', () => {
    const { said, turns, timer } = turnLine();
    said('My number is 4 1 5');
    timer.advance(1299);
    expect(turns()).toEqual([]);
    timer.advance(1);
    expect(turns()).toEqual(['My number is 4 1 5']);
  });

  it('holds a pending turn for a sound not yet confirmed as speech, and decides again when it is dropped', () => {
    const { line, said, turns, timer, frames } = turnLine();
    said("I'd like to");
    timer.advance(1000);
    const speaking = frames.length;
    line.send({ type: 'speech_started', confirmed: false });
    // The detector's first window of voice tells the conversation nothing (its confirmation would).
    expect(frames).toHaveLength(speaking);
    timer.advance(UNCONFIRMED_HOLD_MS - 1);
    expect(turns()).toEqual([]);
    // A cough: dropped, the pause asked about again (its silence counted anew).
    line.send({ type: 'utterance_end' });
    timer.advance(1499);
    expect(turns()).toEqual([]);
    timer.advance(1);
    expect(turns()).toEqual(["I'd like to"]);
  });

  it('lets an unconfirmed sound hold a turn at most a while, so a noise never keeps the caller waiting', () => {
    const { line, said, turns, timer } = turnLine();
    said("I'd like to");
    line.send({ type: 'speech_started' }); // Deepgram's SpeechStarted, which a cough sets off too
    timer.advance(UNCONFIRMED_HOLD_MS);
    expect(turns()).toEqual(["I'd like to"]);
  });

  it("times a held turn by the caller's silence as the recogniser heard it, when it says, not by the wall clock", () => {
    const { line, said, turns, timer } = turnLine();
    line.send({ type: 'silence', ms: 32 });
    said("I'd like to");
    // A detector running behind: the wall clock passes the hold, the audio heard has not.
    timer.advance(5000);
    expect(turns()).toEqual([]);
    expect(timer.pending()).toBe(0);
    line.send({ type: 'silence', ms: 1472 });
    // A sound not yet speech: the silence reports stop while it lasts; it was nothing, and they go on.
    line.send({ type: 'speech_started', confirmed: false });
    line.send({ type: 'silence', ms: 1499 });
    expect(turns()).toEqual([]);
    line.send({ type: 'silence', ms: 1504 });
    expect(turns()).toEqual(["I'd like to"]);
  });

  it('ends a held turn no sooner when the caller goes on before the silence is reached', () => {
    const { line, said, turns } = turnLine();
    said('My number is 4 1 5');
    line.send({ type: 'silence', ms: 900 });
    said('5 5 5 0 1 0 0.');
    expect(turns()).toEqual(['My number is 4 1 5 5 5 5 0 1 0 0.']);
  });

  it('ignores a decision that comes after the caller went on', async () => {
    let answer!: (holdMs: number) => void;
    const slow: TurnDetector = { decide: () => new Promise((resolve) => (answer = (holdMs) => resolve({ holdMs, reason: 'slow' }))) };
    const { said, turns } = turnLine(slow);
    said('Hello?');
    const stale = answer;
    said('Is anyone there?');
    stale(0);
    await Promise.resolve();
    expect(turns()).toEqual([]);
    answer(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(turns()).toEqual(['Hello? Is anyone there?']);
  });

  it('ends the turn at the pause when the detector fails', async () => {
    const failing: TurnDetector = { decide: () => Promise.reject(new Error('model file gone')) };
    const { said, turns } = turnLine(failing);
    said('Hello?');
    await new Promise((resolve) => setImmediate(resolve));
    expect(turns()).toEqual(['Hello?']);
  });

  it("takes a recogniser's own end of turn at once, with its words", () => {
    const { line, turns, timer } = turnLine();
    line.send({ type: 'transcript', text: "I'd like to", final: false });
    line.send({ type: 'end_of_turn', text: "I'd like to book.", eager: false });
    expect(turns()).toEqual(["I'd like to book."]);
    expect(timer.pending()).toBe(0);
  });
});
