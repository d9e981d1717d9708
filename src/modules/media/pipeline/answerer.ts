/**
 * Who answered an outgoing call, heard on the line itself: a voicemail's beep in the caller's
 * audio (beep.ts), or the words of what answered. A call-screening assistant (Pixel's Call Screen,
 * iOS's screening, Samsung's Bixby) asks who is calling and why; a phone menu offers keys to press;
 * a voicemail greeting asks for a message after the tone; anything else is a person. Each verdict
 * goes down once (`answered_by`) for the conversation to act on: the campaign's voicemail after
 * the beep, the assistant told who calls and why, the menu navigated with `press_digits`.
 *
 * What an assistant or a menu says reaches the model with a note of what it is; a voicemail
 * greeting is not answered (the voicemail is left after the beep).
 */
import { mulawToPcm16, pcm16Samples, type AudioFormat } from '../../../platform/audio.ts';
import type { AnsweredBy } from '../../../providers/types.ts';
import { beepDetector } from '../beep.ts';
import type { Stage, StageLink } from './pipeline.ts';

/** What a call-screening assistant says (Google's Call Screen, Apple's and Samsung's screening). */
const SCREENING = [
  /\busing (?:a )?(?:call )?screening service\b/,
  /\bscreening (?:this|your|the) call\b/,
  /\bthis call is being screened\b/,
  /\b(?:say|state|record|tell me) your name and (?:the |your )?(?:reason|why you(?:'re| are) calling|what you(?:'re| are) calling about)\b/,
  /\bwho(?:'s| is) calling and (?:why|what)\b/,
  /\bgoogle assistant\b.*\b(?:calling|call)\b/,
  /\bbixby text call\b/,
  /\bwill get a copy of this conversation\b/,
  /\bsee if (?:this person|they are|they're|he is|she is) available\b/,
];
/** What a phone menu says. */
const MENU = [
  /\b(?:press|dial|push|select|oprima|marque|pulse|appuyez sur|drücken sie)\s+(?:el |la )?(?:\d|one|two|three|four|five|six|seven|eight|nine|zero|uno|dos|tres|cuatro|cinco|star|pound|the (?:star|pound|hash) key)\b/,
  /\bfor [\w ]{2,40},? (?:press|dial|say)\b/,
  /\b(?:enter|dial) (?:your|the) (?:party's )?extension\b/,
  /\bknow (?:your|the) party's extension\b/,
  /\bmain menu\b/,
  /\bmenu options\b/,
];
/** What a voicemail greeting says. */
const VOICEMAIL_GREETING = [
  /\bleave (?:me |us )?(?:a |your )?(?:message|name and number)\b/,
  /\b(?:after|at) the (?:tone|beep)\b/,
  /\brecord your message\b/,
  /\b(?:voice ?mail|mailbox)\b/,
  /\b(?:is|are) not available\b.*\b(?:message|tone|beep)\b/,
];

/** What answered, by its words: an assistant, a menu, a voicemail's greeting, or (undefined) a person. */
export function answererOfWords(text: string): 'call_screening' | 'phone_menu' | 'voicemail_greeting' | undefined {
  const words = text.toLowerCase().replace(/[’‘]/g, "'");
  if (SCREENING.some((phrase) => phrase.test(words))) return 'call_screening';
  if (MENU.some((phrase) => phrase.test(words))) return 'phone_menu';
  if (VOICEMAIL_GREETING.some((phrase) => phrase.test(words))) return 'voicemail_greeting';
  return undefined;
}

/** What the model is told with an assistant's first words. */
export const SCREENING_NOTE =
  '(An automatic call-screening assistant answered, not the person. Say who you are and why you are calling in one or two short sentences, then wait for the person.)';
/** What the model is told with a menu's first words. */
export const MENU_NOTE =
  '(A phone menu answered, not a person. To choose an option, call press_digits with the keys to press; say nothing to the menu. Choose what reaches the person or the department you need; when nothing does, end the call.)';

export interface AnswererOptions {
  format: AudioFormat;
}

export function answererStage(options: AnswererOptions, link: StageLink): Stage {
  const detector = beepDetector(options.format.sampleRate);
  /** The verdicts sent so far; a verdict goes down once. */
  const sent = new Set<AnsweredBy>();
  const answered = (who: AnsweredBy, heardBy: 'beep' | 'words') => {
    if (sent.has(who)) return false;
    sent.add(who);
    link.down({ type: 'answered_by', who, heardBy });
    return true;
  };

  return {
    name: 'answerer',
    down: {
      caller_audio(frame) {
        // Once a person or a machine is known, a beep decides nothing: the detector rests (its CPU is per call).
        if (!sent.has('machine') && !sent.has('human')) {
          const samples = pcm16Samples(options.format.encoding === 'mulaw' ? mulawToPcm16(frame.audio) : frame.audio);
          if (detector.push(samples)) answered('machine', 'beep');
        }
        link.down(frame);
      },
      caller_turn(frame) {
        // A machine beeped: what it says after is not for the agent.
        if (sent.has('machine')) return;
        const who = answererOfWords(frame.text);
        // A recording: the voicemail is left after its beep, not answered.
        if (who === 'voicemail_greeting') return;
        if (who === undefined) {
          if (!sent.has('human')) answered('human', 'words');
          return link.down(frame);
        }
        const first = answered(who, 'words');
        link.down(first ? { type: 'caller_turn', text: `${frame.text} ${who === 'call_screening' ? SCREENING_NOTE : MENU_NOTE}` } : frame);
      },
    },
  };
}
