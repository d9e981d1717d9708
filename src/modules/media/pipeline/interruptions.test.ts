import { describe, expect, it } from 'vitest';
import { AGENT_SAYS, BACKCHANNELS, ECHOES, INTERRUPTIONS, SOUNDS, sayOverAgent, stopRate } from '../../../../test/interruption-cases.ts';
import { classifyOverAgent, wordsOf } from './interruptions.ts';

// Issue 40, item 2: the goals are a backchannel said over the agent stopping it at most 5% of the
// time, and a real interruption every time.
describe('interruptions that are meant', () => {
  it('stops the agent for every real interruption, at the first word that is more than a backchannel', () => {
    const real = stopRate(INTERRUPTIONS);
    expect(real.rate).toBe(1);
    expect(real.turns).toBe(INTERRUPTIONS.length);
    expect(sayOverAgent('Yeah, but I already paid.')).toEqual({ stopped: true, wordsBeforeStop: 2, turn: true });
    expect(sayOverAgent('No.')).toEqual({ stopped: true, wordsBeforeStop: 1, turn: true });
  });

  it('does not stop it for a backchannel, a sound or its own echo (at most 5% of backchannels), and keeps none as a turn', () => {
    const backchannels = stopRate(BACKCHANNELS);
    expect(backchannels.rate).toBeLessThanOrEqual(0.05);
    expect(backchannels.turns).toBe(backchannels.stopped);
    for (const cases of [SOUNDS, ECHOES]) expect(stopRate(cases)).toMatchObject({ stopped: 0, turns: 0 });
  });

  it("knows other languages' backchannels, and English's for a language it has no list of", () => {
    expect(classifyOverAgent('Sí, claro.', [], 'es-ES')).toBe('backchannel');
    expect(classifyOverAgent("Oui, d'accord.", [], 'fr-FR')).toBe('backchannel');
    expect(classifyOverAgent('Ja, genau.', [], 'de-DE')).toBe('backchannel');
    expect(classifyOverAgent('Espera, ¿cuánto cuesta?', [], 'es-ES')).toBe('interruption');
    expect(classifyOverAgent('Uh-huh.', [], 'nl-NL')).toBe('backchannel');
  });

  it('reads words without punctuation or notes of sounds; more than four backchannel words are saying something', () => {
    expect(wordsOf('Uh-huh, [cough] yeah… (laughs) RIGHT!')).toEqual(['uh-huh', 'yeah', 'right']);
    expect(classifyOverAgent('Yeah yeah yeah okay right', [], 'en')).toBe('interruption');
    // An echo is the agent's words in order; the same words shuffled with others are the caller's own.
    expect(classifyOverAgent('arrive fifteen minutes early', AGENT_SAYS, 'en')).toBe('echo');
    expect(classifyOverAgent('why arrive early, I have no card', AGENT_SAYS, 'en')).toBe('interruption');
  });
});
