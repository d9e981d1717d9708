import { describe, expect, it } from 'vitest';
import { contactScript } from './scripted-contact.ts';

describe("a simulated contact's script", () => {
  it('says plain lines in order, whatever the agent says, then falls silent', () => {
    const script = contactScript(['Hello?', 'Yes, speaking.']);
    expect([script.next('Hi!'), script.next('Anything'), script.next('More')]).toEqual(['Hello?', 'Yes, speaking.', undefined]);
  });

  it('reacts to the words the agent said, each reaction once, before the next plain line', () => {
    const script = contactScript([
      'appointment|booking => Yes, that is me. Where can I park?',
      'Parking => Great, thanks. Bye!',
      'Sorry, could you say that again?',
    ]);
    // Any case, a whole word or phrase: "appointments" is not "appointment", "parking" is "Parking".
    expect(script.next('Hello, a reminder about your appointments.')).toBe('Sorry, could you say that again?');
    expect(script.next('About your APPOINTMENT on Monday.')).toBe('Yes, that is me. Where can I park?');
    expect(script.next('Parking is free behind the clinic.')).toBe('Great, thanks. Bye!');
    // Both reactions said, the plain lines used: nothing left.
    expect(script.next('Your appointment: parking is free.')).toBeUndefined();
  });

  it('takes the first reaction that fits, and a cue of several words as a phrase', () => {
    const script = contactScript(['call back => I will.', 'back => Back where?']);
    expect(script.next('Please call back tomorrow.')).toBe('I will.');
    expect(script.next('Come back.')).toBe('Back where?');
  });
});
