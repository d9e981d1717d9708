import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { MENU_NOTE, SCREENING_NOTE } from '../src/modules/media/pipeline/answerer.ts';
import { mulawToPcm16, pcm16Samples } from '../src/platform/audio.ts';
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

/** The keys in line audio: each 100 ms stretch of tone read by its strongest row and column frequency (Goertzel). */
function keysIn(audio: Buffer): string[] {
  const samples = pcm16Samples(mulawToPcm16(audio));
  const power = (from: number, hz: number) => {
    const coefficient = 2 * Math.cos((2 * Math.PI * hz) / 8000);
    let [previous, before] = [0, 0];
    for (let i = from; i < from + 800; i++) [previous, before] = [samples[i]! + coefficient * previous - before, previous];
    return previous * previous + before * before - coefficient * previous * before;
  };
  const strongest = (from: number, frequencies: number[]) =>
    frequencies.reduce((best, hz) => (power(from, hz) > power(from, best) ? hz : best));
  const keys: string[] = [];
  for (let from = 0; from + 800 <= samples.length; from += 800) {
    let energy = 0;
    for (let i = from; i < from + 800; i++) energy += samples[i]! * samples[i]!;
    if (energy / 800 < 1e5) continue; // silence between keys
    const row = [697, 770, 852, 941].indexOf(strongest(from, [697, 770, 852, 941]));
    const column = [1209, 1336, 1477, 1633].indexOf(strongest(from, [1209, 1336, 1477, 1633]));
    keys.push(['123A', '456B', '789C', '*0#D'][row]![column]!);
  }
  return keys;
}

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

  it('knows a phone menu: phone_menu, the model told to choose with press_digits, its keys played as tones on the line', async () => {
    const placed = await voice.placedCall({ tools: ['end_call', 'press_digits'] });
    const menu = 'Thank you for calling Acme. For sales, press 1. For support, press 2.';
    voice.deepgram.script(...utterance(menu, { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    voice.chat.script(
      { kind: 'stream', text: [], toolCalls: [{ id: 'keys_1', name: 'press_digits', arguments: ['{"digits":"2w9"}'] }] },
      { kind: 'stream', text: [] },
    );
    const stream = await voice.connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    const asked = await until('the model asked', () =>
      voice.chat.received.find((r) => JSON.stringify(r.body.messages).includes('For sales, press 1')),
    );
    expect(asked.body.messages.at(-1)).toEqual({ role: 'user', content: `${menu} ${MENU_NOTE}` });
    await until('phone_menu', async () => ((await voice.getCall(placed)).answeredBy === 'phone_menu' ? true : undefined));
    // Twilio cannot press keys while the stream runs: they went down the stream as tones, 2 then (a pause) 9.
    await until('the keys pressed', () =>
      JSON.stringify(voice.chat.received.at(-1)!.body.messages).includes('Pressed 2w9.') ? true : undefined,
    );
    const tones = Buffer.from(stream.received.filter((m) => m.event === 'media').at(-1)!.media!.payload, 'base64');
    expect(keysIn(tones)).toEqual(['2', '9']);
    expect(voice.twilio.requests.filter((r) => r.path.endsWith(`/Calls/${placed.sid}.json`))).toHaveLength(0);
    stream.stop();
    await stream.closed;
    // No person ever came on: not answered, tried again by the UNANSWERED rule.
    expect((await endedCall(placed)).outcome).toBe('UNANSWERED');
  });
});
