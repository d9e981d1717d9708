import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pcm16Samples, wavFile } from '../../src/platform/audio.ts';
import { startFakeDeepgram, utterance } from '../../src/providers/deepgram/fake-server.ts';
import { espeak } from '../../src/providers/espeak/index.ts';
import { startFakeChat } from '../../src/providers/openai-compatible/fake-chat.ts';
import { until } from '../harness.ts';
import { DESKTOP, NO_BROWSER, PHONE, SCREENSHOTS, sharedDashboardPage, signUpInBrowser, type Dashboard } from './harness.ts';

// Issue 17: "Call me in the browser" in Chromium. The microphone is Chromium's fake capture device
// playing a WAV file spoken by the offline voice (eSpeak NG); Deepgram and the model are local
// fakes speaking their wire formats. The page captures through its AudioWorklet, sends PCM16 up the
// socket, plays the agent's audio and echoes its marks; the transcript grows beside it.
const CALLER_SAYS = 'I would like to book a table for two.';
/** What the fake Deepgram says it recognised. */
const RECOGNISED = 'I would like to book a table for two';
const OPENING = 'Hello, you are through to the clinic.';
const REPLY = 'Your table for two is booked for tonight.';

let dashboard: Dashboard;
let deepgram: Awaited<ReturnType<typeof startFakeDeepgram>>;
let chat: Awaited<ReturnType<typeof startFakeChat>>;
let page: Page;
let problems: string[];
let folder: string;
/** The caller's spoken words, which Chromium's fake microphone plays. */
let wav: string;
let token: string;
let caller: Awaited<ReturnType<typeof callerWav>>;

/** The caller's words spoken by eSpeak NG, with two seconds of silence after them (Chromium loops the file). */
async function callerWav(path: string): Promise<{ samples: Int16Array; sampleRate: number }> {
  const voices = await espeak.tts!.connect({ timeoutMs: 10_000 }).voices();
  const synthesis = espeak.tts!.connect({ timeoutMs: 10_000 }).synthesize({
    text: CALLER_SAYS,
    voice: voices.find((voice) => voice.languages.includes('en-US'))!.id,
    language: 'en-US',
    format: { encoding: 'pcm16', sampleRate: 16_000 },
  });
  const chunks: Buffer[] = [];
  for await (const chunk of synthesis.audio) chunks.push(chunk);
  const speech = Buffer.concat(chunks);
  const { sampleRate } = synthesis.format;
  const file = Buffer.concat([speech, Buffer.alloc(sampleRate * 4)]);
  writeFileSync(path, wavFile(file, sampleRate));
  return { samples: pcm16Samples(file), sampleRate };
}

/** Loudness (RMS) of each 20 ms of `samples` starting every `hopMs`; the file's wraps around, as Chromium loops it. */
function loudness(samples: Int16Array, sampleRate: number, hopMs: number, wrap: boolean): number[] {
  const window = Math.round(sampleRate * 0.02);
  const hop = Math.round((sampleRate * hopMs) / 1000);
  const result: number[] = [];
  const last = wrap ? samples.length - 1 : samples.length - window;
  for (let start = 0; start <= last; start += hop) {
    let sum = 0;
    for (let i = 0; i < window; i++) sum += samples[(start + i) % samples.length]! ** 2;
    result.push(Math.sqrt(sum / window));
  }
  return result;
}

/** The best Pearson correlation of the heard loudness with the file's, over every alignment of the looping file. */
function envelopeLikeness(heard: Int16Array, rate: number, file: { samples: Int16Array; sampleRate: number }): number {
  const received = loudness(heard, rate, 20, false);
  const looped = loudness(file.samples, file.sampleRate, 10, true); // at 10 ms steps: an alignment to the nearest 10 ms
  const pearson = (a: number[], b: number[]) => {
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    const [ma, mb] = [mean(a), mean(b)];
    let [ab, aa, bb] = [0, 0, 0];
    for (let i = 0; i < a.length; i++) [ab, aa, bb] = [ab + (a[i]! - ma) * (b[i]! - mb), aa + (a[i]! - ma) ** 2, bb + (b[i]! - mb) ** 2];
    return ab / Math.sqrt(aa * bb);
  };
  let best = -1;
  for (let offset = 0; offset < looped.length; offset++)
    best = Math.max(
      best,
      pearson(
        received,
        received.map((_, i) => looped[(offset + 2 * i) % looped.length]!),
      ),
    );
  return best;
}

beforeAll(async () => {
  if (NO_BROWSER) return;
  folder = mkdtempSync(join(tmpdir(), 'browser-call-'));
  wav = join(folder, 'caller.wav');
  caller = await callerWav(wav);
  [deepgram, chat] = await Promise.all([startFakeDeepgram({ apiKey: 'dg-browser-key-0123456789' }), startFakeChat()]);
}, 90_000);
afterAll(async () => {
  await Promise.all([deepgram?.close(), chat?.close()]);
  if (folder) rmSync(folder, { recursive: true, force: true });
});
// Chromium's microphone is a fake device playing the caller's file, allowed without asking.
sharedDashboardPage(
  () => ({
    env: { DEEPGRAM_API_URL: deepgram.url, LLM_API_URL: `${chat.url}/v1`, LLM_MODEL: 'browser-model' },
    browserArgs: [
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
      '--autoplay-policy=no-user-gesture-required',
    ],
    permissions: ['microphone'],
  }),
  async (shared) => {
    ({ dashboard, page, problems } = shared);
    await signUpInBrowser(page, dashboard.url, 'Browser Callers');
    // The test's own API calls use the session as a Bearer token, read from the browser's cookie jar
    // (the page itself cannot read it: the cookie is httpOnly).
    token = (await page.context().cookies()).find((cookie) => cookie.name === 'callforge_session')!.value;
  },
);

async function api(method: string, path: string, body?: unknown) {
  const response = await fetch(`${dashboard.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const answer = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

async function screenshots(name: string) {
  await page.screenshot({ path: new URL(`${name}-desktop.png`, SCREENSHOTS).pathname, fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: new URL(`${name}-phone.png`, SCREENSHOTS).pathname, fullPage: true });
  await page.setViewportSize(DESKTOP);
}

const text = (testId: string) => page.getByTestId(testId).textContent();

describe.skipIf(NO_BROWSER)('calling an agent from the browser', () => {
  it('explains, instead of calling, that an agent without a live recogniser cannot take the call', async () => {
    const agent = await api('POST', '/agents', { name: 'Deaf Agent', firstMessage: 'Hello.' });
    await page.goto(`${dashboard.url}/#/agents/${agent.id as string}`);
    await page.getByRole('button', { name: 'Call me in the browser' }).click();
    await expect(page.locator('#browser-call').getByRole('alert').textContent()).resolves.toContain(
      'Deaf Agent cannot take a call yet: it needs a live speech-to-text to listen with.',
    );
    expect(deepgram.sessions).toHaveLength(0);
  });

  it("talks with the agent: the microphone's words recognised, the agent's reply played, marks echoed, billed as a test chat", async () => {
    await api('PUT', '/integrations/deepgram', { apiKey: deepgram.apiKey });
    const agent = await api('POST', '/agents', { name: 'Clinic', firstMessage: OPENING, stt: { provider: 'DEEPGRAM' } });
    // 32,000 bytes a second reach Deepgram: the caller's words are recognised after the opening was played.
    deepgram.script(...utterance(RECOGNISED, { startsAfterBytes: 128_000, endsAfterBytes: 176_000 }));
    chat.script({
      kind: 'stream',
      text: ['Your table for two ', 'is booked for tonight.'],
      usage: { prompt_tokens: 80, completion_tokens: 9 },
    });

    await page.goto(`${dashboard.url}/#/agents/${agent.id as string}`);
    await page.getByRole('button', { name: 'Call me in the browser' }).click();
    const transcript = page.getByRole('list', { name: 'Call' });
    await transcript.getByText(OPENING).waitFor({ timeout: 20_000 });
    await transcript.getByText(RECOGNISED).waitFor({ timeout: 20_000 });
    await transcript.getByText(REPLY).waitFor({ timeout: 20_000 });
    await expect(text('browser-call-status')).resolves.toBe('On the call: speak to the agent.');
    // How long the caller waited for the reply at their ear, beside it.
    await transcript.getByText(/^heard \d+ ms after the contact stopped$/).waitFor({ timeout: 20_000 });

    // The agent's audio reached the page and was played: the opening and the reply, each sentence's mark echoed.
    expect(Number(await page.getByTestId('browser-call-received').getAttribute('data-frames'))).toBeGreaterThan(10);
    expect(Number(await text('browser-call-received'))).toBeGreaterThan(2);
    await expect.poll(async () => Number(await text('browser-call-played'))).toBeGreaterThanOrEqual(2);
    // The microphone reached Deepgram as PCM16 at 16 kHz, carrying the file: its loudness rises and
    // falls with the file's words and silence, in step (a wrong rate would drift out of step).
    const session = deepgram.sessions[0]!;
    expect(session.query).toMatchObject({ encoding: 'linear16', sample_rate: '16000' });
    const likeness = envelopeLikeness(pcm16Samples(deepgram.audioOf(session)), 16_000, caller);
    // Measured: 0.93; the same audio read 10% too fast or slow gives 0.52 and 0.39, noise 0.13.
    console.log(`the microphone's audio against the file's: correlation of loudness ${likeness.toFixed(2)}`);
    expect(likeness).toBeGreaterThan(0.7);
    await screenshots('browser-call');

    await page.getByRole('button', { name: 'Hang up' }).click();
    await expect.poll(() => text('browser-call-status')).toBe('The call is over (contact hung up).');
    await page.getByRole('button', { name: 'Call again' }).waitFor();

    // The call is a test chat: its transcript, the speech and the model billed as test cost.
    const chatId = (await until('the chat', async () => {
      const rows = await dashboard.t.runtime.db.query<{ id: string }>('SELECT id FROM test_chats WHERE agent_id = $1', [agent.id]);
      return rows.rows[0]?.id;
    })) as string;
    const saved = await api('GET', `/test-chats/${chatId}`);
    expect(saved).toMatchObject({ status: 'ENDED', endReason: 'contact_hung_up', brain: 'model:browser-model' });
    expect((saved.transcript as { role: string; text: string }[]).map(({ role, text }) => [role, text])).toEqual([
      ['agent', OPENING],
      ['contact', RECOGNISED],
      ['agent', REPLY],
    ]);
    const answer = (saved.transcript as { latency?: { voice?: Record<string, number> } }[])[2]!;
    expect(answer.latency?.voice).toMatchObject({ heardMs: expect.any(Number), endOfTurnMs: expect.any(Number) });
    const usage = saved.usage as Record<string, number>;
    expect(usage.sttSeconds).toBeGreaterThanOrEqual(176_000 / 32_000);
    expect(usage.ttsCharacters).toBe(OPENING.length + REPLY.length);
    expect(usage.llmTokens).toBe(89);
    expect(Number((saved.cost as { total: string }).total)).toBeGreaterThan(0);
    await expect(text('browser-call-cost')).resolves.toBe(`$${(saved.cost as { total: string }).total}`);
    expect(problems).toEqual([]);
  });
});
