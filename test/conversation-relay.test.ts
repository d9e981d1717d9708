import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFakeConversationRelay, relayOf, type FakeConversationRelay } from '../src/providers/twilio/fake-conversation-relay.ts';
import { until } from './harness.ts';
import { startTwilioVoice, type TwilioVoice } from './twilio-voice.ts';
import { tenantWith, uniqueNumber } from './voice-fixtures.ts';
import { VOICE, type VoiceLine } from './voice-line.ts';

// Issue 17: Twilio's ConversationRelay as an agent's voice. Twilio listens and speaks; callforge
// gets the caller's words as text and streams the agent's back. Twilio (its REST API, status
// callbacks and relay socket), ElevenLabs' voice list and the model are local fakes speaking their
// real wire formats; the engine between them is the media pipeline's.
const OPENING = 'Hello, this is the clinic. How can I help?';
let voice: TwilioVoice;
let twilio: TwilioVoice['twilio'];
let elevenlabs: VoiceLine['elevenlabs'];
let chat: VoiceLine['chat'];
let port: number;

beforeAll(async () => {
  // Words "play" in a few milliseconds: the estimate of their end is not what these tests wait on (test/relay-call.test.ts).
  voice = await startTwilioVoice({ VOICE_RELAY_CHARACTERS_PER_SECOND: '1000' });
  ({ twilio, elevenlabs, chat, port } = voice);
});
afterAll(() => voice.close());

const RELAY_AGENT = { name: 'Clinic', firstMessage: OPENING, voicePipeline: 'CONVERSATION_RELAY', tools: ['end_call'] };

/** A relay agent (Deepgram and an ElevenLabs voice, run by Twilio) and one of its calls placed and ringing. */
async function placedRelayCall(agentFields: Record<string, unknown> = {}) {
  const placed = await voice.placeCall({ voicePipeline: 'CONVERSATION_RELAY', ...agentFields });
  return { ...placed, relay: relayOf(placed.twiml) };
}

type Placed = Awaited<ReturnType<typeof placedRelayCall>>;
const relayUrl = () => `ws://127.0.0.1:${port}/api/v1/telephony/twilio/relay`;
const connect = (placed: Placed, overrides: Partial<Parameters<typeof openFakeConversationRelay>[0]> = {}) =>
  openFakeConversationRelay({
    connectTo: relayUrl(),
    relay: placed.relay,
    accountSid: voice.accountSid,
    authToken: voice.authToken,
    callSid: placed.sid,
    ...overrides,
  });
const getCall = async (placed: Pick<Placed, 'api' | 'callId'>) => (await placed.api('GET', `/call-logs/${placed.callId}`)).json();
const endedCall = (placed: Pick<Placed, 'api' | 'callId'>) =>
  until('the ended call', async () => {
    const call = await getCall(placed);
    return call.status === 'ENDED' ? call : undefined;
  });
/** Replies Twilio was sent whole (closed by `last`). */
const closedReplies = (relay: FakeConversationRelay) => relay.received.filter((m) => m.type === 'text' && 'last' in m && m.last).length;
const hangupOf = (placed: Placed) => () =>
  twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Status') === 'completed');

describe('an agent voiced by ConversationRelay', () => {
  it('takes Twilio’s Deepgram and ElevenLabs by default, shows its pipeline, and is documented', async () => {
    const { api } = await tenantWith(voice.t.app, {});
    const relay = await api('POST', '/agents', { name: 'Relay', voicePipeline: 'CONVERSATION_RELAY' });
    expect(relay.statusCode, relay.body).toBe(201);
    // No key of ours is needed: Twilio runs both, and picks its default voice for the language.
    expect(relay.json()).toMatchObject({
      voicePipeline: 'CONVERSATION_RELAY',
      stt: { provider: 'DEEPGRAM' },
      tts: { provider: 'ELEVENLABS' },
      voice: null,
    });
    expect((await api('GET', `/agents/${relay.json().id}`)).json().voicePipeline).toBe('CONVERSATION_RELAY');
    expect((await api('POST', '/agents', { name: 'Streamed' })).json().voicePipeline).toBe('MEDIA_STREAM');
    expect(
      (await api('GET', '/agents'))
        .json()
        .data.map((agent: { voicePipeline: string }) => agent.voicePipeline)
        .sort(),
    ).toEqual(['CONVERSATION_RELAY', 'MEDIA_STREAM']);
    const spec = (await voice.t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(JSON.stringify(spec.paths['/api/v1/agents'].post)).toContain('"enum":["MEDIA_STREAM","CONVERSATION_RELAY"]');
  });

  it.each([
    ['the offline voice', { tts: { provider: 'ESPEAK' } }, '/tts/provider', 'Twilio speaks with its own ElevenLabs'],
    ['no recogniser', { stt: null }, '/stt', 'Twilio listens with its own Deepgram'],
    ['an OpenAI-compatible recogniser', { stt: { provider: 'OPENAI_COMPATIBLE' } }, '/stt', 'Twilio listens with its own Deepgram'],
    [
      'an ElevenLabs model',
      { tts: { provider: 'ELEVENLABS', model: 'eleven_flash_v2_5' } },
      '/tts/model',
      'Twilio chooses the ElevenLabs model',
    ],
    ['a voice it cannot check without an ElevenLabs key', { voice: VOICE }, '/voice', "a voice is checked against ElevenLabs' voices"],
  ])('refuses %s with a 400 that says what to change', async (_, fields, path, problem) => {
    const { api } = await tenantWith(voice.t.app, {});
    const refused = await api('POST', '/agents', { name: 'Relay', voicePipeline: 'CONVERSATION_RELAY', ...fields });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'CONVERSATION_RELAY_SPEECH', details: [{ path }] });
    expect(refused.json().message).toMatch(new RegExp(`^With voicePipeline CONVERSATION_RELAY, ${problem}.*; .+\\.$`));
  });

  it('checks a voice against ElevenLabs’ voices, and checks speech again when the agent leaves ConversationRelay', async () => {
    const { api } = await tenantWith(voice.t.app, { elevenlabs: { apiKey: elevenlabs.apiKey } });
    const agent = await api('POST', '/agents', { name: 'Relay', voicePipeline: 'CONVERSATION_RELAY', voice: VOICE });
    expect(agent.statusCode, agent.body).toBe(201);
    expect(agent.json().voice).toBe(VOICE);
    expect((await api('PATCH', `/agents/${agent.json().id}`, { voice: 'no-such-voice' })).json().code).toBe('UNKNOWN_VOICE');
    // Streamed, the agent's Deepgram would be callforge's to reach: this tenant has no Deepgram key.
    const back = await api('PATCH', `/agents/${agent.json().id}`, { voicePipeline: 'MEDIA_STREAM' });
    expect(back.statusCode).toBe(400);
    expect(back.json()).toMatchObject({ code: 'SPEECH_NOT_CONFIGURED', details: [{ path: '/stt/provider' }] });
    const streamed = await api('PATCH', `/agents/${agent.json().id}`, { voicePipeline: 'MEDIA_STREAM', stt: null });
    expect(streamed.json()).toMatchObject({ voicePipeline: 'MEDIA_STREAM', stt: null, tts: { provider: 'ELEVENLABS' }, voice: VOICE });
    // Back to the relay with the eSpeak voice it never had: refused, the agent as it was.
    const espeak = await api('PATCH', `/agents/${agent.json().id}`, { voicePipeline: 'CONVERSATION_RELAY', tts: { provider: 'ESPEAK' } });
    expect(espeak.json().code).toBe('CONVERSATION_RELAY_SPEECH');
    expect((await api('GET', `/agents/${agent.json().id}`)).json().voicePipeline).toBe('MEDIA_STREAM');
  });
});

describe('a Twilio call voiced by ConversationRelay', () => {
  it('streams the opening and the model’s words as text, records the conversation, and ends the call after its last words', async () => {
    const placed = await placedRelayCall({ stt: { provider: 'DEEPGRAM', model: 'nova-3-general' } });
    // The call's TwiML hands it to ConversationRelay with the agent's speech, the call id and its signed token.
    expect(placed.relay).toEqual({
      url: relayUrl(),
      attributes: {
        language: 'en-US',
        ttsProvider: 'ElevenLabs',
        voice: VOICE,
        transcriptionProvider: 'Deepgram',
        speechModel: 'nova-3-general',
        interruptible: 'any',
        dtmfDetection: 'true',
        partialPrompts: 'true',
      },
      parameters: { callId: placed.callId, token: expect.stringMatching(/^[\w-]{43}$/) },
    });
    expect(placed.twiml).toMatch(
      /^<Response><Connect><ConversationRelay [^>]+>(<Parameter [^>]+\/>){2}<\/ConversationRelay><\/Connect><\/Response>$/,
    );
    chat.script({
      kind: 'stream',
      text: ['We open ', 'at eight. ', 'Parking is free.'],
      toolCalls: [{ id: 'end_1', name: 'end_call', arguments: ['{}'] }],
      usage: { prompt_tokens: 120, completion_tokens: 19 },
    });
    const relay = await connect(placed);

    await until('the opening', () => closedReplies(relay) >= 1);
    expect(relay.replies()).toEqual([OPENING]);
    expect((await getCall(placed)).status).toBe('IN_PROGRESS');
    relay.prompt('When do you open tomorrow?');
    const hangup = await until('the hang-up', hangupOf(placed));
    expect(hangup.authorized).toBe(true);
    // The model's words went to Twilio as it wrote them, the reply closed by `last`, then the session ended.
    const tokens = relay.received
      .filter((m) => m.type === 'text')
      .map((m) => [(m as { token: string }).token, (m as { last: boolean }).last]);
    expect(tokens.slice(2)).toEqual([
      ['We open ', false],
      ['at eight. ', false],
      ['Parking is free.', false],
      ['', true],
    ]);
    expect(await relay.closed).toMatchObject({ code: 1000 });
    expect(relay.received.at(-1)).toEqual({ type: 'end', handoffData: JSON.stringify({ endReason: 'agent_ended' }) });
    expect(chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open tomorrow?' });

    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '12' })).toBe(204);
    const call = await endedCall(placed);
    expect(call).toMatchObject({ outcome: 'ANSWERED', endReason: 'agent_ended', durationSec: 12 });
    expect(call.transcript.map((turn: { role: string; text: string; by?: string }) => [turn.role, turn.text, turn.by ?? null])).toEqual([
      ['agent', OPENING, 'first-message'],
      ['contact', 'When do you open tomorrow?', null],
      ['agent', 'We open at eight. Parking is free.', 'model:phone-model'],
      ['tool', expect.any(String), null],
    ]);
    // Our recogniser and voice did not run: Twilio listened and spoke, and bills that itself.
    expect(call.usage).toMatchObject({ sttSeconds: 0, ttsCharacters: 0, llmInputTokens: 120, llmOutputTokens: 19, telephonySeconds: 12 });
    expect(Number(call.cost.stt)).toBe(0);
    expect(Number(call.cost.tts)).toBe(0);
    expect(Number(call.cost.llm)).toBeGreaterThan(0);
  });

  it('records what the caller heard when they cut the agent short, and the model remembers only that', async () => {
    const placed = await placedRelayCall();
    chat.script(
      { kind: 'stream', text: ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff.'] },
      { kind: 'stream', text: ['It is free.'] },
    );
    const relay = await connect(placed);
    await until('the opening', () => closedReplies(relay) >= 1);
    relay.prompt('Tell me everything about parking.');
    await until('the long reply', () => closedReplies(relay) >= 2);
    relay.interrupt('Parking is behind the building. It has');
    relay.prompt('Sorry, just the price.');
    await until('the second answer', () => closedReplies(relay) >= 3);
    const second = chat.received.at(-1)!.body.messages as { role: string; content: string | null }[];
    expect(second.at(-2)).toEqual({ role: 'assistant', content: 'Parking is behind the building. It has …' });
    expect(second.at(-1)).toEqual({ role: 'user', content: 'Sorry, just the price.' });
    relay.hangUp();
    await relay.closed;
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '20' })).toBe(204);
    const call = await endedCall(placed);
    expect(call.endReason).toBe('contact_hung_up');
    expect(
      call.transcript.map((turn: { role: string; text: string; interrupted?: boolean }) => [
        turn.role,
        turn.text,
        turn.interrupted ?? false,
      ]),
    ).toEqual([
      ['agent', OPENING, false],
      ['contact', 'Tell me everything about parking.', false],
      ['agent', 'Parking is behind the building. It has', true],
      ['contact', 'Sorry, just the price.', false],
      ['agent', 'It is free.', false],
    ]);
  });

  it('passes a key the caller presses to the model, and goes on past malformed messages and Twilio’s error reports', async () => {
    const placed = await placedRelayCall();
    chat.script({ kind: 'stream', text: ['You chose the second option.'] });
    const relay = await connect(placed);
    await until('the opening', () => closedReplies(relay) >= 1);
    relay.sendRaw('not json');
    relay.sendRaw('{"type":"prompt"}');
    relay.sendError('Invalid message received: missing token');
    const asked = chat.received.length;
    relay.sendDtmf('2');
    await until('the answer', () => closedReplies(relay) >= 2);
    expect(chat.received[asked]!.body.messages.at(-1)).toEqual({ role: 'user', content: '(The caller pressed 2 on the keypad.)' });
    expect(relay.replies()[1]).toBe('You chose the second option.');
    relay.hangUp();
    await relay.closed;
  });

  it("transfers the caller to the agent's transfer number after its last words", async () => {
    const transferNumber = uniqueNumber();
    const placed = await placedRelayCall({ tools: ['transfer_call'], transferNumber });
    chat.script({
      kind: 'stream',
      text: ['Of course, let me connect you.'],
      toolCalls: [{ id: 'transfer_1', name: 'transfer_call', arguments: ['{"reason":"asked for a person"}'] }],
    });
    const relay = await connect(placed);
    await until('the opening', () => closedReplies(relay) >= 1);
    relay.prompt('Can I talk to a person?');
    const bridged = await until('the transfer', () =>
      twilio.requests.find((r) => r.path.endsWith(`/Calls/${placed.sid}.json`) && r.form.get('Twiml')?.includes('<Dial>')),
    );
    expect(bridged.form.get('Twiml')).toBe(`<Response><Dial>${transferNumber}</Dial></Response>`);
    expect(relay.replies()[1]).toBe('Of course, let me connect you.');
    // The new TwiML ends the session and dials: no `end`, which would hang the caller up first.
    expect(await relay.closed).toMatchObject({ code: 1000 });
    expect(relay.received.some((m) => m.type === 'end')).toBe(false);
    expect(hangupOf(placed)()).toBeUndefined();
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '30' })).toBe(204);
    const call = await endedCall(placed);
    expect(call.endReason).toBe('transferred');
    expect(call.outcomes).toEqual([
      expect.objectContaining({ type: 'transfer', data: { to: transferNumber, reason: 'asked for a person', summary: null } }),
    ]);
  });

  it('asks once whether the caller is still there, then says goodbye and hangs up', async () => {
    const placed = await placedRelayCall();
    const relay = await connect(placed);
    await until('the hang-up after silence', hangupOf(placed), 15_000);
    expect(relay.replies()).toEqual([OPENING, 'Are you still there?', "I can't hear you, so I'll let you go. Goodbye."]);
    await relay.closed;
    expect(await twilio.sendStatus(placed.sid, 'completed', { CallDuration: '5' })).toBe(204);
    const call = await endedCall(placed);
    expect(call.endReason).toBe('silence');
    expect(call.transcript.map((turn: { text: string; by: string }) => [turn.text, turn.by])).toEqual([
      [OPENING, 'first-message'],
      ['Are you still there?', 'pipeline'],
      ["I can't hear you, so I'll let you go. Goodbye.", 'pipeline'],
    ]);
  }, 20_000);
});

describe('an incoming call to a relay agent’s number', () => {
  it('is answered with ConversationRelay, needs no speech key of ours, and ends when Twilio closes the session', async () => {
    const { api } = await tenantWith(voice.t.app, { twilio: { accountSid: voice.accountSid, authToken: voice.authToken } });
    const agent = (await api('POST', '/agents', RELAY_AGENT)).json();
    const number = (
      await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'TWILIO', inboundAgentId: agent.id })
    ).json();
    const answer = await twilio.ringNumber({
      voiceUrl: `http://127.0.0.1:${port}/api/v1/telephony/twilio/incoming`,
      from: uniqueNumber(),
      to: number.phoneNumber,
    });
    expect(answer.status).toBe(200);
    const relay = relayOf(answer.body);
    const [incoming] = (await api('GET', '/call-logs?direction=INCOMING&limit=10')).json().data;
    expect(relay).toMatchObject({ url: relayUrl(), attributes: { ttsProvider: 'ElevenLabs', transcriptionProvider: 'Deepgram' } });
    expect(relay.parameters).toEqual({ callId: incoming.id, token: expect.stringMatching(/^[\w-]{43}$/) });
    const session = await openFakeConversationRelay({
      connectTo: relayUrl(),
      relay,
      accountSid: voice.accountSid,
      authToken: voice.authToken,
      callSid: answer.sid,
    });
    await until('the opening', () => closedReplies(session) >= 1);
    session.hangUp();
    const call = await endedCall({ api, callId: incoming.id });
    expect(call).toMatchObject({ outcome: 'ANSWERED', endReason: 'contact_hung_up' });
    expect(call.transcript).toEqual([expect.objectContaining({ role: 'agent', text: OPENING })]);
  });
});

describe('a ConversationRelay session proves whose call it carries', () => {
  it('refuses an unsigned upgrade before the socket opens', async () => {
    const placed = await placedRelayCall();
    await expect(connect(placed, { signature: null })).rejects.toThrow('HTTP 403');
    expect((await getCall(placed)).status).not.toBe('IN_PROGRESS');
  });

  it.each([
    ['signed with another auth token', { signature: 'dGhpcyBpcyBub3QgaXQ=' }],
    ['with a token for another call', { token: 'not-the-token' }],
  ])('closes a session %s, and the call is untouched', async (_, overrides) => {
    const placed = await placedRelayCall();
    const relay = await connect(placed, {
      ...('signature' in overrides ? { signature: overrides.signature } : {}),
      ...('token' in overrides ? { parameters: { callId: placed.callId, token: overrides.token } } : {}),
    });
    expect(await relay.closed).toEqual({ code: 1008, reason: 'The stream is not signed for a live call.' });
    const call = await getCall(placed);
    expect(call.status).not.toBe('IN_PROGRESS');
    expect(call.transcript).toEqual([]);
    expect(relay.received).toEqual([]);
  });

  it("refuses another tenant's parameters and a replayed session", async () => {
    const first = await placedRelayCall();
    const second = await placedRelayCall();
    // The first call's signed parameters presented for the second call, of another tenant.
    const crossed = await connect(second, { parameters: first.relay.parameters });
    expect(await crossed.closed).toMatchObject({ code: 1008 });
    expect((await getCall(second)).transcript).toEqual([]);
    const live = await connect(first);
    await until('the opening', () => closedReplies(live) >= 1);
    const replayed = await connect(first);
    expect(await replayed.closed).toEqual({ code: 1008, reason: 'The call is over or already has its stream.' });
    live.hangUp();
    await live.closed;
  });
});
