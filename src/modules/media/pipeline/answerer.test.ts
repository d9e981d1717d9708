import { describe, expect, it } from 'vitest';
import { answererOfWords } from './answerer.ts';

describe('who answered, by their words', () => {
  it.each([
    ["Hi, the person you're calling is using a screening service from Google, and will get a copy of this conversation.", 'call_screening'],
    ["Go ahead and say your name and why you're calling.", 'call_screening'],
    ["Hi, if you record your name and reason for calling, I'll see if this person is available.", 'call_screening'],
    ['The person you are calling is using Bixby text call.', 'call_screening'],
    ['Thank you for calling. For billing, press 1. For anything else, press 2.', 'phone_menu'],
    ["If you know your party's extension, dial it now.", 'phone_menu'],
    ['Para español, oprima dos.', 'phone_menu'],
    ["Hi, you've reached Sam. Please leave a message after the tone.", 'voicemail_greeting'],
    ['The number you have dialled is not available. At the beep, record your message.', 'voicemail_greeting'],
    ['Hello?', undefined],
    ['Yes, this is Ana speaking. Who is this?', undefined],
    ['I pressed the wrong button earlier, sorry.', undefined],
  ])('%s → %s', (text, who) => {
    expect(answererOfWords(text)).toBe(who);
  });
});
