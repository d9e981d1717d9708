import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { callerSaying, detectorStarted, lineSilence } from './caller-speech.ts';
import { until } from './harness.ts';
import { marksOf, speech, startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';

// Issue 40, item 5: mid-call failover of speech. A Twilio call through the real voice pipeline
// (Twilio's side of the stream, Deepgram, ElevenLabs, the model and an OpenAI-compatible speech
// server as local fakes): when the agent's voice or recogniser fails or stalls, its backup (eSpeak,
// offline and real; the speech server's transcriptions) carries the call on, and the transcript and
// the usage say so.
const STALL_MS = 500;
let voice: TwilioVoice;
let transcriber: Awaited<ReturnType<typeof startFakeSpeech>>;

beforeAll(async () => {
  transcriber = await startFakeSpeech();
  voice = await startTwilioVoice({ SPEECH_API_URL: `${transcriber.url}/v1`, VOICE_FAILOVER_STALL_MS: String(STALL_MS) });
}, 60_000);
afterAll(async () => {
  await voice.close();
  await transcriber.close();
});

const OPENING = 'Hello, this is the clinic. How can I help?';
const ESPEAK_BACKUP = { backup: { tts: { provider: 'ESPEAK' } } };

/** The agent audio Twilio was sent after the `marks`-th mark: the bytes of what the caller heard next. */
function audioAfterMark(placed: { stream: Awaited<ReturnType<TwilioVoice['connect']>> }, marks: number): Buffer {
  const messages = placed.stream.received;
  let seen = 0;
  const audio: Buffer[] = [];
  for (const message of messages) {
    if (message.event === 'mark') seen++;
    else if (message.event === 'media' && seen === marks) audio.push(Buffer.from(message.media!.payload, 'base64'));
  }
  return Buffer.concat(audio);
}

/** The call once ended by Twilio's status callback. */
async function endedCall(placed: PlacedCall) {
  expect(await voice.twilio.sendStatus(placed.sid, 'completed', { CallDuration: '5' })).toBe(204);
  return until('the ended call', async () => {
    const call = await voice.getCall(placed);
    return call.status === 'ENDED' ? call : undefined;
  });
}

describe("an agent's backup voice", () => {
  it('speaks when the voice fails before a sentence, and every sentence after; the transcript and the usage say so', async () => {
    const placed = await voice.placedCall(ESPEAK_BACKUP);
    const agent = (await placed.api('GET', '/agents?limit=1')).json().data[0];
    expect(agent.backup).toEqual({ llm: null, stt: null, tts: { provider: 'ESPEAK', voice: expect.any(String) } });
    voice.elevenlabs.script(
      { kind: 'audio', chunks: [Buffer.alloc(800, 0x10)] },
      { kind: 'error', status: 500, detail: { status: 'internal_error', message: 'The voice service is down.' } },
    );
    voice.deepgram.script(
      ...utterance('When do you open?', { startsAfterBytes: 800, endsAfterBytes: 4000 }),
      ...utterance('And on Sunday?', { startsAfterBytes: 8000, endsAfterBytes: 11_200 }),
    );
    voice.chat.script({ kind: 'stream', text: ['We open at eight.'] }, { kind: 'stream', text: ['Closed on Sundays.'] });
    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    const asked = voice.elevenlabs.speech.length;
    await stream.sendAudio(speech(4000));
    await until('the answer played', () => marksOf(stream).length >= 2);
    // eSpeak's real audio reached the caller, not silence.
    expect(audioAfterMark({ stream }, 1).some((byte) => byte !== 0xff && byte !== 0x7f)).toBe(true);
    await stream.sendAudio(speech(8000));
    await until('the second answer played', () => marksOf(stream).length >= 3);
    // ElevenLabs was asked once more (the sentence it failed), never again.
    expect(voice.elevenlabs.speech.slice(asked).map((request) => request.body.text)).toEqual(['We open at eight.']);
    stream.stop();

    const call = await endedCall({ ...placed, stream } as unknown as PlacedCall);
    const answers = call.transcript.filter((turn: { role: string }) => turn.role === 'agent').slice(1);
    expect(answers[0]).toMatchObject({
      text: 'We open at eight.',
      failover: { component: 'tts', from: 'ELEVENLABS', to: 'ESPEAK', reason: expect.stringContaining('down') },
    });
    expect(answers[1]).toMatchObject({ text: 'Closed on Sundays.' });
    expect(answers[1].failover).toBeUndefined();
    // ElevenLabs is billed for the opening it spoke, eSpeak for both answers; not the sentence that failed.
    const spokenByBackup = 'We open at eight.'.length + 'Closed on Sundays.'.length;
    expect(call.usage).toMatchObject({
      ttsCharacters: OPENING.length + spokenByBackup,
      ttsProvider: 'ELEVENLABS',
      backup: { ttsCharacters: spokenByBackup, ttsProvider: 'ESPEAK', sttSeconds: 0, sttProvider: null },
    });
  });

  it('speaks when the voice gives no audio for the stall time', async () => {
    const placed = await voice.placedCall(ESPEAK_BACKUP);
    voice.elevenlabs.script(
      { kind: 'audio', chunks: [Buffer.alloc(800, 0x10)] },
      { kind: 'audio', chunks: [Buffer.alloc(800, 0x10)], holdAfter: 0 },
    );
    voice.deepgram.script(...utterance('When do you open?', { startsAfterBytes: 800, endsAfterBytes: 4000 }));
    voice.chat.script({ kind: 'stream', text: ['We open at eight.'] });
    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(4000));
    await until('the answer played', () => marksOf(stream).length >= 2);
    stream.stop();
    const call = await endedCall(placed);
    expect(call.transcript.at(-1)).toMatchObject({
      text: 'We open at eight.',
      failover: { component: 'tts', from: 'ELEVENLABS', to: 'ESPEAK', reason: `The voice gave no audio for ${STALL_MS} ms.` },
    });
  });

  it('is refused when it is the agent’s own voice provider', async () => {
    const { api } = await voice.placeCall();
    const refused = await api('POST', '/agents', { name: 'Same', tts: { provider: 'ESPEAK' }, backup: { tts: { provider: 'ESPEAK' } } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      code: 'BACKUP_CONFLICT',
      message: "The backup tts is the agent's own text-to-speech provider: name another.",
    });
    const relay = await api('POST', '/agents', {
      name: 'Relay',
      voicePipeline: 'CONVERSATION_RELAY',
      voice: null,
      backup: { tts: { provider: 'ESPEAK' } },
    });
    expect(relay.json()).toMatchObject({ code: 'BACKUP_CONFLICT', details: [{ path: '/backup/tts' }] });
  });
});

describe("an agent's backup recogniser", () => {
  it('hears the caller when the recogniser fails mid-call, from then on; the transcript and the usage say so', async () => {
    await detectorStarted();
    const placed = await voice.placedCall({ backup: { stt: { provider: 'OPENAI_COMPATIBLE' } } });
    // Deepgram hears the first question, then drops the stream with its own error.
    voice.deepgram.script(...utterance('When do you open?', { startsAfterBytes: 800, endsAfterBytes: 4000 }), {
      afterBytes: 6400,
      say: 'close',
      code: 1011,
      reason: 'NET-0001',
    });
    voice.chat.script({ kind: 'stream', text: ['We open at eight.'] }, { kind: 'stream', text: ['Yes, on Saturdays too.'] });
    const question = await callerSaying('Are you open on Saturdays?');
    transcriber.script({ kind: 'text', text: 'Are you open on Saturdays?' });
    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(4000));
    await until('the answer played', () => marksOf(stream).length >= 2);
    await stream.sendAudio(speech(2400)); // Deepgram fails here
    await voice.deepgram.sessions.at(-1)!.closed;
    // The line goes on at its pace, as Twilio sends it, while the backup takes over; then the caller asks again.
    await stream.sendAudio(lineSilence(400), { realPace: true });
    const heardBefore = transcriber.transcriptions.length;
    await stream.sendAudio(Buffer.concat([question, lineSilence(1500)]));
    await until('the second answer played', () => marksOf(stream).length >= 3);
    expect(transcriber.transcriptions.length).toBe(heardBefore + 1);
    stream.stop();

    const call = await endedCall(placed);
    const said = call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]);
    expect(said).toEqual([
      ['agent', OPENING],
      ['contact', 'When do you open?'],
      ['agent', 'We open at eight.'],
      ['contact', 'Are you open on Saturdays?'],
      ['agent', 'Yes, on Saturdays too.'],
    ]);
    expect(call.transcript[3]).toMatchObject({
      failover: { component: 'stt', from: 'DEEPGRAM', to: 'OPENAI_COMPATIBLE', reason: expect.any(String) },
    });
    // Deepgram is billed for the audio it was sent; the backup for the utterance it transcribed.
    expect(call.usage.sttProvider).toBe('DEEPGRAM');
    expect(call.usage.backup).toMatchObject({ sttProvider: 'OPENAI_COMPATIBLE', ttsCharacters: 0 });
    expect(call.usage.backup.sttSeconds).toBeGreaterThan(0);
    expect(call.usage.sttSeconds).toBeGreaterThan(call.usage.backup.sttSeconds);
  });
});
