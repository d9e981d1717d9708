/**
 * What callers say over an agent, as a streaming recogniser reports it (interim words one by one,
 * then the final words and the end of the utterance), and a line that plays the agent's sentences:
 * the cases the interruption stage is measured on (its unit test and `npm run bench:interruptions`).
 */
import { PHONE_AUDIO } from '../src/platform/audio.ts';
import type { DownFrame, Reply, Spoken } from '../src/modules/media/pipeline/frames.ts';
import { interruptions } from '../src/modules/media/pipeline/interruptions.ts';
import { pipeline } from '../src/modules/media/pipeline/pipeline.ts';
import { turnsStage } from '../src/modules/media/pipeline/turns.ts';

/** What the agent is saying when the caller speaks: the second sentence is playing. */
export const AGENT_SAYS = [
  'Your appointment with Doctor Raman is on Tuesday at ten in the morning.',
  'Please bring your insurance card and arrive fifteen minutes early.',
  'If you need to change it, call the clinic before Monday evening.',
];

export const BACKCHANNELS = [
  'Uh-huh.',
  'Uh huh',
  'Mm-hmm.',
  'Mhm.',
  'Mm.',
  'Mmm.',
  'Hmm.',
  'Yeah.',
  'Yeah, yeah.',
  'Yes.',
  'Yep.',
  'Yup.',
  'Right.',
  'Right, right.',
  'Okay.',
  'OK.',
  'Ok, yeah.',
  'Sure.',
  'Sure, sure.',
  'I see.',
  'Oh, I see.',
  'Got it.',
  'Okay, got it.',
  'Oh, okay.',
  'Alright.',
  'All right.',
  'Cool.',
  'Oh.',
  'Great.',
  'Wow.',
  'Really?',
  'Exactly.',
  'Of course.',
  'Yeah, right.',
  'Mm, yeah.',
  'Uh-huh, yeah.',
  'Yes, yes.',
  'Right, okay.',
  'Makes sense.',
  'Sounds good.',
  'Gotcha.',
  'Okay, okay.',
  'Mhm, right.',
  'Yeah, sure.',
  'Ah, okay.',
  'True.',
  'Uh, yeah.',
  'Oh, right.',
  'Good.',
  'Fine.',
];

export const INTERRUPTIONS = [
  'Wait, how much does it cost?',
  "Sorry, I'm not interested.",
  'No.',
  'No, stop.',
  'Hold on.',
  'Can you repeat that?',
  'Yeah, but I already paid.',
  'Okay, but when?',
  'Stop calling me.',
  'Who is this?',
  'What?',
  'Excuse me?',
  'I have a question.',
  "Actually, I'd like to cancel.",
  'Hang on a second.',
  'Not now, please.',
  'Sorry?',
  'Hello?',
  'Is this a robot?',
  'Can I speak to a person?',
  'How much?',
  'When?',
  'Where are you?',
  "That's wrong.",
  "I don't need it.",
  'Yes, please move it to Wednesday.',
  'Right, and the price?',
  "Okay so what's next?",
  'Please call back later.',
  'Speak slower, please.',
  'Wrong number.',
  'Who gave you my number?',
  'I can’t hear you.',
  'Yeah no, that does not work for me.',
  'Hmm, can I pay by card?',
  'Uh, who are you?',
  'Mm, I have to go.',
  'Okay wait.',
  'Sure, but not Tuesday.',
  'Goodbye.',
];

/** The agent's words coming back through a speakerphone, as a recogniser hears them: a stretch of the sentence playing, or the one before, with slips. */
export const ECHOES = [
  'please bring your insurance card',
  'bring your insurance card and arrive',
  'arrive fifteen minutes early',
  'and arrive fifteen minutes',
  'please bring your insurance',
  'bring your insurance cart and arrive fifteen',
  'your insurance card and arrive fifteen minutes early',
  'on tuesday at ten in the morning',
  'doctor raman is on tuesday',
  'please ring your insurance card',
];

/** A cough, a breath, a sound: no words, or only the recogniser's note of a sound. */
export const SOUNDS = ['', '[cough]', '(coughs)', '*coughing*', '[inaudible]', '(breathing)'];

export interface CaseResult {
  /** The agent was stopped (an interrupting `caller_speaking` reached the conversation). */
  stopped: boolean;
  /** Of the caller's words, how many had been heard when it stopped (0: before any). */
  wordsBeforeStop: number;
  /** The utterance reached the conversation as a turn. */
  turn: boolean;
}

/**
 * Runs one utterance said over the agent through turn detection and the interruption stage, as a
 * streaming recogniser reports it: speech started, each word's interim words, the final words, the
 * end of the utterance.
 */
export function sayOverAgent(text: string, language = 'en-US'): CaseResult {
  const meant = interruptions({ language, format: PHONE_AUDIO });
  const line = pipeline([meant.observe]);
  const result: CaseResult = { stopped: false, wordsBeforeStop: 0, turn: false };
  let heardWords = 0;
  // The recogniser's end of an utterance is the turn's end here (no end-of-turn detector waits).
  line.add((link) => turnsStage({ decide: () => ({ holdMs: 0, reason: 'the recogniser' }) }, link));
  line.add(meant.stage);
  line.add(() => ({
    name: 'conversation',
    down: {
      caller_speaking({ interrupts }: Extract<DownFrame, { type: 'caller_speaking' }>) {
        if (interrupts && !result.stopped) Object.assign(result, { stopped: true, wordsBeforeStop: heardWords });
      },
      caller_turn: () => void (result.turn = true),
    },
  }));
  // The agent's reply on its way: the first sentence heard, the second playing, the third queued.
  line.add(() => ({ name: 'synthesis', down: { sentence: () => undefined } }));
  const reply: Reply = { sentences: [], silenced: false };
  AGENT_SAYS.forEach((sentence, index) => {
    const spoken: Spoken = { text: sentence, round: 0, mark: `m${index + 1}`, heard: index === 0, cleared: false };
    reply.sentences.push(spoken);
    line.send({ type: 'sentence', reply, spoken });
  });
  line.send({ type: 'speech_started' });
  const words = text.split(' ').filter(Boolean);
  words.forEach((_, index) => {
    heardWords = index + 1;
    line.send({ type: 'transcript', text: words.slice(0, index + 1).join(' '), final: false });
  });
  line.send({ type: 'transcript', text, final: true });
  line.send({ type: 'utterance_end' });
  return result;
}

/** Of the cases, the share the agent stopped for, and the mean words heard before it did. */
export function stopRate(cases: string[], language?: string) {
  const results = cases.map((text) => sayOverAgent(text, language));
  const stopped = results.filter((result) => result.stopped);
  return {
    cases: cases.length,
    stopped: stopped.length,
    rate: stopped.length / cases.length,
    meanWordsBeforeStop: stopped.length ? stopped.reduce((sum, result) => sum + result.wordsBeforeStop, 0) / stopped.length : 0,
    turns: results.filter((result) => result.turn).length,
  };
}
