import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as agents from '../src/modules/agents/service.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// Agents' speech settings and GET /voices, through HTTP on a real database: eSpeak NG for real (it
// runs in-process), OpenAI-compatible speech against a local fake speech server.

async function tenantOf(t: TestApp) {
  const owner = await signUp(t.app);
  const key = (await createKey(t.app, owner.token)).key;
  const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
    t.app.inject({ method, url: `/api/v1${url}`, headers: bearer(key), ...(payload === undefined ? {} : { payload: payload as object }) });
  // Integrations are connected from the dashboard (a session), not with an API key.
  const connectLlm = (payload: { apiUrl: string; apiKey: string }) =>
    t.app.inject({ method: 'PUT', url: '/api/v1/integrations/llm', headers: bearer(owner.token), payload });
  return { owner, api, connectLlm };
}
let counter = 0;
const named = (body: Record<string, unknown> = {}) => ({ name: `Speaker ${++counter}`, ...body });

describe('speech settings on a service with no speech server', () => {
  let t: TestApp;
  let a: Awaited<ReturnType<typeof tenantOf>>;
  let b: Awaited<ReturnType<typeof tenantOf>>;
  beforeAll(async () => {
    t = await startTestApp();
    a = await tenantOf(t);
    b = await tenantOf(t);
  });
  afterAll(() => t.close());

  it("lists eSpeak NG's voices by default, and those for a language when asked", async () => {
    const all = await a.api('GET', '/voices');
    expect(all.statusCode).toBe(200);
    const voices = all.json().data as { id: string; name: string; languages: string[] }[];
    expect(voices.length).toBeGreaterThan(100);
    expect(voices).toContainEqual({ id: 'gmw/en-US', name: 'English (America)', languages: ['en-US', 'en'] });
    const spanish = (await a.api('GET', '/voices?provider=ESPEAK&language=es')).json().data as typeof voices;
    expect(spanish.map((voice) => voice.id)).toEqual(expect.arrayContaining(['roa/es', 'roa/es-419']));
    expect(spanish.every((voice) => voice.languages.some((tag) => tag.split('-')[0] === 'es'))).toBe(true);
    const american = (await a.api('GET', '/voices?language=en-US')).json().data as typeof voices;
    expect(american.map((voice) => voice.id)).toContain('gmw/en-US');
    // Voices for English in general speak American English too; Spanish ones do not.
    expect(american.every((voice) => voice.languages.some((tag) => tag === 'en' || tag.startsWith('en-US')))).toBe(true);
    expect(american.map((voice) => voice.id)).not.toContain('roa/es');
  });

  it("lists OpenAI's built-in voices without a speech server to ask", async () => {
    const response = await a.api('GET', '/voices?provider=OPENAI_COMPATIBLE');
    expect(response.statusCode).toBe(200);
    expect(response.json().data.map((voice: { id: string }) => voice.id)).toEqual(expect.arrayContaining(['alloy', 'coral', 'verse']));
  });

  it('refuses an unknown provider and an unauthenticated request', async () => {
    expect((await a.api('GET', '/voices?provider=NOPE')).json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/voices' })).statusCode).toBe(401);
  });

  it('speaks through eSpeak NG with its voice for the agent’s language when none is given, and listens to nothing', async () => {
    const spanish = (await a.api('POST', '/agents', named({ language: 'es' }))).json();
    expect(spanish).toMatchObject({ language: 'es', voice: 'roa/es', stt: null, tts: { provider: 'ESPEAK' } });
    const brazilian = (await a.api('POST', '/agents', named({ language: 'pt-br', voice: null }))).json();
    expect(brazilian).toMatchObject({ language: 'pt-BR', voice: 'roa/pt-BR' });
  });

  it('refuses a voice the provider does not have, on create and on update, naming it, the provider and where voices are listed', async () => {
    const refused = await a.api('POST', '/agents', named({ voice: 'alloy' }));
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      code: 'UNKNOWN_VOICE',
      message: '"alloy" is not a voice of eSpeak NG; GET /api/v1/voices?provider=ESPEAK lists them.',
      details: [{ path: '/voice', message: 'is not a voice of ESPEAK' }],
    });
    const agent = (await a.api('POST', '/agents', named({ voice: 'gmw/en-GB-x-rp' }))).json();
    const patched = await a.api('PATCH', `/agents/${agent.id}`, { voice: 'en-klingon', description: 'changed' });
    expect(patched.statusCode).toBe(400);
    expect(patched.json()).toMatchObject({ code: 'UNKNOWN_VOICE', details: [{ path: '/voice' }] });
    expect((await a.api('GET', `/agents/${agent.id}`)).json()).toMatchObject({ voice: 'gmw/en-GB-x-rp', description: null });
  });

  it('chooses the default voice again for voice null, for the agent’s current language', async () => {
    const agent = (await a.api('POST', '/agents', named({ voice: 'gmw/en-GB-x-rp' }))).json();
    const german = await a.api('PATCH', `/agents/${agent.id}`, { language: 'de', voice: null });
    expect(german.json()).toMatchObject({ language: 'de', voice: 'gmw/de' });
  });

  it('refuses OpenAI-compatible speech while neither the tenant nor the service has a speech server', async () => {
    const tts = await a.api('POST', '/agents', named({ tts: { provider: 'OPENAI_COMPATIBLE' }, voice: 'alloy' }));
    expect(tts.statusCode).toBe(400);
    expect(tts.json()).toMatchObject({
      code: 'SPEECH_NOT_CONFIGURED',
      message: expect.stringContaining('connect the llm integration, or set SPEECH_API_URL'),
      details: [{ path: '/tts/provider' }],
    });
    const stt = await a.api('POST', '/agents', named({ stt: { provider: 'OPENAI_COMPATIBLE' } }));
    expect(stt.json()).toMatchObject({ code: 'SPEECH_NOT_CONFIGURED', details: [{ path: '/stt/provider' }] });
  });

  it("names a vendor's own setting when it has no key: Deepgram's and ElevenLabs', not the speech server's", async () => {
    const deepgram = await a.api('POST', '/agents', named({ stt: { provider: 'DEEPGRAM' } }));
    expect(deepgram.json()).toMatchObject({
      code: 'SPEECH_NOT_CONFIGURED',
      message:
        'No DEEPGRAM server is configured for this tenant or service; connect the deepgram integration, or set DEEPGRAM_API_KEY for the service.',
      details: [{ path: '/stt/provider' }],
    });
    const elevenlabs = await a.api('POST', '/agents', named({ tts: { provider: 'ELEVENLABS' } }));
    expect(elevenlabs.json()).toMatchObject({
      code: 'SPEECH_NOT_CONFIGURED',
      message: expect.stringContaining('or set ELEVENLABS_API_KEY for the service'),
    });
  });

  it('lets a tenant that connected its own server speak through it, and no other tenant', async () => {
    const put = await a.connectLlm({ apiUrl: 'https://speech.example.com/v1', apiKey: 'sk-tenant-a' });
    expect(put.statusCode).toBe(200);
    const own = await a.api(
      'POST',
      '/agents',
      named({ tts: { provider: 'OPENAI_COMPATIBLE', model: 'tts-1' }, stt: { provider: 'OPENAI_COMPATIBLE' } }),
    );
    expect(own.statusCode).toBe(201);
    expect(own.json()).toMatchObject({
      voice: 'alloy',
      tts: { provider: 'OPENAI_COMPATIBLE', model: 'tts-1' },
      stt: { provider: 'OPENAI_COMPATIBLE' },
    });
    const other = await b.api('POST', '/agents', named({ tts: { provider: 'OPENAI_COMPATIBLE' } }));
    expect(other.json()).toMatchObject({ code: 'SPEECH_NOT_CONFIGURED' });
    expect((await b.api('GET', `/agents/${own.json().id}`)).statusCode).toBe(404);
    expect((await b.api('PATCH', `/agents/${own.json().id}`, { voice: 'coral' })).statusCode).toBe(404);
  });
});

describe('speech settings on a service with a speech server (SPEECH_API_URL)', () => {
  let t: TestApp;
  let fake: Awaited<ReturnType<typeof startFakeSpeech>>;
  let a: Awaited<ReturnType<typeof tenantOf>>;
  beforeAll(async () => {
    fake = await startFakeSpeech();
    t = await startTestApp({ env: { SPEECH_API_URL: `${fake.url}/v1`, SPEECH_API_KEY: 'sk-service-speech', ALLOW_PRIVATE_URLS: '1' } });
    a = await tenantOf(t);
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('lets new agents listen through it by default, and speak through it in an OpenAI voice', async () => {
    const agent = (await a.api('POST', '/agents', named({ tts: { provider: 'OPENAI_COMPATIBLE' }, voice: 'coral' }))).json();
    expect(agent).toMatchObject({ stt: { provider: 'OPENAI_COMPATIBLE' }, tts: { provider: 'OPENAI_COMPATIBLE' }, voice: 'coral' });
    expect(fake.speeches).toHaveLength(0);
  });

  it('chooses a voice of the new provider when the agent changes provider and its voice is not offered there', async () => {
    const agent = (await a.api('POST', '/agents', named({ tts: { provider: 'OPENAI_COMPATIBLE' } }))).json();
    expect(agent.voice).toBe('alloy');
    const moved = await a.api('PATCH', `/agents/${agent.id}`, { tts: { provider: 'ESPEAK' } });
    expect(moved.json()).toMatchObject({ tts: { provider: 'ESPEAK' }, voice: 'gmw/en-US' });
  });

  it("gives the media pipeline the agent's speech, reached at the service's server with its key, model and voice", async () => {
    const agent = (
      await a.api(
        'POST',
        '/agents',
        named({
          tts: { provider: 'OPENAI_COMPATIBLE', model: 'tts-1' },
          stt: { provider: 'OPENAI_COMPATIBLE', model: 'whisper-large' },
          voice: 'sage',
        }),
      )
    ).json();
    const ctx = tenantCtx(t.runtime, agent.tenantId);
    const speech = await agents.speechOf(t.runtime, ctx, await agents.requireAgent(ctx, agent.id));
    expect(speech).toMatchObject({
      voice: 'sage',
      sttProvider: 'OPENAI_COMPATIBLE',
      ttsProvider: 'OPENAI_COMPATIBLE',
      sttModel: 'whisper-large',
      ttsModel: 'tts-1',
    });

    fake.script({ kind: 'audio', chunks: [Buffer.from([1, 0, 2, 0])] });
    const synthesis = speech.tts.synthesize({
      text: 'Hello.',
      voice: speech.voice,
      language: 'en-US',
      model: speech.ttsModel,
      format: { encoding: 'mulaw', sampleRate: 8000 },
    });
    const audio: Buffer[] = [];
    for await (const chunk of synthesis.audio) audio.push(chunk);
    expect(Buffer.concat(audio)).toEqual(Buffer.from([1, 0, 2, 0]));
    expect(fake.speeches.at(-1)).toEqual({
      authorization: 'Bearer sk-service-speech',
      body: { model: 'tts-1', voice: 'sage', input: 'Hello.', response_format: 'pcm' },
    });

    fake.script({ kind: 'text', text: 'Hi there.' });
    if (speech.stt?.kind !== 'utterance') throw new Error('expected an utterance recogniser');
    const text = await speech.stt.transcribe(
      Buffer.alloc(320),
      { encoding: 'pcm16', sampleRate: 8000 },
      { language: 'en-US', model: speech.sttModel },
    );
    expect(text).toBe('Hi there.');
    expect(fake.transcriptions.at(-1)).toMatchObject({
      authorization: 'Bearer sk-service-speech',
      fields: { model: 'whisper-large', language: 'en' },
    });
  });

  it("reaches the tenant's own server with the tenant's key once it connected one", async () => {
    const own = await startFakeSpeech();
    try {
      expect((await a.connectLlm({ apiUrl: `${own.url}/v1`, apiKey: 'sk-tenant' })).statusCode).toBe(200);
      const agent = (await a.api('POST', '/agents', named({ tts: { provider: 'OPENAI_COMPATIBLE' }, voice: 'nova' }))).json();
      const ctx = tenantCtx(t.runtime, agent.tenantId);
      const speech = await agents.speechOf(t.runtime, ctx, await agents.requireAgent(ctx, agent.id));
      own.script({ kind: 'audio', chunks: [Buffer.from([5, 0])] });
      for await (const _chunk of speech.tts.synthesize({
        text: 'Hi.',
        voice: speech.voice,
        language: 'en',
        format: { encoding: 'pcm16', sampleRate: 24000 },
      }).audio);
      expect(own.speeches.at(-1)).toMatchObject({ authorization: 'Bearer sk-tenant', body: { voice: 'nova', model: 'gpt-4o-mini-tts' } });
    } finally {
      await own.close();
    }
  });
});
