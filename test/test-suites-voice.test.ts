import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { startFakeSpeech, type ReceivedTranscription } from '../src/providers/openai-compatible/fake-speech.ts';
import { callerSaying, detectorStarted, voicedSpan } from './caller-speech.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { finishedRun, retrievalAgent, suiteTenant, type Api } from './suite-fixtures.ts';

// Issue 41, item 2: a test suite run through the voice pipeline. Each scenario is a call on an
// in-process line: the caller's lines spoken by eSpeak NG as 8 kHz phone audio, cut into
// utterances by Silero and heard by the agent's OpenAI-compatible recogniser (a fake on loopback
// that records the WAV it is sent), the retrieval agent's replies synthesised by eSpeak NG.
let t: TestApp;
let speech: Awaited<ReturnType<typeof startFakeSpeech>>;

const QUESTION = 'When does the clinic open its doors in the morning on weekdays?';
const GOODBYE = 'Goodbye then.';
const PARKING = 'Is there somewhere to park my car?';
/** What the recogniser makes of each line: the parking question misheard, so the agent answers what it heard. */
const HEARD: Record<string, string> = { [QUESTION]: QUESTION, [GOODBYE]: GOODBYE, [PARKING]: 'Is there a pharmacy?' };
/** Each line's voiced seconds, as the caller speaks it: 0.8, 1.7 and 3.0 s. */
const voicedSeconds = new Map<string, number>();

/**
 * The fake hears a line by its length (eSpeak NG's samples differ a little from one synthesis to
 * the next): the utterance it is sent is the voice and 0–0.7 s around it, and the lines differ by more.
 */
function recognise(received: ReceivedTranscription): string {
  const seconds = (received.wav?.samples.length ?? 0) / 2 / (received.wav?.sampleRate ?? 8000);
  const distance = (line: string) => Math.abs(seconds - voicedSeconds.get(line)! - 0.3);
  const [line] = [...voicedSeconds.keys()].sort((a, b) => distance(a) - distance(b));
  return HEARD[line!]!;
}

beforeAll(async () => {
  for (const line of [QUESTION, GOODBYE, PARKING]) {
    const { startMs, endMs } = voicedSpan(await callerSaying(line));
    voicedSeconds.set(line, (endMs - startMs) / 1000);
  }
  speech = await startFakeSpeech({ transcribe: recognise });
  t = await startTestApp({ env: { SPEECH_API_URL: `${speech.url}/v1`, VOICE_SILENCE_SECONDS: '30' } });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
  // The detector's worker starts with the first line that needs it (seconds on a busy machine).
  await detectorStarted();
}, 60_000);
afterAll(async () => {
  await t?.close();
  await speech?.close();
});

const tenant = () => suiteTenant(t);
/** The clinic's retrieval agent, listening through the service's speech server (SPEECH_API_URL) unless `stt` says otherwise. */
const clinicAgent = (api: Api, tenantId: string, extra: Record<string, unknown> = {}) => retrievalAgent(t, api, tenantId, extra);

const SUITE = (agentId: string) => ({
  agentId,
  name: 'Front desk, spoken',
  scenarios: [
    {
      name: 'asks the opening hours',
      script: [QUESTION, GOODBYE],
      assertions: [
        { type: 'said', phrase: 'opens at 8 am' },
        { type: 'end_reason', equals: 'agent_ended' },
      ],
    },
    { name: 'asks about parking', script: [PARKING], assertions: [{ type: 'said', phrase: 'blue garage' }] },
  ],
});

const finished = (api: Api, runId: string) => finishedRun(api, runId, 90_000);

type Turn = { role: string; text: string; latency?: { voice?: Record<string, number | null> } };

describe('a suite through the voice pipeline', () => {
  it("plays each scenario as a call: the recogniser hears the caller's spoken lines, the assertions judge what it heard", async () => {
    const { api, tenantId } = await tenant();
    const agent = await clinicAgent(api, tenantId);
    expect(agent).toMatchObject({ stt: { provider: 'OPENAI_COMPATIBLE' }, tts: { provider: 'ESPEAK' } });
    const suite = (await api('POST', '/test-suites', SUITE(agent.id))).json();
    const balance = Number((await api('GET', '/profile')).json().data.wallet.balance);
    const before = speech.transcriptions.length;

    const started = await api('POST', `/test-suites/${suite.id}/runs?voice=true`);
    expect(started.statusCode).toBe(202);
    expect(started.json()).toMatchObject({ voice: true, status: 'QUEUED', scenarios: 2 });
    const run = await finished(api, started.json().id);
    expect(run).toMatchObject({ voice: true, status: 'FAILED', passed: 1, failed: 1 });
    const [hours, parking] = run.results;

    // The recogniser was sent each spoken line once, as a WAV at the line's 8 kHz, and nothing else.
    const sent = speech.transcriptions.slice(before);
    expect(sent.map(recognise).sort()).toEqual([GOODBYE, QUESTION, HEARD[PARKING]].sort());
    for (const received of sent) {
      expect(received.wav).toMatchObject({ format: 1, channels: 1, sampleRate: 8000, bitsPerSample: 16 });
      expect(received.fields).toMatchObject({ model: 'whisper-1' });
    }

    // The transcript holds what was heard; the agent answered it, and its answers were judged.
    const said = (turns: Turn[]) => turns.map((turn) => [turn.role, turn.text]);
    expect(said(hours.transcript).filter(([role]) => role === 'contact')).toEqual([
      ['contact', QUESTION],
      ['contact', GOODBYE],
    ]);
    expect(hours).toMatchObject({ status: 'passed', endReason: 'agent_ended' });
    expect(hours.assertions.map((verdict: { verdict: string }) => verdict.verdict)).toEqual(['passed', 'passed']);
    expect(said(parking.transcript).filter(([role]) => role === 'contact')).toEqual([['contact', 'Is there a pharmacy?']]);
    expect(parking.status).toBe('failed');
    expect(parking.assertions[0]).toMatchObject({ verdict: 'failed', why: 'No turn of the agent says "blue garage".' });

    // Each answer to the caller carries its latency at the caller's ear.
    for (const result of [hours, parking]) {
      const turns: Turn[] = result.transcript;
      const answers = turns.filter((turn, i) => turn.role === 'agent' && turns[i - 1]?.role === 'contact');
      expect(answers.length).toBe(turns.filter((turn) => turn.role === 'contact').length);
      for (const answer of answers) {
        const voice = answer.latency?.voice;
        expect(voice).toMatchObject({ endOfTurnMs: expect.any(Number), firstTokenMs: expect.any(Number), heardMs: expect.any(Number) });
        expect(voice!.heardMs).toBeGreaterThanOrEqual(voice!.endOfTurnMs!);
      }
    }

    // Billed for the audio the recogniser was sent and the characters the voice spoke, as a call is.
    const sentSeconds = (text: string) =>
      sent.filter((received) => recognise(received) === text).reduce((sum, received) => sum + received.wav!.samples.length / 2 / 8000, 0);
    expect(hours.usage.sttSeconds).toBeCloseTo(sentSeconds(QUESTION) + sentSeconds(GOODBYE), 1);
    expect(parking.usage.sttSeconds).toBeCloseTo(sentSeconds(HEARD[PARKING]!), 1);
    const agentCharacters = (turns: Turn[]) =>
      turns.filter((turn) => turn.role === 'agent').reduce((sum, turn) => sum + turn.text.length, 0);
    for (const result of [hours, parking]) {
      expect(result.usage).toMatchObject({ sttProvider: 'OPENAI_COMPATIBLE', ttsProvider: 'ESPEAK', llmTokens: 0, telephonySeconds: 0 });
      expect(result.usage.ttsCharacters).toBeGreaterThanOrEqual(agentCharacters(result.transcript));
      expect(Number(result.cost.stt)).toBeGreaterThan(0);
      expect(Number(result.cost.total)).toBeGreaterThan(0);
    }
    expect(Number(run.costTotal)).toBeGreaterThan(0);
    const after = Number((await api('GET', '/profile')).json().data.wallet.balance);
    expect(after).toBeCloseTo(balance - Number(run.costTotal), 4);
    // Nothing left the test: no call was placed.
    expect((await api('GET', '/call-logs')).json().total).toBe(0);
  }, 120_000);

  it('refuses a voice run of an agent that cannot hear, in the catalogue’s words, and runs it as text', async () => {
    const { api, tenantId } = await tenant();
    const agent = await clinicAgent(api, tenantId, { stt: null });
    const suite = (await api('POST', '/test-suites', SUITE(agent.id))).json();
    const refused = await api('POST', `/test-suites/${suite.id}/runs?voice=true`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({
      code: 'TEST_SUITE_VOICE_NEEDS_STT',
      message: expect.stringMatching(
        /^Clinic desk has no speech-to-text to hear the caller with, and none ships offline; .*SPEECH_API_URL/,
      ),
    });
    expect((await api('GET', `/test-suites/${suite.id}/runs`)).json().total).toBe(0);
    const text = await api('POST', `/test-suites/${suite.id}/runs`);
    expect(text.statusCode).toBe(202);
    expect(text.json()).toMatchObject({ voice: false });
  });

  it("keeps tenants apart: another tenant's suite is not found, voice or not", async () => {
    const owner = await tenant();
    const agent = (await owner.api('POST', '/agents', { name: 'Theirs' })).json();
    const suite = (await owner.api('POST', '/test-suites', SUITE(agent.id))).json();
    const other = await tenant();
    const response = await other.api('POST', `/test-suites/${suite.id}/runs?voice=true`);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect((await owner.api('GET', `/test-suites/${suite.id}/runs`)).json().total).toBe(0);
  });
});
