/**
 * Silence alone (the behaviour before the detectors): whatever was said, the turn is over once the
 * caller has been silent VOICE_END_OF_SPEECH_MS. The bench's baseline.
 */
import { holdUntil, type TurnDetector, type TurnDetectorSettings } from '../types.ts';

export function silenceDetector(settings: Pick<TurnDetectorSettings, 'endOfSpeechMs'>): TurnDetector {
  return { decide: (turn) => ({ holdMs: holdUntil(settings.endOfSpeechMs, turn), reason: 'silence' }) };
}
