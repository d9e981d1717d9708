import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeDeepgram, utterance } from '../src/providers/deepgram/fake-server.ts';
import { DEFAULT_FAKE_VOICES, startFakeElevenLabs } from '../src/providers/elevenlabs/fake-server.ts';
import { mulawToPcm16, pcm16Samples } from '../src/platform/audio.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { openFakeMediaStream, streamOf, type FakeMediaStream } from '../src/providers/twilio/fake-media-stream.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { callerSaying, detectorStarted, lineSilence, voicedSpan } from './caller-speech.ts';
import { tenantWith, uniqueNumber } from './voice-fixtures.ts';

// Issue 17: a Twilio call is a conversation. Twilio's side of the media stream, Deepgram, ElevenLabs
// and the model are local fakes speaking their real wire formats; the pipeline between them is ours.
const accountSid = `AC${randomBytes(16).toString('hex')}`;
const authToken = randomBytes(16).toString('hex');
const VOICE = DEFAULT_FAKE_VOICES[0]!.voice_id;
let t: TestApp;
let twilio: FakeTwilio;
let deepgram: Awaited<ReturnType<typeof startFakeDeepgram>>;
let elevenlabs: Awaited<ReturnType<typeof startFakeElevenLabs>>;
let chat: Awaited<ReturnType<typeof startFakeChat>>;
let speechServer: Awaited<ReturnType<typeof startFakeSpeech>>;
let port: number;

beforeAll(async () => {
  [twilio, deepgram, elevenlabs, chat, speechServer] = await Promise.all([
    startFakeTwilio({ accountSid, authToken }),
    startFakeDeepgram({ apiKey: 'dg-test-key-0123456789' }),
    startFakeElevenLabs(),
    startFakeChat(),
    startFakeSpeech(),
  ]);
  port = await freeLoopbackPort();
  t = await startTestApp({
    clock: manualClock('2026-11-23T10:00:00.000Z'), // a Monday, inside the call window
    env: {
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      TWILIO_API_URL: twilio.url,
      DEEPGRAM_API_URL: deepgram.url,
      ELEVENLABS_API_URL: elevenlabs.url,
      LLM_API_URL: `${chat.url}/v1`,
      LLM_MODEL: 'phone-model',
      SPEECH_API_URL: `${speechServer.url}/v1`,
      VOICE_SILENCE_SECONDS: '2',
      RATE_LIMIT_PER_MINUTE: '100000',
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await t.close();
  await Promise.all([twilio.close(), deepgram.close(), elevenlabs.close(), chat.close(), speechServer.close()]);
});

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A tenant with Twilio, Deepgram and ElevenLabs connected, an agent that speaks, and one Twilio call placed and ringing. */
async function placedCall(agentFields: Record<string, unknown> = {}) {
  const { owner, api } = await tenantWith(t.app, {
    twilio: { accountSid, authToken },
    deepgram: { apiKey: deepgram.apiKey },
    elevenlabs: { apiKey: elevenlabs.apiKey },
  });
  const agent = await api('POST', '/agents', {
    name: 'Clinic',
    firstMessage: 'Hello, this is the clinic. How can I help?',
    stt: { provider: 'DEEPGRAM' },
    tts: { provider: 'ELEVENLABS' },
    voice: VOICE,
    tools: ['end_call'],
    ...agentFields,
  });
  expect(agent.statusCode).toBe(201);
  const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TWILIO' })).json();
  const list = (await api('POST', '/contact-lists', { name: `List ${uniqueNumber()}` })).json();
  const to = uniqueNumber();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: [{ phoneNumber: to, name: 'Ana' }, { phoneNumber: uniqueNumber() }],
  });
  const campaign = (
    await api('POST', '/campaigns', {
      name: `Voice ${uniqueNumber()}`,
      agentId: agent.json().id,
      voiceNumberId: number.id,
      contactListId: list.id,
      timezone: 'UTC',
      maxAttempts: 1,
    })
  ).json();
  const sent = twilio.requests.length;
  expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
  await dialerTick(t.runtime);
  const dial = twilio.requests.slice(sent).find((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === to)!;
  const sid = [...twilio.calls.values()].find((c) => c.to === to)!.sid;
  const callId = (await api('GET', `/call-logs?campaignId=${campaign.id}&limit=10`))
    .json()
    .data.find((c: { toNumber: string }) => c.toNumber === to).id as string;
  return { api, owner, sid, callId, stream: streamOf(dial.form.get('Twiml')!), tenantId: owner.tenantId as string };
}

type Placed = Awaited<ReturnType<typeof placedCall>>;
const connect = (placed: Placed, overrides: Partial<Parameters<typeof openFakeMediaStream>[0]> = {}) =>
  openFakeMediaStream({
    connectTo: `ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`,
    stream: placed.stream,
    accountSid,
    authToken,
    callSid: placed.sid,
    ...overrides,
  });
const getCall = async (placed: Placed) => (await placed.api('GET', `/call-logs/${placed.callId}`)).json();
const marksOf = (stream: FakeMediaStream) => stream.received.filter((m) => m.event === 'mark').map((m) => m.mark!.name);
const speech = (bytes: number) => Buffer.alloc(bytes, 0xff); // μ-law silence: what Deepgram "hears" is scripted by bytes

describe('a Twilio call is a conversation', () => {
  it('speaks the opening, hears the caller, answers with the model, and ends the call after its last words', async () => {
    const placed = await placedCall();
    // The call's TwiML streams to our media path with the call id and its signed token.
    expect(placed.stream.url).toBe(`ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`);
    expect(placed.stream.parameters).toEqual({ callId: placed.callId, token: expect.stringMatching(/^[\w-]{43}$/) });
    deepgram.script(...utterance('When do you open tomorrow?', { startsAfterBytes: 800, endsAfterBytes: 4000 }));
    chat.script({
      kind: 'stream',
      text: ['We open ', 'at eight. ', 'Parking is ', 'free behind the building.'],
      toolCalls: [{ id: 'end_1', name: 'end_call', arguments: ['{}'] }],
      usage: { prompt_tokens: 120, completion_tokens: 19 },
    });
    const stream = await connect(placed);

    // The opening is spoken in ElevenLabs' μ-law, followed by its mark; the call is answered.
    await until('the opening', () => marksOf(stream).length >= 1);
    expect(elevenlabs.speech[0]).toMatchObject({ voiceId: VOICE, query: { output_format: 'ulaw_8000' } });
    expect(elevenlabs.speech[0]!.body).toMatchObject({ text: 'Hello, this is the clinic. How can I help?' });
    expect((await getCall(placed)).status).toBe('IN_PROGRESS');

    await stream.sendAudio(speech(4000));
    // Two sentences, each synthesised as soon as the model finished it, each with its mark.
    await until('the reply', () => marksOf(stream).length >= 3);
    expect(elevenlabs.speech.slice(1, 3).map((s) => s.body.text)).toEqual(['We open at eight.', 'Parking is free behind the building.']);
    const request = chat.received[0]!.body;
    expect(request.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open tomorrow?' });

    // end_call: after its last words were played, the call is hung up through Twilio's REST API.
    const hangup = await until('the hang-up', () =>
      twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
    );
    expect(hangup.authorized).toBe(true);
    expect(await stream.closed).toMatchObject({ code: 1000 });
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '12' })).toBe(204);

    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call).toMatchObject({ outcome: 'ANSWERED', endReason: 'agent_ended', durationSec: 12 });
    expect(call.transcript.map((turn: { role: string; text: string; by?: string }) => [turn.role, turn.text, turn.by ?? null])).toEqual([
      ['agent', 'Hello, this is the clinic. How can I help?', 'first-message'],
      ['contact', 'When do you open tomorrow?', null],
      ['agent', 'We open at eight. Parking is free behind the building.', 'model:phone-model'],
      ['tool', expect.any(String), null],
    ]);
    // Billed for what ran: the caller's audio sent to Deepgram, the characters ElevenLabs spoke, the model's tokens.
    expect(call.usage).toMatchObject({ sttSeconds: 0.5, llmInputTokens: 120, llmOutputTokens: 19, telephonySeconds: 12 });
    expect(call.usage.ttsCharacters).toBe(
      'Hello, this is the clinic. How can I help?'.length + 'We open at eight.'.length + 'Parking is free behind the building.'.length,
    );
    expect(Number(call.cost.stt)).toBeGreaterThan(0);
    expect(Number(call.cost.tts)).toBeGreaterThan(0);
    // Deepgram heard the caller's audio, in order, as μ-law at 8 kHz.
    const session = deepgram.sessions.at(-1)!;
    expect(session.query).toMatchObject({ encoding: 'mulaw', sample_rate: '8000' });
    expect(deepgram.audioOf(session).length).toBe(4000);
  });

  it('stops talking when the caller speaks over the agent, and records what they heard', async () => {
    const placed = await placedCall();
    deepgram.script(
      ...utterance('Tell me everything about parking.', { startsAfterBytes: 160, endsAfterBytes: 1600 }),
      ...utterance('Sorry, just the price.', { startsAfterBytes: 3200, endsAfterBytes: 4800 }),
    );
    chat.script(
      {
        kind: 'stream',
        text: ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff. ', 'Bikes go in the yard.'],
      },
      { kind: 'stream', text: ['It is free.'] },
    );
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(speech(1600));
    // The agent's first sentence plays; the rest is still queued at Twilio when the caller talks over it.
    await until('the long reply', () => marksOf(stream).length >= 3);
    stream.releaseMarks(1);
    await stream.sendAudio(speech(3200)); // interim words arrive: barge-in
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    stream.holdMarks(false);
    stream.releaseMarks(); // the answer may have begun while marks were held
    expect(stream.received.filter((m) => m.event === 'clear')).toHaveLength(1); // one clear, however many words follow
    await until('the second answer', () =>
      elevenlabs.speech.some((s) => s.body.text === 'It is free.') && stream.received.at(-1)?.event === 'mark' ? true : undefined,
    );
    // The model's memory holds only what the caller heard of the cut reply.
    const second = chat.received.at(-1)!.body.messages as { role: string; content: string | null }[];
    expect(second.at(-2)).toEqual({ role: 'assistant', content: 'Parking is behind the building. …' });
    expect(second.at(-1)).toEqual({ role: 'user', content: 'Sorry, just the price.' });
    const call = await until('the second reply recorded', async () => {
      const got = await getCall(placed);
      return got.transcript.length >= 5 ? got : undefined;
    });
    expect(call.transcript[2]).toMatchObject({ role: 'agent', text: 'Parking is behind the building.', interrupted: true });
    expect(call.transcript[4]).toMatchObject({ role: 'agent', text: 'It is free.' });
    expect(call.transcript[4].interrupted).toBeUndefined();
    stream.stop();
    await stream.closed;
  });

  it('asks once whether the caller is still there, then says goodbye and hangs up', async () => {
    const placed = await placedCall();
    deepgram.script();
    const stream = await connect(placed);
    const hangup = await until(
      'the hang-up after silence',
      () => twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
      15_000,
    );
    expect(hangup).toBeDefined();
    expect(elevenlabs.speech.filter((s) => s.apiKey === elevenlabs.apiKey).map((s) => s.body.text)).toEqual(
      expect.arrayContaining(['Are you still there?', "I can't hear you, so I'll let you go. Goodbye."]),
    );
    await stream.closed;
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '5' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.endReason).toBe('silence');
    expect(call.transcript.map((turn: { text: string; by: string }) => [turn.text, turn.by])).toEqual([
      ['Hello, this is the clinic. How can I help?', 'first-message'],
      ['Are you still there?', 'pipeline'],
      ["I can't hear you, so I'll let you go. Goodbye.", 'pipeline'],
    ]);
  }, 20_000);

  it("transfers the caller to the agent's transfer number after its last words", async () => {
    const transferNumber = uniqueNumber();
    const placed = await placedCall({ tools: ['transfer_call'], transferNumber });
    deepgram.script(...utterance('Can I talk to a person?', { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    chat.script({
      kind: 'stream',
      text: ['Of course, let me connect you.'],
      toolCalls: [{ id: 'transfer_1', name: 'transfer_call', arguments: ['{"reason":"asked for a person"}'] }],
    });
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    const bridged = await until('the transfer', () =>
      twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Twiml')?.includes('<Dial>')),
    );
    expect(bridged.form.get('Twiml')).toBe(`<Response><Dial>${transferNumber}</Dial></Response>`);
    expect(marksOf(stream)).toHaveLength(2); // the words were played before the line was handed over
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '30' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.endReason).toBe('transferred');
    expect(call.outcomes).toEqual([
      expect.objectContaining({ type: 'transfer', data: { to: transferNumber, reason: 'asked for a person' } }),
    ]);
  });

  it.each([
    ['the recogniser drops its connection', 'deepgram'],
    ['the voice fails on a reply', 'elevenlabs'],
  ])('apologises and hangs up with provider_error when %s', async (_, failing) => {
    const placed = await placedCall();
    const APOLOGY = "I'm sorry, I'm having trouble hearing you on this line. Someone will get back to you. Goodbye.";
    if (failing === 'deepgram') deepgram.script({ afterBytes: 800, say: 'drop' });
    else {
      deepgram.script(...utterance('What time is it?', { startsAfterBytes: 160, endsAfterBytes: 800 }));
      chat.script({ kind: 'stream', text: ['It is ten.'] });
      elevenlabs.script(
        { kind: 'audio', chunks: [Buffer.alloc(800, 0xff)] }, // the opening
        { kind: 'error', status: 503, detail: { status: 'service_unavailable', message: 'Try again later.' } },
      );
    }
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(800));
    await until('the hang-up', () =>
      twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
    );
    expect(elevenlabs.speech.at(-1)!.body.text).toBe(APOLOGY);
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '6' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.endReason).toBe('provider_error');
    expect(call.transcript.at(-1)).toMatchObject({ role: 'agent', text: APOLOGY, by: 'pipeline' });
    if (failing === 'elevenlabs')
      expect(call.transcript.slice(1, 3)).toMatchObject([
        { role: 'contact', text: 'What time is it?' },
        { role: 'agent', text: '', interrupted: true }, // the reply the caller never heard
      ]);
  });

  it('passes a key the caller presses to the model', async () => {
    const placed = await placedCall();
    deepgram.script();
    chat.script({ kind: 'stream', text: ['You chose the second option.'] });
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    const asked = chat.received.length;
    stream.sendDtmf('2');
    await until('the answer', () => marksOf(stream).length >= 2);
    expect(chat.received[asked]!.body.messages.at(-1)).toEqual({ role: 'user', content: '(The caller pressed 2 on the keypad.)' });
    stream.stop();
    await stream.closed;
  });

  it('records a caller who hangs up as contact_hung_up', async () => {
    const placed = await placedCall();
    deepgram.script();
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.stop();
    await stream.closed;
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '3' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.endReason).toBe('contact_hung_up');
  });
});

describe('the offline voice on the line', () => {
  it('speaks the opening with eSpeak NG, resampled to 8 kHz μ-law', async () => {
    const placed = await placedCall({ tts: { provider: 'ESPEAK' }, voice: undefined });
    deepgram.script();
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1, 20_000);
    const audio = Buffer.concat(stream.received.filter((m) => m.event === 'media').map((m) => Buffer.from(m.media!.payload, 'base64')));
    // 8,000 bytes a second: "Hello, this is the clinic. How can I help?" lasts a few seconds, and is not silence.
    expect(audio.length / 8000).toBeGreaterThan(1);
    expect(audio.length / 8000).toBeLessThan(8);
    const samples = pcm16Samples(mulawToPcm16(audio));
    const rms = Math.sqrt(samples.reduce((sum, sample) => sum + sample * sample, 0) / samples.length);
    expect(rms).toBeGreaterThan(500);
    stream.stop();
    await stream.closed;
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '4' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.usage.ttsCharacters).toBe('Hello, this is the clinic. How can I help?'.length);
  }, 30_000);
});

describe('an agent whose speech-to-text hears whole utterances (OpenAI-compatible)', () => {
  // The detector's worker starts with the first call that needs it (seconds on a busy machine); this
  // file's 2 s silence timeout would run out before it heard anything.
  beforeAll(detectorStarted, 60_000);
  const hangUpOf = (placed: Placed) =>
    until('the hang-up', () =>
      twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed'),
    );

  it("cuts the caller's words out of the line with Silero, has them transcribed, and converses", async () => {
    const placed = await placedCall({ stt: { provider: 'OPENAI_COMPATIBLE' } });
    const question = await callerSaying('When do you open tomorrow?');
    speechServer.script({ kind: 'text', text: 'When do you open tomorrow?' });
    chat.script({
      kind: 'stream',
      text: ['We open at eight.'],
      toolCalls: [{ id: 'end_1', name: 'end_call', arguments: ['{}'] }],
      usage: { prompt_tokens: 90, completion_tokens: 6 },
    });
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    const before = speechServer.transcriptions.length;
    await stream.sendAudio(Buffer.concat([lineSilence(600), question, lineSilence(1500)]));

    await hangUpOf(placed);
    // The recogniser was sent the utterance alone, as a WAV at the line's 8 kHz: the voice and a little around it.
    const sent = speechServer.transcriptions.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.fields).toMatchObject({ model: 'whisper-1', language: 'en' });
    expect(sent[0]!.wav).toMatchObject({ format: 1, channels: 1, sampleRate: 8000, bitsPerSample: 16 });
    const sentSeconds = sent[0]!.wav!.samples.length / 2 / 8000;
    const voicedSeconds = (voicedSpan(question).endMs - voicedSpan(question).startMs) / 1000;
    expect(sentSeconds).toBeGreaterThanOrEqual(voicedSeconds - 0.05);
    expect(sentSeconds).toBeLessThanOrEqual(voicedSeconds + 0.65); // 200 ms before, 200 after, Silero's fading tail
    expect(chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open tomorrow?' });
    expect(elevenlabs.speech.at(-1)!.body).toMatchObject({ text: 'We open at eight.' });

    await stream.closed;
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '9' })).toBe(204);
    const call = await until('the ended call', async () => {
      const got = await getCall(placed);
      return got.status === 'ENDED' ? got : undefined;
    });
    expect(call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]).slice(0, 3)).toEqual([
      ['agent', 'Hello, this is the clinic. How can I help?'],
      ['contact', 'When do you open tomorrow?'],
      ['agent', 'We open at eight.'],
    ]);
    // Billed for the audio the recogniser heard, not the 3.4 s of line audio the detector did.
    expect(call.usage.sttSeconds).toBeCloseTo(sentSeconds, 2);
  });

  it("stops the agent as soon as the caller's voice is confirmed, before any words are recognised", async () => {
    const placed = await placedCall({ stt: { provider: 'OPENAI_COMPATIBLE' } });
    // The second utterance has no words the recogniser can find: only the detected voice can stop the agent.
    speechServer.script({ kind: 'text', text: 'Tell me everything about parking.' }, { kind: 'text', text: '' });
    chat.script({
      kind: 'stream',
      text: ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff. ', 'Bikes go in the yard.'],
    });
    // Spoken before the call: the caller must not fall silent for the silence timeout while eSpeak speaks.
    const [question, hello] = await Promise.all([callerSaying('Tell me everything about parking.'), callerSaying('Hello?')]);
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(Buffer.concat([lineSilence(300), question, lineSilence(1000)]));
    // The agent's first sentence plays; the rest is still queued at Twilio when the caller talks over it.
    await until('the long reply', () => marksOf(stream).length >= 3);
    stream.releaseMarks(1);
    await stream.sendAudio(Buffer.concat([hello, lineSilence(1000)]));
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    stream.holdMarks(false);
    const call = await until('the cut reply recorded', async () => {
      const got = await getCall(placed);
      return got.transcript.length >= 3 ? got : undefined;
    });
    expect(call.transcript[2]).toMatchObject({ role: 'agent', text: 'Parking is behind the building.', interrupted: true });
    expect(stream.received.filter((m) => m.event === 'clear')).toHaveLength(1);
    stream.stop();
    await stream.closed;
  });
});

describe('a media stream proves whose call it carries', () => {
  it('refuses an unsigned upgrade before the socket opens', async () => {
    const placed = await placedCall();
    await expect(connect(placed, { signature: null })).rejects.toThrow('HTTP 403');
    expect((await getCall(placed)).status).not.toBe('IN_PROGRESS');
  });

  it.each([
    ['signed with another auth token', { signature: 'dGhpcyBpcyBub3QgaXQ=' }],
    ['with a token for another call', { parameters: { callId: 'x', token: 'y' } }],
  ])('closes a stream %s, and the call is untouched', async (_, overrides) => {
    const placed = await placedCall();
    const parameters = 'parameters' in overrides ? { callId: placed.callId, token: overrides.parameters.token } : undefined;
    const stream = await connect(placed, { ...overrides, ...(parameters ? { parameters } : {}) });
    expect(await stream.closed).toMatchObject({ code: 1008 });
    const call = await getCall(placed);
    expect(call.status).not.toBe('IN_PROGRESS');
    expect(call.transcript).toEqual([]);
  });

  it("refuses another tenant's stream token and a replayed stream", async () => {
    const first = await placedCall();
    const second = await placedCall();
    deepgram.script();
    // The first call's signed parameters presented for the second call.
    const crossed = await connect(second, { parameters: first.stream.parameters });
    expect(await crossed.closed).toMatchObject({ code: 1008 });
    const live = await connect(first);
    await until('the opening', () => marksOf(live).length >= 1);
    const replayed = await connect(first);
    expect(await replayed.closed).toMatchObject({ code: 1008, reason: 'The call is over or already has its stream.' });
    live.stop();
    await live.closed;
  });

  it('refuses a stream for an agent that cannot listen, and leaves the call as it was', async () => {
    const placed = await placedCall({ stt: null });
    const stream = await connect(placed);
    expect(await stream.closed).toEqual({ code: 1008, reason: 'The agent has no speech-to-text to listen with.' });
    const call = await getCall(placed);
    expect(call.status).not.toBe('IN_PROGRESS');
    expect(call.transcript).toEqual([]);
  });

  it('drops malformed frames and goes on', async () => {
    const placed = await placedCall();
    deepgram.script(...utterance('Hello there.', { startsAfterBytes: 160, endsAfterBytes: 800 }));
    chat.script({ kind: 'stream', text: ['Hi!'] });
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.sendRaw('not json');
    stream.sendRaw('{"event":"media","media":{}}');
    await stream.sendAudio(speech(800));
    await until('the answer', () => marksOf(stream).length >= 2);
    stream.stop();
    await stream.closed;
  });
});
