import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { mulawToPcm16, pcm16Samples, resamplersOpen } from '../src/platform/audio.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';
import { uniqueNumber } from './voice-fixtures.ts';
import { expectReplyPlayedWhole, marksOf, scripted, speech, VOICE, type VoiceLine } from './voice-line.ts';

// Issue 17: a Twilio call is a conversation. Twilio's side of the media stream, Deepgram, ElevenLabs
// and the model are local fakes speaking their real wire formats; the pipeline between them is ours.
let voice: TwilioVoice;
let line: VoiceLine;
let twilio: TwilioVoice['twilio'];
let deepgram: VoiceLine['deepgram'];
let elevenlabs: VoiceLine['elevenlabs'];
let chat: VoiceLine['chat'];
let port: number;

beforeAll(async () => {
  voice = await startTwilioVoice({
    // Each provider at its own rate; the flat rates (defaults) would price any other.
    RATE_PROVIDERS: JSON.stringify({
      DEEPGRAM: { sttPerMinute: '0.6' },
      ELEVENLABS: { ttsPer1kCharacters: '1' },
      TWILIO: { telephonyPerMinute: '0.3' },
    }),
  });
  ({ line, twilio, deepgram, elevenlabs, chat, port } = voice);
});
afterAll(() => voice.close());

const placedCall = (agentFields?: Record<string, unknown>) => voice.placedCall(agentFields);
const connect = (placed: PlacedCall, overrides?: Parameters<TwilioVoice['connect']>[1]) => voice.connect(placed, overrides);
const getCall = (placed: PlacedCall) => voice.getCall(placed);

describe('a Twilio call is a conversation', () => {
  it('speaks the opening, hears the caller, answers with the model, and ends the call after its last words', async () => {
    const placed = await placedCall();
    // The call's TwiML streams to our media path with the call id and its signed token.
    expect(placed.stream.url).toBe(`ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`);
    expect(placed.stream.parameters).toEqual({ callId: placed.callId, token: expect.stringMatching(/^[\w-]{43}$/) });
    scripted.openingHours(line);
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
    expect(call.usage).toMatchObject({
      sttProvider: 'DEEPGRAM',
      ttsProvider: 'ELEVENLABS',
      llmProvider: 'OPENAI_COMPATIBLE',
      telephonyProvider: 'TWILIO',
    });
    // Priced per provider (RATE_PROVIDERS): 0.5 s at 0.6 a minute, the characters at 1 per 1,000, 12 s at 0.3 a minute.
    expect(call.cost).toMatchObject({ stt: '0.0050', tts: (call.usage.ttsCharacters / 1000).toFixed(4), telephony: '0.0600' });
    // Deepgram heard the caller's audio, in order, as μ-law at 8 kHz.
    const session = deepgram.sessions.at(-1)!;
    expect(session.query).toMatchObject({ encoding: 'mulaw', sample_rate: '8000' });
    expect(deepgram.audioOf(session).length).toBe(4000);
  });

  it('stops talking when the caller speaks over the agent, and records what they heard', async () => {
    const placed = await placedCall();
    scripted.interrupted(line);
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

  // Issue 40, item 2: what the caller says over the agent stops it only when it is meant.
  const LONG_REPLY = ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff. ', 'Bikes go in the yard.'];
  /** The caller asks, then says `over` (Deepgram's steps from byte 3,200) while the long reply plays; `bytes` more of audio are sent. */
  async function speakOverTheReply(over: Parameters<typeof deepgram.script>, interrupts = false, bytes = 3200) {
    const placed = await placedCall();
    const asked = chat.received.length;
    deepgram.script(...utterance('Tell me everything about parking.', { startsAfterBytes: 160, endsAfterBytes: 1600 }), ...over);
    // The model answers a second time only when the caller's words are a turn.
    chat.script({ kind: 'stream', text: LONG_REPLY }, ...(interrupts ? [{ kind: 'stream' as const, text: ['It is free.'] }] : []));
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(speech(1600));
    await until('the long reply', () => marksOf(stream).length >= 5);
    stream.releaseMarks(2); // two sentences were heard: the third is playing
    await stream.sendAudio(speech(bytes));
    return { placed, stream, asked };
  }

  it.each([
    ['a backchannel', utterance('Uh-huh. Yeah, right.', { startsAfterBytes: 3200, endsAfterBytes: 4800 })],
    [
      'a cough (a sound, no words)',
      [
        { afterBytes: 3200, say: 'SpeechStarted' as const },
        { afterBytes: 4000, say: 'Results' as const, transcript: '', final: true, speechFinal: true },
        { afterBytes: 4800, say: 'UtteranceEnd' as const },
      ],
    ],
    ["the agent's own voice coming back (echo)", utterance('it has three floors', { startsAfterBytes: 3200, endsAfterBytes: 4800 })],
  ])('goes on speaking over %s: no clear, the reply whole, nothing answered', async (_case, over) => {
    const { placed, stream, asked } = await speakOverTheReply(over);
    // Deepgram said all it had to say about the words over the reply.
    const session = deepgram.sessions.at(-1)!;
    await until('the words over the reply', () => session.sent.filter((m) => m.type === 'UtteranceEnd').length >= 2);
    await expectReplyPlayedWhole(stream, () => getCall(placed), 'Tell me everything about parking.', LONG_REPLY.join('').trim());
    // The model was asked once: what was said over the reply is not a turn to answer.
    expect(chat.received.length - asked).toBe(1);
    stream.stop();
    await stream.closed;
  });

  it('stops at the first word that is more than a backchannel: "yeah, but…" clears at "but"', async () => {
    // Interim words by bytes: "Yeah," at 3,466, "Yeah, but" at 3,733, the final at 4,800; 3,750 bytes are sent.
    const over = utterance('Yeah, but how much is it?', { startsAfterBytes: 3200, endsAfterBytes: 4800 });
    const { placed, stream } = await speakOverTheReply(over, true, 2150);
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    expect(deepgram.audioOf(deepgram.sessions.at(-1)!).length).toBe(3750);
    await stream.sendAudio(speech(1050)); // the rest of the utterance: its final words end the turn
    stream.holdMarks(false);
    stream.releaseMarks();
    const call = await until('the second answer recorded', async () => {
      const got = await getCall(placed);
      return got.transcript.some((turn: { text: string }) => turn.text === 'It is free.') ? got : undefined;
    });
    expect(call.transcript[2]).toMatchObject({
      role: 'agent',
      text: 'Parking is behind the building. It has three floors.',
      interrupted: true,
    });
    expect(call.transcript[3]).toMatchObject({ role: 'contact', text: 'Yeah, but how much is it?' });
    stream.stop();
    await stream.closed;
  });

  it('keeps no agent turn when the caller speaks over the first sentence of a reply', async () => {
    const placed = await placedCall();
    scripted.interrupted(line);
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(speech(1600));
    // The reply is queued at Twilio, none of it played, when the caller talks over it.
    await until('the long reply', () => marksOf(stream).length >= 3);
    await stream.sendAudio(speech(3200));
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    stream.holdMarks(false);
    stream.releaseMarks();
    const call = await until('the second reply recorded', async () => {
      const got = await getCall(placed);
      return got.transcript.some((turn: { text: string }) => turn.text === 'It is free.') ? got : undefined;
    });
    expect(call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', 'Hello, this is the clinic. How can I help?'],
      ['contact', 'Tell me everything about parking.'],
      ['contact', 'Sorry, just the price.'],
      ['agent', 'It is free.'],
    ]);
    stream.stop();
    await stream.closed;
  });

  it('records the opening as the caller heard it: none of it when they spoke over it before it played', async () => {
    const placed = await placedCall();
    line.deepgram.script(...utterance('Hello? Who is this?', { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    line.chat.script({ kind: 'stream', text: ['This is the clinic.'] });
    const stream = await connect(placed);
    stream.holdMarks(true);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    stream.holdMarks(false);
    stream.releaseMarks();
    const call = await until('the reply recorded', async () => {
      const got = await getCall(placed);
      return got.transcript.some((turn: { text: string }) => turn.text === 'This is the clinic.') ? got : undefined;
    });
    expect(call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['contact', 'Hello? Who is this?'],
      ['agent', 'This is the clinic.'],
    ]);
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
      expect.objectContaining({ type: 'transfer', data: { to: transferNumber, reason: 'asked for a person', summary: null } }),
    ]);
  });

  it('warms the transfer: the person taking the call first hears the summary the agent gave, once Twilio proves it asks', async () => {
    const transferNumber = uniqueNumber();
    const placed = await placedCall({ tools: ['transfer_call'], transferNumber });
    deepgram.script(...utterance('My order never arrived, can I talk to someone?', { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    const summary = 'Dana Reyes, order 1182 never arrived; she wants a refund.';
    chat.script({
      kind: 'stream',
      text: ['I will put you through to a colleague.'],
      toolCalls: [{ id: 'transfer_2', name: 'transfer_call', arguments: [JSON.stringify({ reason: 'missing order', summary })] }],
    });
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    const bridged = await until('the transfer', () =>
      twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Twiml')?.includes('<Dial>')),
    );
    const whisperUrl = `http://127.0.0.1:${port}/api/v1/telephony/twilio/transfer-whisper?call=${placed.sid}`;
    expect(bridged.form.get('Twiml')).toBe(`<Response><Dial><Number url="${whisperUrl}">${transferNumber}</Number></Dial></Response>`);
    // Another account's signature gets nothing; Twilio's gets the summary, said in the agent's language.
    expect(await twilio.answerTransfer(placed.sid, { authToken: 'f'.repeat(32) })).toMatchObject({ status: 403 });
    expect(await twilio.answerTransfer(placed.sid)).toEqual({
      status: 200,
      body: `<Response><Say language="en-US">${summary}</Say></Response>`,
    });
    expect((await getCall(placed)).outcomes).toEqual([
      expect.objectContaining({ type: 'transfer', data: { to: transferNumber, reason: 'missing order', summary } }),
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
    // The reply the caller never heard leaves no turn: the apology follows their words.
    if (failing === 'elevenlabs')
      expect(call.transcript.slice(1)).toMatchObject([
        { role: 'contact', text: 'What time is it?' },
        { role: 'agent', text: APOLOGY, by: 'pipeline' },
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
  it('speaks the opening with eSpeak NG, resampled to 8 kHz μ-law, every media message carrying audio', async () => {
    const placed = await placedCall({ tts: { provider: 'ESPEAK' }, voice: undefined });
    deepgram.script();
    const stream = await connect(placed);
    await until('the opening', () => marksOf(stream).length >= 1, 20_000);
    const payloads = stream.received.filter((m) => m.event === 'media').map((m) => m.media!.payload);
    // eSpeak ends each sentence with an empty chunk; Twilio flags a media message without audio (warning 31951).
    expect(payloads.filter((payload) => payload === '')).toEqual([]);
    const audio = Buffer.concat(payloads.map((payload) => Buffer.from(payload, 'base64')));
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

  // Issue 44: a resampler per call (a WebAssembly module compiled for it, 25 MiB of memory kept until
  // the garbage collector came) made the service's memory grow with its calls. eSpeak's audio now
  // leaves its worker at the line's rate: however many calls speak, none opens one on this thread.
  it('opens no resampler on the service’s thread for eSpeak calls, however many speak at once', async () => {
    const before = resamplersOpen();
    // Placed one after another (each dials and finds its own request), then all connected at once.
    const placed: PlacedCall[] = [];
    for (let call = 0; call < 3; call++) placed.push(await placedCall({ tts: { provider: 'ESPEAK' }, voice: undefined }));
    deepgram.script();
    deepgram.script();
    deepgram.script();
    const streams = await Promise.all(placed.map((call) => connect(call)));
    await until('every opening', () => streams.every((stream) => marksOf(stream).length >= 1), 30_000);
    expect(resamplersOpen()).toBe(before);
    for (const stream of streams) stream.stop();
    await Promise.all(streams.map((stream) => stream.closed));
    for (const call of placed) expect(await twilio.sendStatus(call.sid, 'completed', { CallDuration: '4' })).toBe(204);
    await until('the ended calls', async () => (await Promise.all(placed.map(getCall))).every((got) => got.status === 'ENDED'));
    expect(resamplersOpen()).toBe(before);
  }, 60_000);
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
