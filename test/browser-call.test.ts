import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BROWSER_CALL_PROTOCOL } from '../src/modules/media/schemas.ts';
import type { BrowserCallEvent } from '../src/modules/media/schemas.ts';
import { creditWallet } from '../src/modules/identity/service.ts';
import { startFakeDeepgram, utterance } from '../src/providers/deepgram/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { bearer, startTestApp, until, type TestApp } from './harness.ts';
import { tenantWith } from './voice-fixtures.ts';

// Issue 17: "Call me in the browser" at the WebSocket level, without a browser: who may open the
// call, and its protocol (PCM16 16 kHz both ways, marks echoed, clear on barge-in, the test chat
// recorded and billed). Deepgram and the model are local fakes speaking their wire formats; the
// voice is the offline eSpeak NG, synthesising for real.
let t: TestApp;
let deepgram: Awaited<ReturnType<typeof startFakeDeepgram>>;
let chat: Awaited<ReturnType<typeof startFakeChat>>;
let origin: string;

beforeAll(async () => {
  [deepgram, chat] = await Promise.all([startFakeDeepgram({ apiKey: 'dg-test-key-0123456789' }), startFakeChat()]);
  t = await startTestApp({
    env: {
      DEEPGRAM_API_URL: deepgram.url,
      LLM_API_URL: `${chat.url}/v1`,
      LLM_MODEL: 'browser-model',
      // Round figures: a second of Deepgram's listening costs 0.0200 (its own rate; others' 0.0100),
      // a character spoken 0.0001, a token 0.0001.
      RATE_STT_PER_MINUTE: '0.6',
      RATE_PROVIDERS: JSON.stringify({ DEEPGRAM: { sttPerMinute: '1.2' } }),
      RATE_TTS_PER_1K_CHARACTERS: '0.1',
      RATE_LLM_PER_1K_TOKENS: '0.1',
      RATE_LIMIT_PER_MINUTE: '100000',
    },
  });
  origin = (await t.app.listen({ host: '127.0.0.1', port: 0 })).replace(/^http/, 'ws');
});
afterAll(async () => {
  await t.close();
  await Promise.all([deepgram.close(), chat.close()]);
});

const OPENING = 'Hello, this is the clinic.';

/** A tenant with Deepgram connected and an agent that listens live and speaks with eSpeak. */
async function tenantWithAgent(agentFields: Record<string, unknown> = {}) {
  const tenant = await tenantWith(t.app, { deepgram: { apiKey: deepgram.apiKey } });
  const agent = await tenant.api('POST', '/agents', {
    name: 'Clinic',
    firstMessage: OPENING,
    stt: { provider: 'DEEPGRAM' },
    ...agentFields,
  });
  expect(agent.statusCode).toBe(201);
  return { ...tenant, agentId: agent.json().id as string };
}

/** The dashboard's side of the socket: events in order, the agent's audio, and what it sent. */
interface BrowserEnd {
  socket: WebSocket;
  events: BrowserCallEvent[];
  audio: Buffer[];
  closed: Promise<{ code: number; reason: string }>;
  send(command: object): void;
  sendAudio(bytes: number): Promise<void>;
  next<T extends BrowserCallEvent['type']>(type: T, after?: number): Promise<Extract<BrowserCallEvent, { type: T }>>;
}

function callFromBrowser(agentId: string, token: string): Promise<BrowserEnd> {
  const socket = new WebSocket(`${origin}/api/v1/test-chats/voice?agentId=${agentId}`, [BROWSER_CALL_PROTOCOL, `bearer.${token}`]);
  const events: BrowserCallEvent[] = [];
  const audio: Buffer[] = [];
  socket.on('message', (data: Buffer, isBinary) => (isBinary ? audio.push(data) : events.push(JSON.parse(data.toString()))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const end: BrowserEnd = {
    socket,
    events,
    audio,
    closed,
    send: (command) => socket.send(JSON.stringify(command)),
    async sendAudio(bytes) {
      // 20 ms frames of silence, as the dashboard's worklet sends them: what Deepgram "hears" is scripted by bytes.
      for (let sent = 0; sent < bytes; sent += 640) socket.send(Buffer.alloc(Math.min(640, bytes - sent)));
    },
    next: (type, after = 0) => until(`a '${type}' event`, () => events.slice(after).find((event) => event.type === type) as never, 15_000),
  };
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(end));
    socket.once('error', reject);
  });
}

/** The upgrade's answer when it is refused: status and error body, read before any socket exists. */
function refusedUpgrade(url: string, options: { protocols?: string[]; headers?: Record<string, string> } = {}) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
    socket.once('open', () => reject(new Error('the upgrade was accepted')));
    socket.once('unexpected-response', (request, response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => {
        request.destroy(); // with this listener, ws leaves the connection to us
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) });
      });
    });
  });
}

const marksOf = (events: BrowserCallEvent[]) => events.filter((event) => event.type === 'mark').map((event) => event.name);
const echoMarks = (end: BrowserEnd, names: string[]) => names.forEach((name) => end.send({ type: 'mark', name }));
const testChatsOf = async (tenantId: string) =>
  Number((await t.runtime.db.query<{ n: string }>('SELECT count(*) AS n FROM test_chats WHERE tenant_id = $1', [tenantId])).rows[0]!.n);

describe('a call from the browser', () => {
  it('is refused before the socket opens without a dashboard session: nothing is created', async () => {
    const { owner, key, agentId } = await tenantWithAgent();
    const url = `${origin}/api/v1/test-chats/voice?agentId=${agentId}`;
    const listening = deepgram.sessions.length;

    const anonymous = await refusedUpgrade(url, { protocols: [BROWSER_CALL_PROTOCOL] });
    expect(anonymous).toMatchObject({ status: 401, body: { code: 'AUTHENTICATION_REQUIRED', message: 'Authentication required' } });
    const forged = await refusedUpgrade(url, { protocols: [BROWSER_CALL_PROTOCOL, 'bearer.not-a-session'] });
    expect(forged).toMatchObject({ status: 401, body: { code: 'INVALID_SESSION' } });
    // An API key is not a dashboard session, whether in the header or offered as the subprotocol.
    const withKey = await refusedUpgrade(url, { headers: bearer(key) });
    expect(withKey).toMatchObject({ status: 403, body: { code: 'API_KEY_NOT_ALLOWED' } });
    expect(await refusedUpgrade(url, { protocols: [BROWSER_CALL_PROTOCOL, `bearer.${key}`] })).toMatchObject({ status: 403 });
    // A bad query is the documented 400, before the socket too.
    const badQuery = await refusedUpgrade(`${origin}/api/v1/test-chats/voice?agentId=nope`, {
      protocols: [BROWSER_CALL_PROTOCOL, `bearer.${owner.token}`],
    });
    expect(badQuery).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED', details: [{ path: '/agentId' }] } });

    expect(deepgram.sessions.length).toBe(listening);
    expect(await testChatsOf(owner.tenantId)).toBe(0);
  });

  it("never echoes the session token as the socket's subprotocol", async () => {
    const { owner, agentId } = await tenantWithAgent({ stt: null });
    const end = await callFromBrowser(agentId, owner.token);
    expect(end.socket.protocol).toBe(BROWSER_CALL_PROTOCOL);
    await end.closed;
  });

  it("explains why a call cannot start (no live recogniser, an empty wallet, another tenant's agent), then closes with 1008", async () => {
    const { owner, agentId } = await tenantWithAgent({ stt: null });
    const end = await callFromBrowser(agentId, owner.token);
    expect(await end.closed).toEqual({ code: 1008, reason: 'BROWSER_CALL_NEEDS_LIVE_STT' });
    expect(end.events).toEqual([
      {
        type: 'error',
        statusCode: 409,
        error: 'Conflict',
        code: 'BROWSER_CALL_NEEDS_LIVE_STT',
        message:
          'Clinic has no live speech-to-text to listen with; choose Deepgram in its Voice settings (and connect a Deepgram key under Integrations) to call it from the browser.',
        requestId: expect.any(String),
      },
    ]);
    expect(await testChatsOf(owner.tenantId)).toBe(0);

    // An empty wallet: the call would be billed, so it is not started.
    const poor = await tenantWithAgent();
    await creditWallet(t.runtime.db, poor.owner.tenantId, '-10.0000', 'test: empty the wallet');
    const unpaid = await callFromBrowser(poor.agentId, poor.owner.token);
    expect(await unpaid.closed).toEqual({ code: 1008, reason: 'WALLET_EMPTY' });
    expect(unpaid.events).toEqual([
      expect.objectContaining({ message: 'The wallet balance is 0.0000 USD; credit the wallet before calling the agent.' }),
    ]);

    const stranger = await tenantWithAgent();
    const elsewhere = await callFromBrowser(agentId, stranger.owner.token);
    expect(await elsewhere.closed).toEqual({ code: 1008, reason: 'NOT_FOUND' });
    expect(elsewhere.events).toEqual([expect.objectContaining({ type: 'error', statusCode: 404, message: 'Agent not found.' })]);
  });

  it("speaks in PCM16 at 16 kHz (no empty frame), waits for the browser's marks, answers what Deepgram heard, and bills the chat as test cost", async () => {
    const { owner, agentId } = await tenantWithAgent();
    const walletBefore = (await t.app.inject({ url: '/api/v1/profile', headers: bearer(owner.token) })).json().data.wallet
      .balance as string;
    deepgram.script(...utterance('When do you open tomorrow?', { startsAfterBytes: 3200, endsAfterBytes: 16_000 }));
    chat.script({ kind: 'stream', text: ['We open ', 'at eight. ', 'See you then.'], usage: { prompt_tokens: 90, completion_tokens: 10 } });
    const end = await callFromBrowser(agentId, owner.token);

    const started = await end.next('started');
    expect(started.format).toEqual({ encoding: 'pcm16', sampleRate: 16_000 });
    // The opening: eSpeak's audio resampled to the line's format, then its mark. Until the browser
    // echoes the mark, the opening is not recorded (the caller has not heard it yet).
    await until('the opening mark', () => marksOf(end.events).length === 1);
    const openingAudio = Buffer.concat(end.audio);
    expect(openingAudio.length % 2).toBe(0);
    expect(openingAudio.length / 32_000).toBeGreaterThan(1); // over a second of speech at 16 kHz
    expect(end.events.some((event) => event.type === 'chat')).toBe(false);
    echoMarks(end, marksOf(end.events));
    const opened = await end.next('chat');
    expect(opened.chat).toMatchObject({ id: started.chatId, status: 'OPEN', transcript: [{ role: 'agent', text: OPENING }] });

    // The recogniser reads the line's format; the caller's words reach the model and come back spoken.
    await end.sendAudio(16_000);
    expect(deepgram.sessions.at(-1)!.query).toMatchObject({ encoding: 'linear16', sample_rate: '16000' });
    expect((await end.next('heard')).text).toBe('When do you open tomorrow?');
    await until('the reply marks', () => marksOf(end.events).length === 3);
    echoMarks(end, marksOf(end.events).slice(1));
    // Every binary message carries audio, though eSpeak ends each of the three sentences with an empty chunk.
    expect(end.audio.filter((frame) => frame.length === 0).length).toBe(0);
    await until('the reply recorded', () => end.events.filter((event) => event.type === 'chat').length === 2);
    const replied = end.events.filter((event) => event.type === 'chat').at(-1)!.chat;
    expect(replied.transcript.map(({ role, text, interrupted }) => ({ role, text, interrupted }))).toEqual([
      { role: 'agent', text: OPENING, interrupted: undefined },
      { role: 'contact', text: 'When do you open tomorrow?', interrupted: undefined },
      { role: 'agent', text: 'We open at eight. See you then.', interrupted: undefined },
    ]);
    expect(chat.received.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'When do you open tomorrow?' });

    // The tester hangs up: the chat ends, and what ran is billed (16,000 bytes = half a second listened).
    end.send({ type: 'hangup' });
    expect(await end.next('ended')).toEqual({ type: 'ended', reason: 'contact_hung_up' });
    expect(await end.closed).toMatchObject({ code: 1000 });
    const saved = (await t.app.inject({ url: `/api/v1/test-chats/${started.chatId}`, headers: bearer(owner.token) })).json();
    const spoken = OPENING.length + 'We open at eight.'.length + 'See you then.'.length;
    expect(saved).toMatchObject({
      status: 'ENDED',
      endReason: 'contact_hung_up',
      brain: 'model:browser-model',
      usage: {
        sttSeconds: 0.5,
        sttProvider: 'DEEPGRAM',
        ttsCharacters: spoken,
        ttsProvider: 'ESPEAK',
        llmTokens: 100,
        telephonySeconds: 0,
        telephonyProvider: null,
      },
      cost: { stt: '0.0100', tts: (spoken / 10_000).toFixed(4), llm: '0.0100', telephony: '0.0000', platformFee: '0.0000' },
    });
    const total = 0.01 + Number((spoken / 10_000).toFixed(4)) + 0.01;
    expect(saved.cost.total).toBe(total.toFixed(4));
    const walletAfter = (await t.app.inject({ url: '/api/v1/profile', headers: bearer(owner.token) })).json().data.wallet.balance as string;
    expect((Number(walletBefore) - Number(walletAfter)).toFixed(4)).toBe(total.toFixed(4));
  });

  it('stops the agent when the caller speaks over it: queued audio cleared, the turn kept as heard', async () => {
    const { owner, agentId } = await tenantWithAgent({ firstMessage: 'Hi.' });
    deepgram.script(
      ...utterance('Tell me about parking', { startsAfterBytes: 3200, endsAfterBytes: 16_000 }),
      ...utterance('Thanks that is all', { startsAfterBytes: 19_200, endsAfterBytes: 32_000 }),
    );
    chat.script(
      { kind: 'stream', text: ['Parking is free. ', 'It is behind the building, next to the pharmacy.'] },
      { kind: 'stream', text: ['You are welcome.'] },
    );
    const end = await callFromBrowser(agentId, owner.token);
    await until('the opening mark', () => marksOf(end.events).length === 1);
    echoMarks(end, marksOf(end.events));
    await end.next('chat');
    await end.sendAudio(16_000);
    await until('both reply marks', () => marksOf(end.events).length === 3);
    const [, first, second] = marksOf(end.events);
    echoMarks(end, [first!]); // the first sentence was played; the second is still in the browser's queue

    const beforeBargeIn = end.events.length;
    await end.sendAudio(6400); // the caller starts to speak: Deepgram's first interim words
    await end.next('clear', beforeBargeIn);
    echoMarks(end, [second!]); // the browser echoes what it dropped, as Twilio does: not counted as heard
    await end.sendAudio(9600);
    await until('the second reply mark', () => marksOf(end.events).length === 4);
    echoMarks(end, marksOf(end.events).slice(3));
    await until('the second reply recorded', () => {
      const last = end.events.filter((event) => event.type === 'chat').at(-1);
      return last?.type === 'chat' && last.chat.transcript.length === 5;
    });
    const transcript = end.events.filter((event) => event.type === 'chat').at(-1)!.chat.transcript;
    expect(transcript.map(({ role, text, interrupted }) => ({ role, text, interrupted }))).toEqual([
      { role: 'agent', text: 'Hi.', interrupted: undefined },
      { role: 'contact', text: 'Tell me about parking', interrupted: undefined },
      { role: 'agent', text: 'Parking is free.', interrupted: true },
      { role: 'contact', text: 'Thanks that is all', interrupted: undefined },
      { role: 'agent', text: 'You are welcome.', interrupted: undefined },
    ]);
    // The model was told only what the caller heard.
    expect(chat.received.at(-1)!.body.messages).toContainEqual({ role: 'assistant', content: 'Parking is free. …' });

    // Closing the socket is hanging up too.
    const { chatId } = await end.next('started');
    end.socket.close();
    await until('the chat ended', async () => {
      const saved = (await t.app.inject({ url: `/api/v1/test-chats/${chatId}`, headers: bearer(owner.token) })).json();
      return saved.status === 'ENDED' && saved.endReason === 'contact_hung_up';
    });
  });
});
