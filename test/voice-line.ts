import { expect } from 'vitest';
import type { Clock } from '../src/platform/clock.ts';
import { jobDefinitions } from '../src/jobs.ts';
import { startFakeDeepgram, utterance } from '../src/providers/deepgram/fake-server.ts';
import { DEFAULT_FAKE_VOICES, startFakeElevenLabs } from '../src/providers/elevenlabs/fake-server.ts';
import type { FakeMediaClient } from '../src/providers/fake-media-client.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startTestApp, until, type TestApp } from './harness.ts';

/** The voice every test agent speaks with (one ElevenLabs' fake offers). */
export const VOICE = DEFAULT_FAKE_VOICES[0]!.voice_id;

/** An agent's fields to listen with Deepgram and speak with ElevenLabs. */
export const SPEAKING = { stt: { provider: 'DEEPGRAM' }, tts: { provider: 'ELEVENLABS' }, voice: VOICE } as const;

export interface VoiceLine {
  t: TestApp;
  /** The loopback port the app listens on (its PUBLIC_URL), where providers' media streams connect. */
  port: number;
  deepgram: Awaited<ReturnType<typeof startFakeDeepgram>>;
  elevenlabs: Awaited<ReturnType<typeof startFakeElevenLabs>>;
  chat: Awaited<ReturnType<typeof startFakeChat>>;
  /** The integrations a tenant connects to listen and speak (`tenantWith`'s argument). */
  speechIntegrations(): Record<string, object>;
  close(): Promise<void>;
}

/**
 * A phone line's speech: Deepgram's live recognition, ElevenLabs' voice and an OpenAI-compatible
 * model as local fakes speaking their wire formats, and the app listening on a loopback port with
 * them configured (plus `env`: the telephony provider's fake, settings a test needs). `jobs` runs
 * the worker's jobs in the app (post-call messages).
 */
export async function startVoiceLine(options: { clock: Clock; env?: Record<string, string>; jobs?: boolean }): Promise<VoiceLine> {
  const [deepgram, elevenlabs, chat] = await Promise.all([
    startFakeDeepgram({ apiKey: 'dg-test-key-0123456789' }),
    startFakeElevenLabs(),
    startFakeChat(),
  ]);
  const port = await freeLoopbackPort();
  const t = await startTestApp({
    clock: options.clock,
    env: {
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DEEPGRAM_API_URL: deepgram.url,
      ELEVENLABS_API_URL: elevenlabs.url,
      LLM_API_URL: `${chat.url}/v1`,
      LLM_MODEL: 'phone-model',
      RATE_LIMIT_PER_MINUTE: '100000',
      ...options.env,
    },
  });
  if (options.jobs) await t.runtime.jobs.work(jobDefinitions(t.runtime));
  await t.app.listen({ port, host: '127.0.0.1' });
  return {
    t,
    port,
    deepgram,
    elevenlabs,
    chat,
    speechIntegrations: () => ({ deepgram: { apiKey: deepgram.apiKey }, elevenlabs: { apiKey: elevenlabs.apiKey } }),
    async close() {
      await t.close();
      await Promise.all([deepgram.close(), elevenlabs.close(), chat.close()]);
    },
  };
}

/** The marks the service sent on a stream, in order. */
export const marksOf = (stream: FakeMediaClient) => stream.received.filter((m) => m.event === 'mark').map((m) => m.mark!.name);

/** μ-law silence: what Deepgram's fake "hears" is scripted by bytes. */
export const speech = (bytes: number) => Buffer.alloc(bytes, 0xff);

/** Conversations the voice tests script on the fakes, the same whichever provider's line carries them. */
export const scripted = {
  /** The caller asks when the clinic opens (4,000 bytes of speech); the model answers in two sentences and ends the call. */
  openingHours(line: VoiceLine): void {
    line.deepgram.script(...utterance('When do you open tomorrow?', { startsAfterBytes: 800, endsAfterBytes: 4000 }));
    line.chat.script({
      kind: 'stream',
      text: ['We open ', 'at eight. ', 'Parking is ', 'free behind the building.'],
      toolCalls: [{ id: 'end_1', name: 'end_call', arguments: ['{}'] }],
      usage: { prompt_tokens: 120, completion_tokens: 19 },
    });
  },
  /** The caller asks about parking (1,600 bytes), talks over the long answer (from byte 3,200) and gets a short one. */
  interrupted(line: VoiceLine): void {
    line.deepgram.script(
      ...utterance('Tell me everything about parking.', { startsAfterBytes: 160, endsAfterBytes: 1600 }),
      ...utterance('Sorry, just the price.', { startsAfterBytes: 3200, endsAfterBytes: 4800 }),
    );
    line.chat.script(
      {
        kind: 'stream',
        text: ['Parking is behind the building. ', 'It has three floors. ', 'The top floor is for staff. ', 'Bikes go in the yard.'],
      },
      { kind: 'stream', text: ['It is free.'] },
    );
  },
};

/**
 * Releases the held marks and checks that the agent was not stopped: nothing cleared, and the
 * call's transcript is the opening, the caller's question and the whole reply; resolves with the call.
 */
export async function expectReplyPlayedWhole(
  stream: FakeMediaClient,
  readCall: () => Promise<{ transcript: { role: string; text: string; interrupted?: boolean }[] }>,
  question: string,
  reply: string,
) {
  stream.holdMarks(false);
  stream.releaseMarks();
  const call = await until('the whole reply recorded', async () => {
    const got = await readCall();
    return got.transcript.length >= 3 ? got : undefined;
  });
  expect(stream.received.filter((m) => m.event === 'clear')).toHaveLength(0);
  expect(call.transcript.map((turn) => [turn.role, turn.text])).toEqual([
    ['agent', 'Hello, this is the clinic. How can I help?'],
    ['contact', question],
    ['agent', reply],
  ]);
  expect(call.transcript[2]!.interrupted).toBeUndefined();
  return call;
}
