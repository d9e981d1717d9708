import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeDeepgram } from '../src/providers/deepgram/fake-server.ts';
import { DEFAULT_FAKE_VOICES, startFakeElevenLabs } from '../src/providers/elevenlabs/fake-server.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { openFakeMediaStream, streamOf, type FakeMediaStream } from '../src/providers/twilio/fake-media-stream.ts';
import { startFakeTwilio } from '../src/providers/twilio/fake.ts';
import { startTestApp } from './harness.ts';
import { tenantWith, uniqueNumber } from './voice-fixtures.ts';

/**
 * Twilio calls through the real voice pipeline: the app listening on a loopback port, with Twilio
 * (REST and its side of the media stream), Deepgram, ElevenLabs and the model as local fakes
 * speaking their real wire formats. The clock is a manual one, set on a Monday inside the call window.
 */
export const VOICE = DEFAULT_FAKE_VOICES[0]!.voice_id;

export const marksOf = (stream: FakeMediaStream) => stream.received.filter((m) => m.event === 'mark').map((m) => m.mark!.name);
/** μ-law silence: what the fake Deepgram "hears" is scripted by bytes received. */
export const speech = (bytes: number) => Buffer.alloc(bytes, 0xff);

/** `env`: settings of the app beyond the fakes' addresses (a rate card, say). */
export async function startTwilioVoice(env: Record<string, string> = {}) {
  const accountSid = `AC${randomBytes(16).toString('hex')}`;
  const authToken = randomBytes(16).toString('hex');
  const [twilio, deepgram, elevenlabs, chat] = await Promise.all([
    startFakeTwilio({ accountSid, authToken }),
    startFakeDeepgram({ apiKey: 'dg-test-key-0123456789' }),
    startFakeElevenLabs(),
    startFakeChat(),
  ]);
  const port = await freeLoopbackPort();
  const clock = manualClock('2026-11-23T10:00:00.000Z'); // a Monday, inside the call window
  const t = await startTestApp({
    clock,
    env: {
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      TWILIO_API_URL: twilio.url,
      DEEPGRAM_API_URL: deepgram.url,
      ELEVENLABS_API_URL: elevenlabs.url,
      LLM_API_URL: `${chat.url}/v1`,
      LLM_MODEL: 'phone-model',
      VOICE_SILENCE_SECONDS: '2',
      RATE_LIMIT_PER_MINUTE: '100000',
      ...env,
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });

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
  /** Twilio's side of the call's media stream, signed as Twilio signs it unless overridden. */
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

  return {
    t,
    clock,
    twilio,
    deepgram,
    elevenlabs,
    chat,
    port,
    placedCall,
    connect,
    getCall,
    async close() {
      await t.close();
      await Promise.all([twilio.close(), deepgram.close(), elevenlabs.close(), chat.close()]);
    },
  };
}

export type TwilioVoice = Awaited<ReturnType<typeof startTwilioVoice>>;
export type PlacedCall = Awaited<ReturnType<TwilioVoice['placedCall']>>;
