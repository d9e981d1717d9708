import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import { openFakeTelnyxMediaStream, type FakeTelnyxMediaStream } from '../src/providers/telnyx/fake-media-stream.ts';
import { startFakeTelnyx, type FakeTelnyx, type FakeTelnyxCall } from '../src/providers/telnyx/fake.ts';
import { until } from './harness.ts';
import { tenantWith, uniqueNumber } from './voice-fixtures.ts';
import { marksOf, scripted, SPEAKING, speech, startVoiceLine, type VoiceLine } from './voice-line.ts';

// Issue 17 on Telnyx: a Telnyx call converses through the same pipeline as a Twilio call. Telnyx
// (Call Control, its signed webhooks and its side of the media stream), Deepgram, ElevenLabs and
// the model are local fakes speaking their real wire formats.
const apiKey = 'KEY0195F3C27A107000_telnyx-voice-key';
const connectionId = '1494404757140276705';
const clock = manualClock('2026-11-23T10:00:00.000Z'); // a Monday, inside the call window
let telnyx: FakeTelnyx;
let line: VoiceLine;

beforeAll(async () => {
  telnyx = await startFakeTelnyx({ apiKey, now: () => clock.now() });
  line = await startVoiceLine({ clock, env: { TELNYX_API_URL: telnyx.url, VOICE_SILENCE_SECONDS: '30' } });
});
afterAll(async () => {
  await line.close();
  await telnyx.close();
});

const OPENING = 'Hello, this is the clinic. How can I help?';
const mediaUrl = () => `ws://127.0.0.1:${line.port}/api/v1/telephony/telnyx/media`;
const incomingUrl = () => `http://127.0.0.1:${line.port}/api/v1/telephony/telnyx/incoming`;

/** A tenant with Telnyx, Deepgram and ElevenLabs connected, an agent that speaks, and a Telnyx number (answered by the agent when `inbound`). */
async function telnyxTenant(options: { agent?: Record<string, unknown>; inbound?: boolean } = {}) {
  const { owner, api } = await tenantWith(line.t.app, {
    telnyx: { apiKey, connectionId, publicKey: telnyx.publicKey },
    ...line.speechIntegrations(),
  });
  const agent = await api('POST', '/agents', { name: `Clinic ${uniqueNumber()}`, firstMessage: OPENING, ...SPEAKING, ...options.agent });
  expect(agent.statusCode, agent.body).toBe(201);
  const agentId = agent.json().id as string;
  const number = (
    await api('POST', '/voice-numbers', {
      phoneNumber: uniqueNumber(),
      provider: 'TELNYX',
      ...(options.inbound ? { inboundAgentId: agentId } : {}),
    })
  ).json() as { id: string; phoneNumber: string };
  const getCall = async (id: string) => (await api('GET', `/call-logs/${id}`)).json();
  const endedCall = (id: string) =>
    until('the ended call', async () => {
      const call = await getCall(id);
      return call.status === 'ENDED' ? call : undefined;
    });
  return { owner, api, agentId, number, getCall, endedCall };
}

/** One Telnyx campaign call placed (dialled through Call Control) and answered by the callee. */
async function answeredCall(agent: Record<string, unknown> = { tools: ['end_call'] }) {
  const tenant = await telnyxTenant({ agent });
  const { api } = tenant;
  const list = (await api('POST', '/contact-lists', { name: `List ${uniqueNumber()}` })).json();
  const to = uniqueNumber();
  await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
    contacts: [{ phoneNumber: to, name: 'Ana' }, { phoneNumber: uniqueNumber() }],
  });
  const created = await api('POST', '/campaigns', {
    name: `Voice ${uniqueNumber()}`,
    agentId: tenant.agentId,
    voiceNumberId: tenant.number.id,
    contactListId: list.id,
    timezone: 'UTC',
    maxAttempts: 1,
    // A fake carrier's calls to fictional US numbers at any hour, no solicitation: relaxed as the law allows.
    callingRules: false,
  });
  expect(created.statusCode, created.body).toBe(201);
  const campaign = created.json();
  const started = await api('POST', `/campaigns/${campaign.id}/start`, {});
  expect(started.statusCode, started.body).toBe(202);
  await dialerTick(line.t.runtime);
  const call = [...telnyx.calls.values()].find((c) => c.to === to)!;
  const logged = (await api('GET', `/call-logs?campaignId=${campaign.id}&limit=10`)).json().data as { id: string; toNumber: string }[];
  const callId = logged.find((c) => c.toNumber === to)!.id;
  expect(await telnyx.sendCallEvent(call.callControlId, 'call.answered')).toBe(204);
  return { ...tenant, call, callId };
}

const connect = (call: FakeTelnyxCall, overrides: { token?: string | null; clientState?: string | null } = {}) =>
  openFakeTelnyxMediaStream({ connectTo: mediaUrl(), call, ...overrides });
const audioFrames = (stream: FakeTelnyxMediaStream) =>
  stream.received.filter((m) => m.event === 'media').map((m) => Buffer.from(m.media!.payload, 'base64'));
const hangupOf = (call: FakeTelnyxCall) =>
  telnyx.requests.find((r) => r.path === `/v2/calls/${call.callControlId}/actions/hangup` && r.authorized);

describe('a Telnyx call is a conversation', () => {
  // Issue 40, item 3: a phone menu answered; the model presses keys through Call Control (send_dtmf).
  it('navigates a phone menu: phone_menu on the call log, press_digits sent as send_dtmf', async () => {
    const placed = await answeredCall({ tools: ['end_call', 'press_digits'] });
    const menu = 'Thank you for calling Acme. For sales, press 1. For support, press 2.';
    line.deepgram.script(...utterance(menu, { startsAfterBytes: 160, endsAfterBytes: 1600 }));
    line.chat.script(
      { kind: 'stream', text: [], toolCalls: [{ id: 'keys_1', name: 'press_digits', arguments: ['{"digits":"2"}'] }] },
      { kind: 'stream', text: [] },
    );
    const stream = await connect(placed.call);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(1600));
    const pressed = await until('the keys', () =>
      telnyx.requests.find((r) => r.path === `/v2/calls/${placed.call.callControlId}/actions/send_dtmf`),
    );
    expect(pressed).toMatchObject({ authorized: true, body: { digits: '2', duration_millis: 250 } });
    expect(placed.call.digits).toEqual(['2']);
    // The model hears it was pressed.
    await until('the second request', () =>
      JSON.stringify(line.chat.received.at(-1)!.body.messages).includes('Pressed 2.') ? true : undefined,
    );
    // The verdict is stored beside the conversation (with the other calls' of its turn), not before the model's next request.
    await until('phone_menu on the call log', async () =>
      (await placed.getCall(placed.callId)).answeredBy === 'phone_menu' ? true : undefined,
    );
    stream.stop();
    await stream.closed;
  });

  it('is dialled with a bidirectional PCMU stream carrying its token, speaks, hears, answers and hangs up after its last words', async () => {
    const placed = await answeredCall();
    // Dialled with our stream URL, call id (client state) and signed token (stream_auth_token).
    expect(placed.call.stream).toEqual({
      url: mediaUrl(),
      track: 'inbound_track',
      codec: 'PCMU',
      bidirectionalMode: 'rtp',
      bidirectionalCodec: 'PCMU',
      authToken: expect.stringMatching(/^[\w-]{43}$/),
    });
    expect(Buffer.from(placed.call.clientState!, 'base64').toString()).toBe(placed.callId);
    scripted.openingHours(line);
    const stream = await connect(placed.call);

    await until('the opening', () => marksOf(stream).length >= 1);
    expect(line.elevenlabs.speech.at(-1)!.body).toMatchObject({ text: OPENING });
    // Every message carries the stream's id, and every audio frame is one Telnyx plays (20 ms to 30 s of PCMU).
    expect(stream.received.every((m) => m.stream_id === stream.streamId)).toBe(true);
    expect(audioFrames(stream).every((frame) => frame.length >= 160 && frame.length <= 240_000)).toBe(true);

    await stream.sendAudio(speech(4000));
    await until('the reply', () => marksOf(stream).length >= 3);
    expect(line.chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open tomorrow?' });
    expect(line.elevenlabs.speech.slice(-2).map((s) => s.body.text)).toEqual(['We open at eight.', 'Parking is free behind the building.']);

    // end_call: after its last words were played, the call is hung up through Call Control.
    await until('the hang-up', () => hangupOf(placed.call));
    expect(await stream.closed).toMatchObject({ code: 1000 });
    clock.advance(12_000);
    expect(await telnyx.sendCallEvent(placed.call.callControlId, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(204);
    const call = await placed.endedCall(placed.callId);
    expect(call).toMatchObject({ outcome: 'ANSWERED', endReason: 'agent_ended', durationSec: 12 });
    expect(call.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', OPENING],
      ['contact', 'When do you open tomorrow?'],
      ['agent', 'We open at eight. Parking is free behind the building.'],
      ['tool', expect.any(String)],
    ]);
    expect(call.usage).toMatchObject({
      sttSeconds: 0.5,
      llmInputTokens: 120,
      llmOutputTokens: 19,
      telephonySeconds: 12,
      telephonyProvider: 'TELNYX',
    });
    expect(call.usage.ttsCharacters).toBe(OPENING.length + 'We open at eight.'.length + 'Parking is free behind the building.'.length);
    // Deepgram heard the caller's audio, in order, as 8 kHz μ-law.
    const session = line.deepgram.sessions.at(-1)!;
    expect(session.query).toMatchObject({ encoding: 'mulaw', sample_rate: '8000' });
    expect(line.deepgram.audioOf(session).length).toBe(4000);
  });

  it('clears what Telnyx still has queued when the caller speaks over the agent, and records what they heard', async () => {
    const placed = await answeredCall();
    scripted.interrupted(line);
    const stream = await connect(placed.call);
    await until('the opening', () => marksOf(stream).length >= 1);
    stream.holdMarks(true);
    await stream.sendAudio(speech(1600));
    await until('the long reply', () => marksOf(stream).length >= 3);
    stream.releaseMarks(1); // Telnyx played the first sentence only
    await stream.sendAudio(speech(3200));
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    expect(stream.received.find((m) => m.event === 'clear')).toEqual({ event: 'clear', stream_id: stream.streamId });
    stream.holdMarks(false);
    stream.releaseMarks();
    const call = await until('the second reply recorded', async () => {
      const got = await placed.getCall(placed.callId);
      return got.transcript.length >= 5 ? got : undefined;
    });
    expect(call.transcript[2]).toMatchObject({ role: 'agent', text: 'Parking is behind the building.', interrupted: true });
    expect(call.transcript[4]).toMatchObject({ role: 'agent', text: 'It is free.' });
    stream.stop();
    await stream.closed;
  });

  it('sends the voice’s audio in frames Telnyx plays: whole 20 ms frames, the tail before a mark padded with silence', async () => {
    const placed = await answeredCall();
    line.deepgram.script();
    // The voice delivers 340 bytes of speech in pieces of 100, 150 and 90 bytes (shorter than Telnyx plays).
    line.elevenlabs.script({ kind: 'audio', chunks: [Buffer.alloc(100, 0x11), Buffer.alloc(150, 0x22), Buffer.alloc(90, 0x33)] });
    const stream = await connect(placed.call);
    await until('the opening', () => marksOf(stream).length >= 1);
    const frames = audioFrames(stream);
    expect(frames.map((frame) => frame.length)).toEqual([160, 160, 160]);
    const played = Buffer.concat(frames);
    expect(played.subarray(0, 340)).toEqual(Buffer.concat([Buffer.alloc(100, 0x11), Buffer.alloc(150, 0x22), Buffer.alloc(90, 0x33)]));
    expect(played.subarray(340)).toEqual(Buffer.alloc(140, 0xff)); // μ-law silence
    // The mark follows the last frame.
    expect(stream.received.filter((m) => m.event !== 'media').map((m) => m.event)).toEqual(['mark']);
    stream.stop();
    await stream.closed;
  });

  it('sends eSpeak NG’s sentences in frames that each carry audio, the empty chunk ending each sentence included', async () => {
    const placed = await answeredCall({ tts: { provider: 'ESPEAK' }, voice: undefined });
    line.deepgram.script();
    const stream = await connect(placed.call);
    await until('the opening', () => marksOf(stream).length >= 1, 20_000);
    const frames = audioFrames(stream);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.filter((frame) => frame.length < 160).map((frame) => frame.length)).toEqual([]);
    stream.stop();
    await stream.closed;
  }, 30_000);

  it('passes a key the caller presses to the model', async () => {
    const placed = await answeredCall();
    line.deepgram.script();
    line.chat.script({ kind: 'stream', text: ['You chose the second option.'] });
    const stream = await connect(placed.call);
    await until('the opening', () => marksOf(stream).length >= 1);
    const asked = line.chat.received.length;
    stream.sendDtmf('2');
    await until('the answer', () => marksOf(stream).length >= 2);
    expect(line.chat.received[asked]!.body.messages.at(-1)).toEqual({ role: 'user', content: '(The caller pressed 2 on the keypad.)' });
    stream.stop();
    await stream.closed;
  });
});

describe('a Telnyx media stream proves whose call it carries', () => {
  it('refuses an upgrade without the stream token before the socket opens', async () => {
    const placed = await answeredCall();
    await expect(connect(placed.call, { token: null })).rejects.toThrow('HTTP 403');
    expect((await placed.getCall(placed.callId)).transcript).toEqual([]);
  });

  it.each([
    ['a token signed for another call', 'token'],
    ['no call id in its client state', 'clientState'],
    ['a call Telnyx never placed for us', 'unknownCall'],
  ] as const)('closes a stream with %s, and the call is untouched', async (_, fault) => {
    const placed = await answeredCall();
    const other = await answeredCall();
    const spoken = line.elevenlabs.speech.length;
    const stream =
      fault === 'token'
        ? await connect(placed.call, { token: other.call.stream!.authToken })
        : fault === 'clientState'
          ? await connect(placed.call, { clientState: null })
          : await connect({ ...placed.call, callControlId: `v3:${'0'.repeat(32)}` });
    expect(await stream.closed).toMatchObject({ code: 1008, reason: 'The stream is not signed for a live call.' });
    const call = await placed.getCall(placed.callId);
    expect(call.transcript).toEqual([]);
    expect(call.status).toBe('IN_PROGRESS'); // as Telnyx's answer left it, its conversation not started
    expect(line.elevenlabs.speech.length).toBe(spoken); // nothing was said on it
  });

  it('refuses a second stream for a call that has one', async () => {
    const placed = await answeredCall();
    line.deepgram.script();
    const live = await connect(placed.call);
    await until('the opening', () => marksOf(live).length >= 1);
    const second = await connect(placed.call);
    expect(await second.closed).toMatchObject({ code: 1008, reason: 'The call is over or already has its stream.' });
    live.stop();
    await live.closed;
  });
});

describe('an incoming call to a Telnyx number with an agent', () => {
  const ring = (
    tenant: Awaited<ReturnType<typeof telnyxTenant>>,
    from: string,
    extra: Partial<Parameters<FakeTelnyx['ringNumber']>[0]> = {},
  ) => telnyx.ringNumber({ webhookUrl: incomingUrl(), from, to: tenant.number.phoneNumber, connectionId, ...extra });
  const incomingCalls = async (tenant: Awaited<ReturnType<typeof telnyxTenant>>) =>
    (await tenant.api('GET', '/call-logs?direction=INCOMING&limit=100')).json().data as Record<string, unknown>[];

  it('is answered by the agent through the media stream, and ends when the caller hangs up', async () => {
    const tenant = await telnyxTenant({ inbound: true });
    const caller = uniqueNumber();
    const rung = await ring(tenant, caller);
    expect(rung.status).toBe(200);
    const [recorded] = await incomingCalls(tenant);
    expect(recorded).toMatchObject({
      direction: 'INCOMING',
      status: 'IN_PROGRESS',
      agentId: tenant.agentId,
      fromNumber: caller,
      toNumber: tenant.number.phoneNumber,
    });
    // Answered through Call Control with the stream, our call id and token, and the status URL for its later events.
    const call = telnyx.calls.get(rung.callControlId)!;
    expect(call).toMatchObject({ answered: true, webhookUrl: `http://127.0.0.1:${line.port}/api/v1/telephony/telnyx/status` });
    expect(call.stream).toMatchObject({ url: mediaUrl(), bidirectionalMode: 'rtp', authToken: expect.stringMatching(/^[\w-]{43}$/) });
    expect(Buffer.from(call.clientState!, 'base64').toString()).toBe(recorded!.id);

    // A retried webhook records no second call; its answer carries the same command_id, which Telnyx ignores.
    expect((await ring(tenant, caller, { callControlId: rung.callControlId })).status).toBe(200);
    expect(await incomingCalls(tenant)).toHaveLength(1);
    const answers = telnyx.requests.filter((r) => r.path === `/v2/calls/${rung.callControlId}/actions/answer`);
    expect(answers.map((r) => r.body!.command_id)).toEqual([recorded!.id, recorded!.id]);

    line.deepgram.script(...utterance('Can I book a cleaning?', { startsAfterBytes: 800, endsAfterBytes: 4000 }));
    line.chat.script({ kind: 'stream', text: ['Of course. ', 'Tuesday at nine works.'] });
    const stream = await connect(call);
    await until('the opening', () => marksOf(stream).length >= 1);
    await stream.sendAudio(speech(4000));
    await until('the reply', () => marksOf(stream).length >= 3);

    clock.advance(9_000);
    stream.stop();
    await stream.closed;
    const ended = await tenant.endedCall(recorded!.id as string);
    expect(ended).toMatchObject({ outcome: 'ANSWERED', endReason: 'contact_hung_up', durationSec: 9 });
    expect(ended.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', OPENING],
      ['contact', 'Can I book a cleaning?'],
      ['agent', 'Of course. Tuesday at nine works.'],
    ]);
    // Telnyx's hang-up, on the status URL, finds the call ended and changes nothing.
    expect(await telnyx.sendCallEvent(rung.callControlId, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(204);
    expect((await tenant.getCall(recorded!.id as string)).durationSec).toBe(9);
  });

  it('is rejected busy when no agent can take it, recorded not answered', async () => {
    const tenant = await telnyxTenant({ inbound: false });
    const rung = await ring(tenant, uniqueNumber());
    expect(rung.status).toBe(200);
    expect(telnyx.calls.get(rung.callControlId)).toMatchObject({ answered: false, rejectedWith: 'USER_BUSY' });
    const [recorded] = await incomingCalls(tenant);
    expect(recorded).toMatchObject({
      status: 'ENDED',
      outcome: 'UNANSWERED',
      failureReason: 'The number has no inbound agent to answer it.',
    });
    // Its hang-up comes to the application's URL (it was never answered): taken as the status event it is.
    expect(await telnyx.sendCallEvent(rung.callControlId, 'call.hangup', { hangup_cause: 'call_rejected' })).toBe(200);
    expect(await incomingCalls(tenant)).toHaveLength(1);
  });

  it.each([
    ['signed with another key', { delivery: { privateKey: generateKeyPairSync('ed25519').privateKey } }],
    ['from another Call Control application', { connectionId: '9999999999999999999' }],
  ])('refuses a webhook %s with 403, recording and answering nothing', async (_, extra) => {
    const tenant = await telnyxTenant({ inbound: true });
    const rung = await ring(tenant, uniqueNumber(), extra);
    expect(rung.status).toBe(403);
    expect(await incomingCalls(tenant)).toEqual([]);
    expect(telnyx.calls.get(rung.callControlId)).toMatchObject({ answered: false, rejectedWith: null });
  });
});
