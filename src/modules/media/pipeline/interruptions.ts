/**
 * Interruptions that are meant. Turn detection says the caller is talking and whether it is speech
 * (`caller_speaking {interrupts}`); this stage, between it and the conversation, decides whether
 * that speech stops an agent who is speaking. It does not when it is:
 *
 * - a backchannel: the caller only says they are listening ("uh-huh", "yeah", "right", "mm"; a
 *   list per language), or
 * - a sound without words (a cough, a breath): the recogniser found no words in it, or
 * - the agent's own voice coming back (a speakerphone's echo): the words heard are those of the
 *   sentences being played.
 *
 * Anything else interrupts at once, on the words that show it (a streaming recogniser's interim
 * words: "yeah, but…" interrupts at "but"). An utterance that began while the agent spoke and
 * turned out to be a sound or an echo is not a turn: the agent goes on, and does not answer it
 * afterwards; nor is a backchannel, unless the agent had finished by the time it ended (then it
 * is an answer, "yes" to the agent's question). An utterance recogniser gives no words until the
 * caller stops, so a voice held longer than a backchannel (`LONG_VOICE_MS` of the caller's audio
 * above the voice's level) interrupts before its words are known.
 *
 * The stage learns what it needs from the line through its observer (frames.ts): the recogniser's
 * words as they enter turn detection, and the sentences as they enter synthesis (a sentence not yet
 * heard nor cleared: the agent is speaking, as the conversation's barge-in reckons it).
 */
import { rmsLevel, type AudioFormat } from '../../../platform/audio.ts';
import type { Spoken } from './frames.ts';
import type { Observer, Stage, StageLink } from './pipeline.ts';

/**
 * What callers say to show they are listening, by language (the agent's language's first part),
 * each a phrase of normalised words (`wordsOf`). An utterance made only of these, repeated or
 * joined ("yeah, yeah", "okay right"), is a backchannel.
 */
export const BACKCHANNELS: Readonly<Record<string, readonly string[]>> = {
  en: [
    'uh-huh',
    'uh huh',
    'uhhuh',
    'mhm',
    'mm-hmm',
    'mm hmm',
    'mmhmm',
    'mm',
    'mmm',
    'hmm',
    'hm',
    'uh',
    'um',
    'ah',
    'oh',
    'aha',
    'yeah',
    'yes',
    'yep',
    'yup',
    'yea',
    'ya',
    'right',
    'okay',
    'ok',
    'k',
    'sure',
    'alright',
    'all right',
    'i see',
    'got it',
    'i got it',
    'gotcha',
    'cool',
    'great',
    'nice',
    'good',
    'wow',
    'really',
    'exactly',
    'true',
    'totally',
    'of course',
    'makes sense',
    'that makes sense',
    'sounds good',
    'i know',
    'indeed',
    'fine',
    'go on',
    'go ahead',
    'i hear you',
  ],
  es: [
    'sí',
    'si',
    'ajá',
    'aja',
    'mhm',
    'mm',
    'vale',
    'claro',
    'ya',
    'bueno',
    'exacto',
    'entiendo',
    'ok',
    'okay',
    'ah',
    'eh',
    'correcto',
    'de acuerdo',
    'ya veo',
  ],
  fr: [
    'oui',
    'ouais',
    'mhm',
    'mm',
    'hm',
    "d'accord",
    'ok',
    'okay',
    'ah',
    'bon',
    'voilà',
    'exactement',
    'je vois',
    'tout à fait',
    'bien sûr',
    'euh',
  ],
  de: [
    'ja',
    'jaja',
    'mhm',
    'mm',
    'hm',
    'aha',
    'genau',
    'okay',
    'ok',
    'klar',
    'stimmt',
    'richtig',
    'achso',
    'ach so',
    'gut',
    'alles klar',
    'äh',
  ],
  pt: ['sim', 'aham', 'uhum', 'mhm', 'mm', 'tá', 'ta', 'certo', 'claro', 'entendi', 'beleza', 'ok', 'okay', 'ah', 'pois', 'isso', 'exato'],
  it: ['sì', 'si', 'mhm', 'mm', 'certo', 'ok', 'okay', 'esatto', 'capito', 'vero', 'va bene', 'ah', 'già', 'giusto', 'ecco'],
};

/** A voice held this long (an utterance recogniser's caller, words not yet known) is more than a backchannel or a cough. */
export const LONG_VOICE_MS = 1000;
/** Louder than this (-40 dBFS, as the recording's tests reckon a voice) is voice, not the line's hiss. */
const VOICE_LEVEL = 328;
/** Of the words heard, at least this share found in order among the agent's recent words: its own voice coming back. */
const ECHO_SHARE = 0.75;
/** The agent's sentences an echo may come from: the one playing and those just before it. */
const ECHO_SENTENCES = 3;

/** An utterance's words, lowercased, without punctuation or the recogniser's notes of sounds ("[cough]", "(coughs)"). */
export function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/\[[^\]]*\]|\([^)]*\)|\*[^*]*\*/g, ' ')
    .replace(/[^\p{L}\p{N}'\- ]+/gu, ' ')
    .split(/\s+/)
    .map((word) => word.replace(/^['-]+|['-]+$/g, ''))
    .filter(Boolean);
}

/** The backchannel phrases of a language (BCP-47 tag), longest first; English's for a language without a list. */
function backchannelsOf(language: string): string[][] {
  const phrases = BACKCHANNELS[language.toLowerCase().split('-')[0]!] ?? BACKCHANNELS.en!;
  return phrases.map((phrase) => phrase.split(' ')).sort((a, b) => b.length - a.length);
}

/**
 * Whether `words` are backchannel phrases only (at most four words: longer is saying something).
 * `unfinished`: the words are still coming (interim), so the last may begin a phrase ("I" of "I see").
 */
function isBackchannel(words: string[], phrases: string[][], unfinished: boolean): boolean {
  if (words.length === 0 || words.length > 4) return false;
  for (let at = 0; at < words.length;) {
    const phrase = phrases.find((candidate) => candidate.every((word, index) => words[at + index] === word));
    if (!phrase) {
      const rest = words.slice(at);
      return (
        unfinished && phrases.some((candidate) => candidate.length > rest.length && rest.every((word, index) => candidate[index] === word))
      );
    }
    at += phrase.length;
  }
  return true;
}

/**
 * Whether the words heard are the agent's own (`said`), in order, allowing the recogniser's slips:
 * most of them (`ECHO_SHARE`), or all but one of a few. `unfinished`: interim words, which may
 * still turn out an echo while at most one of them is not the agent's.
 */
function isEcho(words: string[], said: string[], unfinished: boolean): boolean {
  if (words.length === 0 || said.length === 0) return false;
  let at = 0;
  let found = 0;
  for (const word of words) {
    const index = said.indexOf(word, at);
    if (index < 0) continue;
    found += 1;
    at = index + 1;
  }
  const missed = words.length - found;
  if (unfinished) return found >= 1 && missed <= 1;
  return found / words.length >= ECHO_SHARE || (found >= 2 && missed <= 1);
}

/** What the caller said over the agent amounts to: no interruption (and why), or one. */
export type Heard = 'sound' | 'backchannel' | 'echo' | 'interruption';

/** Reads what was heard over the agent's `said` sentences; `unfinished`: interim words, more to come. */
export function classifyOverAgent(text: string, said: string[], language: string, unfinished = false): Heard {
  const words = wordsOf(text);
  if (words.length === 0) return 'sound';
  if (isBackchannel(words, backchannelsOf(language), unfinished)) return 'backchannel';
  if (isEcho(words, wordsOf(said.join(' ')), unfinished)) return 'echo';
  return 'interruption';
}

export interface InterruptionsOptions {
  language: string;
  /** The line's format: the caller's audio is measured in it. */
  format: AudioFormat;
  /** An utterance over the agent that did not interrupt, and why (logged; counted by the bench). */
  ignored?(heard: Exclude<Heard, 'interruption'>, text: string): void;
}

export interface Interruptions {
  /** Watches the line: the recogniser's words, the agent's sentences. Give it to the pipeline. */
  observe: Observer;
  /** The stage, added between turn detection and the conversation. */
  stage(link: StageLink): Stage;
}

/** One utterance of the caller, as the stage follows it. */
interface Utterance {
  finals: string[];
  interim: string;
  /** The recogniser said it is over: the next words begin another. */
  ended: boolean;
  /** It began while the agent was speaking (undefined: not yet decided). */
  overAgent?: boolean;
  /** It has interrupted the agent. */
  interrupted: boolean;
  /** Turn detection said it is speech before any words (an utterance recogniser's voice-activity detection). */
  voiceWithoutWords: boolean;
}

const newUtterance = (): Utterance => ({ finals: [], interim: '', ended: false, interrupted: false, voiceWithoutWords: false });

/** Pauses shorter than this within a voice are between its words: the stretch goes on. */
const PAUSE_MS = 400;
/** Stretches of voice that ended longer ago than this (in the caller's audio) are another utterance's. */
const RECENT_MS = 1500;

/**
 * How long the caller's voice has lasted lately, measured on their audio (its level, not words).
 * The voice-activity detection confirms speech a little after the audio it heard passed (it runs
 * in its own thread), so the stretches are kept by the audio's own time, not the moment asked.
 */
function voiceStretches(format: AudioFormat) {
  const bytesPerMs = ((format.encoding === 'mulaw' ? 1 : 2) * format.sampleRate) / 1000;
  /** The caller's audio so far, in ms. */
  let now = 0;
  const stretches: { start: number; end: number }[] = [];
  return {
    // Every frame of every call passes here: nothing is decoded or allocated but a new stretch.
    hear(audio: Buffer): void {
      const ms = audio.length / bytesPerMs;
      if (rmsLevel(audio, format) > VOICE_LEVEL) {
        const last = stretches.at(-1);
        if (last && now - last.end <= PAUSE_MS) last.end = now + ms;
        else stretches.push({ start: now, end: now + ms });
      }
      now += ms;
      // Stretches end in order: the old ones are at the front.
      while (stretches.length && stretches[0]!.end < now - RECENT_MS) stretches.shift();
    },
    longestRecentMs: () => stretches.reduce((longest, stretch) => Math.max(longest, stretch.end - stretch.start), 0),
  };
}

export function interruptions(options: InterruptionsOptions): Interruptions {
  /** The agent's sentences sent down the line, the latest last (only the last few are kept). */
  let sentences: Spoken[] = [];
  let utterance = newUtterance();

  /** The utterance the recogniser's words belong to: a new one once the last ended. */
  const current = () => (utterance.ended ? (utterance = newUtterance()) : utterance);
  const speaking = () => sentences.some((spoken) => !spoken.heard && !spoken.cleared);
  const said = () => sentences.filter((spoken) => !spoken.cleared).map((spoken) => spoken.text);
  const wordsSoFar = () => [...utterance.finals, utterance.interim].join(' ');

  const voice = voiceStretches(options.format);

  return {
    observe(frame) {
      if (frame.type === 'speech_started') current();
      else if (frame.type === 'transcript') {
        const heard = current();
        if (frame.final) {
          if (frame.text.trim()) heard.finals.push(frame.text.trim());
          heard.interim = '';
        } else heard.interim = frame.text;
      } else if (frame.type === 'utterance_end') utterance.ended = true;
      else if (frame.type === 'sentence') sentences = [...sentences, frame.spoken].slice(-ECHO_SENTENCES);
    },
    stage(link) {
      function interrupt(): void {
        utterance.interrupted = true;
        link.down({ type: 'caller_speaking', interrupts: true });
      }
      return {
        name: 'interruptions',
        down: {
          caller_speaking({ interrupts }) {
            const heard = utterance;
            heard.overAgent ??= speaking();
            if (!interrupts || !heard.overAgent || heard.interrupted) return link.down({ type: 'caller_speaking', interrupts });
            const text = wordsSoFar();
            if (!text.trim()) {
              heard.voiceWithoutWords = true;
              if (voice.longestRecentMs() >= LONG_VOICE_MS) return interrupt();
            } else if (classifyOverAgent(text, said(), options.language, true) === 'interruption') return interrupt();
            // Not (yet) an interruption: the caller is talking all the same (the silence clock stops).
            link.down({ type: 'caller_speaking', interrupts: false });
          },
          caller_audio(frame) {
            voice.hear(frame.audio);
            const heard = utterance;
            if (heard.voiceWithoutWords && !heard.interrupted && !heard.ended && voice.longestRecentMs() >= LONG_VOICE_MS && speaking())
              interrupt();
            link.down(frame);
          },
          caller_turn(frame) {
            const heard = utterance;
            utterance = newUtterance();
            if (!heard.overAgent || heard.interrupted) return link.down(frame);
            const verdict = classifyOverAgent(frame.text, said(), options.language);
            // A backchannel the agent finished speaking over is a turn like any other ("yes" to its question).
            if (verdict === 'interruption' || (verdict === 'backchannel' && !speaking())) {
              link.down({ type: 'caller_speaking', interrupts: true });
              return link.down(frame);
            }
            options.ignored?.(verdict, frame.text);
          },
        },
      };
    },
  };
}
