import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { openFakeMediaStream, streamOf } from '../src/providers/twilio/fake-media-stream.ts';
import { startFakeTwilio } from '../src/providers/twilio/fake.ts';
import { tenantWith, uniqueNumber } from './voice-fixtures.ts';
import { SPEAKING, startVoiceLine } from './voice-line.ts';

export { marksOf, speech, VOICE } from './voice-line.ts';

/**
 * Twilio calls through the real voice pipeline: a voice line (voice-line.ts: the app on a loopback
 * port, Deepgram, ElevenLabs and the model as local fakes) with Twilio's REST API and its side of
 * the media stream as fakes too. The clock is a manual one, set on a Monday inside the call window.
 * `env`: settings of the app beyond the fakes' addresses (a rate card, say).
 */
export async function startTwilioVoice(env: Record<string, string> = {}) {
  const accountSid = `AC${randomBytes(16).toString('hex')}`;
  const authToken = randomBytes(16).toString('hex');
  const twilio = await startFakeTwilio({ accountSid, authToken });
  const clock = manualClock('2026-11-23T10:00:00.000Z'); // a Monday, inside the call window
  const line = await startVoiceLine({ clock, env: { TWILIO_API_URL: twilio.url, VOICE_SILENCE_SECONDS: '2', ...env } });
  const { t, port } = line;

  /**
   * A tenant with Twilio, Deepgram and ElevenLabs connected, an agent that speaks, and one Twilio
   * call placed and ringing, with the TwiML it was dialled with (how Twilio reaches us).
   */
  async function placeCall(agentFields: Record<string, unknown> = {}, campaignFields: Record<string, unknown> = {}) {
    const { owner, api } = await tenantWith(t.app, { twilio: { accountSid, authToken }, ...line.speechIntegrations() });
    const agent = await api('POST', '/agents', {
      name: 'Clinic',
      firstMessage: 'Hello, this is the clinic. How can I help?',
      ...SPEAKING,
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
        // A fake carrier's calls to fictional US numbers at any hour, no solicitation: relaxed as the law allows.
        callingRules: false,
        ...campaignFields,
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
    return {
      api,
      owner,
      sid,
      callId,
      campaignId: campaign.id as string,
      twiml: dial.form.get('Twiml')!,
      tenantId: owner.tenantId as string,
    };
  }

  /** The same, its call streamed to our media path (the TwiML's `<Stream>`). */
  async function placedCall(agentFields: Record<string, unknown> = {}, campaignFields: Record<string, unknown> = {}) {
    const placed = await placeCall(agentFields, campaignFields);
    return { ...placed, stream: streamOf(placed.twiml) };
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
    ...line,
    line,
    clock,
    twilio,
    accountSid,
    authToken,
    placeCall,
    placedCall,
    connect,
    getCall,
    async close() {
      await line.close();
      await twilio.close();
    },
  };
}

export type TwilioVoice = Awaited<ReturnType<typeof startTwilioVoice>>;
export type PlacedCall = Awaited<ReturnType<TwilioVoice['placedCall']>>;
