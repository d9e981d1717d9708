/**
 * The end-of-turn detectors by the name an agent chooses (`stt.endOfTurn`, default WORDS): a new
 * detector is its folder here and one line below (and its name in the agents' schema).
 */
import type { Config } from '../../../config.ts';
import type { Agent, EndOfTurn } from '../../agents/schemas.ts';
import { silenceDetector } from './silence/index.ts';
import { smartTurnDetector } from './smart-turn/index.ts';
import type { TurnDetector, TurnDetectorSettings } from './types.ts';
import { wordsDetector } from './words/index.ts';

export const DEFAULT_END_OF_TURN: EndOfTurn = 'WORDS';

const DETECTORS: Record<EndOfTurn, (settings: TurnDetectorSettings) => TurnDetector> = {
  WORDS: wordsDetector,
  SILENCE: silenceDetector,
  // An agent saved while the setting was there, on a service started without it: its words decide.
  SMART_TURN: (settings) =>
    settings.smartTurnModel ? smartTurnDetector({ ...settings, smartTurnModel: settings.smartTurnModel }) : wordsDetector(settings),
  // Flux ends the turns itself (end_of_turn); it reports no pause to ask about, and the words would decide one.
  FLUX: wordsDetector,
};

/** A call's detector, made for its line. */
export const turnDetectorOf = (name: EndOfTurn | undefined, settings: TurnDetectorSettings): TurnDetector =>
  DETECTORS[name ?? DEFAULT_END_OF_TURN](settings);

/** The agent's detector with the service's settings for it, as a call's line takes them (voice-call.ts). */
export const turnChoiceOf = (config: Config, agent: Pick<Agent, 'stt'>) => ({
  endOfTurn: agent.stt?.endOfTurn,
  endOfSpeechMs: config.voice.endOfSpeechMs,
  unfinishedMs: config.voice.unfinishedMs,
  ...(config.voice.smartTurnModel ? { smartTurnModel: config.voice.smartTurnModel } : {}),
});
