import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { MENU_NOTE, SCREENING_NOTE } from '../src/modules/media/pipeline/answerer.ts';
import { beepCase, seeded } from './beep-cases.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';
import { marksOf, speech } from './voice-line.ts';

// Issue 40, item 3: who answered, heard on the call itself (the voicemail's beep, an assistant's or
// a menu's words), stored on the call log, written into the dial's compliance record, and acted on.
let voice: TwilioVoice;

beforeAll(async () => {
  voice = await startTwilioVoice();
});
afterAll(() => voice.close());

/** A voicemail's beep on the line: 1 kHz for 400 ms after a short pause, under the line's noise. */
const beep = () =>
  beepCase(Buffer.alloc(800, 0xff), { frequencyHz: 1000, lengthMs: 400, levelDb: -12, snrDb: 30, pauseMs: 200 }, seeded(3)).audio;

const hangUpOf = (placed: PlacedCall) =>
  until('the hang-up', () =>
    voice.twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
  );

async function endedCall(placed: PlacedCall) {
  expect(await voice.twilio.sendStatus(placed.sid, 'completed', { CallDuration: '20' })).toBe(204);
  return until('the ended call', async () => {
    const got = await voice.getCall(placed);
    return got.status === 'ENDED' ? got : undefined;
  });
}

const answeredRecords = async (placed: PlacedCall & { campaignId: string }) =>
  (
    (await placed.api('GET', `/campaigns/${placed.campaignId}/compliance-records?format=json`)).json() as {
      verdict: string;
      reason: string;
      facts: object;
    }[]
  ).filter((record) => record.verdict === 'answered');

describe('who answered, heard on the call', () => {
  it("leaves the campaign's voicemail after the beep: answeredBy machine, voicemail_left, in the compliance record", async () => {
    const placed = await voice.placedCall(
      {},
      {
        answeringMachine: {
          detect: true,
          onMachine: 'LEAVE_VOICEMAIL',
          voicemailMessage: 'Hi {{name|there}}, the clinic called about your visit.',
        },
      },
    );
    voice.deepgram.script();
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(beep());
    await hangUpOf(placed);
    expect(voice.elevenlabs.speech.at(-1)!.body).toMatchObject({ text: 'Hi Ana, the clinic called about your visit.' });
    const call = await endedCall(placed);
    expect(call).toMatchObject({ answeredBy: 'machine', endReason: 'voicemail_left', outcome: 'UNANSWERED' });
    expect(call.transcript.at(-1)).toMatchObject({ role: 'agent', text: 'Hi Ana, the clinic called about your visit.', by: 'voicemail' });
    expect(await answeredRecords(placed)).toEqual([
      expect.objectContaining({ reason: 'machine', facts: { callId: placed.callId, attempt: 1, detectedBy: 'beep' } }),
    ]);
    const verified = (await placed.api('GET', '/compliance/records/verify')).json();
    expect(verified).toMatchObject({ valid: true });
  });

  it('hangs up on the beep to try again (HANG_UP_AND_RETRY): answering_machine, the VOICEMAIL retry rule', async () => {
    const placed = await voice.placedCall(
      {},
      { answeringMachine: { detect: true }, maxAttempts: 2, retryRules: { VOICEMAIL: { afterMinutes: 45 } } },
    );
    voice.deepgram.script();
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(beep());
    await hangUpOf(placed);
    const call = await endedCall(placed);
    expect(call).toMatchObject({ answeredBy: 'machine', endReason: 'answering_machine', outcome: 'UNANSWERED' });
    const contacts = (await placed.api('GET', `/campaigns/${placed.campaignId}/contacts?limit=10`)).json();
    const ana = contacts.data.find(
      (contact: { contactId: string; name?: string }) => contact.name === 'Ana' || contact.contactId === call.contactId,
    );
    expect(ana).toMatchObject({ status: 'PENDING' });
    expect(Date.parse(ana.nextAttemptAt) - Date.parse(call.endedAt)).toBe(45 * 60_000);
  });

  it('tells a call-screening assistant who calls and why, then a person answers: call_screening, then human', async () => {
    const placed = await voice.placedCall();
    const screening =
      "Hi, the person you're calling is using a screening service from Google. Go ahead and say your name and why you're calling.";
    voice.deepgram.script(
      ...utterance(screening, { startsAfterBytes: 160, endsAfterBytes: 1600 }),
      ...utterance('Hello, this is Ana.', { startsAfterBytes: 3200, endsAfterBytes: 4000 }),
    );
    voice.chat.script(
      { kind: 'stream', text: ['This is the clinic, calling about your visit on Tuesday.'] },
      { kind: 'stream', text: ['Hi Ana!'] },
    );
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    await until('the answer to the assistant', () =>
      voice.elevenlabs.speech.some((s) => s.body.text?.startsWith('This is the clinic, calling') === true),
    );
    expect(voice.chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: `${screening} ${SCREENING_NOTE}` });
    await until('call_screening', async () => ((await voice.getCall(placed)).answeredBy === 'call_screening' ? true : undefined));
    await until('the marks', () => stream.received.at(-1)?.event === 'mark');
    await stream.sendAudio(speech(2400));
    await until('a person', async () => ((await voice.getCall(placed)).answeredBy === 'human' ? true : undefined));
    await until('the answer to the person', () => voice.elevenlabs.speech.some((s) => s.body.text === 'Hi Ana!'));
    expect((await answeredRecords(placed)).map((record) => record.reason)).toEqual(['call_screening', 'human']);
    stream.stop();
    await stream.closed;
  });

  it('knows a phone menu: phone_menu, the model told to choose with press_digits', async () => {
    const placed = await voice.placedCall();
    const menu = 'Thank you for calling Acme. For sales, press 1. For support, press 2.';
    voice.deepgram.script(...utterance(menu, { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    voice.chat.script({ kind: 'stream', text: ['One moment.'] });
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    await until('the model asked', () => voice.chat.received.some((r) => JSON.stringify(r.body.messages).includes('For sales, press 1')));
    expect(voice.chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: `${menu} ${MENU_NOTE}` });
    await until('phone_menu', async () => ((await voice.getCall(placed)).answeredBy === 'phone_menu' ? true : undefined));
    stream.stop();
    await stream.closed;
    // No person ever came on: not answered, tried again by the UNANSWERED rule.
    expect((await endedCall(placed)).outcome).toBe('UNANSWERED');
  });
});
