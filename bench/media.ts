/**
 * The voice pipeline under load: BENCH_MEDIA_CALLS (default 200) Twilio calls converse at once on
 * one service process, each a real media stream (signed upgrade, 20 ms μ-law frames both ways at
 * real pace) through the real pipeline: Deepgram's live recognition, the model, ElevenLabs' voice,
 * all zero-delay local fakes speaking their wire formats. Each call has BENCH_MEDIA_TURNS (default
 * 3) turns, one every BENCH_MEDIA_TURN_SECONDS (default 5): the caller speaks 1.5 s, the agent answers
 * two sentences. BENCH_MEDIA_STT=utterance: the agent's speech-to-text is OpenAI-compatible
 * `/audio/transcriptions` instead, and the callers really speak (eSpeak NG, about 2 s), cut into
 * utterances by the service's voice-activity detection (Silero, in its worker thread).
 * BENCH_MEDIA_STT=pauses: turn-taking (issue 40): 100 calls by default, the callers say
 * sentences with pauses inside them up to 700 ms (eSpeak NG, `PHRASES` below) to an utterance
 * recogniser; half the calls' agents end the turn by words (`stt.endOfTurn` WORDS), half by silence
 * alone (SILENCE, the baseline, as before the detectors), and the bench prints, for each, the time
 * from the caller's last sound to the first agent audio and how many sentences the agent answered
 * inside a pause (false cut-offs). VOICE_PAUSE_MS is passed on to the service.
 * BENCH_MEDIA_STT=flux: the agents listen with Deepgram Flux (`stt.endOfTurn` FLUX), whose fake
 * ends each turn 260 ms after the caller's last sound, with an eager end 150 ms earlier on some turns
 * (Deepgram's published figures) and, on others, an eager end in a pause the caller goes on after;
 * the model takes BENCH_MEDIA_MODEL_MS (default 300 here, 0 in the other modes) to its first words,
 * and the bench prints each kind of turn's latency and what the eager end saved.
 * BENCH_MEDIA_VOICE=espeak: the agent speaks with eSpeak NG, synthesised for real in the service.
 * With both, the realistic offline path; the process's memory is read before the calls, at its peak
 * and BENCH_MEDIA_SETTLE_SECONDS (default 60) after the last call, against goals for memory per call.
 *
 *   npm run bench:media                      # embedded PGlite
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:media
 *   BENCH_MEDIA_STT=utterance BENCH_MEDIA_CALLS=50 npm run bench:media
 *   BENCH_MEDIA_STT=pauses npm run bench:media
 *   BENCH_MEDIA_STT=flux BENCH_MEDIA_CALLS=100 npm run bench:media
 *   BENCH_MEDIA_STT=utterance BENCH_MEDIA_VOICE=espeak BENCH_MEDIA_CALLS=100 BENCH_MEDIA_TURNS=2 npm run bench:media
 *
 * Threads: the service alone on the main thread; the fakes in one worker thread, the callers in
 * another (bench/media-threads.ts), so neither's work is the service's.
 *
 * Turn latency: from the frame that ends the caller's speech (sent by the caller) to the first frame
 * of the agent's answer (received by the caller): audio forwarded to the recogniser, its end of
 * utterance, the model's first sentence, its synthesis, the first audio back. With the utterance
 * recogniser it includes the pause the detector waits for (VOICE_PAUSE_MS: the bench's question is
 * a finished turn there), which the pipeline's share leaves out. Baseline, in the same
 * run: the providers alone, asked directly from the main thread while idle (the model streamed to
 * its first sentence, then the voice to its first chunk); the pipeline's own share is the
 * difference. Also: the service's event-loop delay while the calls talk, and its memory per call.
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { callerSaying, detectorStarted, voicedSpan } from '../test/caller-speech.ts';
import { PHONE_AUDIO } from '../src/platform/audio.ts';
import { espeakSpeech } from '../src/providers/espeak/speech.ts';
import { freeLoopbackPort } from '../src/providers/fake-server.ts';
import { streamOf } from '../src/providers/twilio/fake-media-stream.ts';
import { startFakeTwilio } from '../src/providers/twilio/fake.ts';
import { FLUX_TURNS } from './flux-turns.ts';
import type { BenchPlan, CallerPhrase, UtteranceResult } from './media-threads.ts';
import { fixed, inProcessRuntime, intFromEnv, runBench, table } from './harness.ts';

/** Turn-taking: callers say sentences with pauses inside them, half the calls' agents detect the end of turn by words, half by silence. */
const TURN_TAKING = process.env.BENCH_MEDIA_STT === 'pauses';
/** Deepgram Flux ends the turns, with its eager end of turn on some (FLUX_TURNS); the model takes time to think, which the eager end hides. */
const FLUX = process.env.BENCH_MEDIA_STT === 'flux';
const plan: BenchPlan = {
  calls: intFromEnv('BENCH_MEDIA_CALLS', TURN_TAKING ? 100 : 200, 1),
  turns: intFromEnv('BENCH_MEDIA_TURNS', 3, 1),
  turnSeconds: intFromEnv('BENCH_MEDIA_TURN_SECONDS', TURN_TAKING ? 8 : 5, 3),
  baselineRequests: 50,
  stt: process.env.BENCH_MEDIA_STT === 'utterance' || TURN_TAKING ? 'utterance' : FLUX ? 'flux' : 'live',
  modelFirstTokenMs: intFromEnv('BENCH_MEDIA_MODEL_MS', FLUX ? 300 : 0, 0),
};
/** The agent's voice: ElevenLabs' zero-delay fake, or eSpeak NG synthesising for real in the service (BENCH_MEDIA_VOICE=espeak). */
const VOICE = process.env.BENCH_MEDIA_VOICE === 'espeak' ? 'ESPEAK' : 'ELEVENLABS';
/** How long after the last call the service's memory is read again (the issue's minute; shorter for a quick run). */
const SETTLE_SECONDS = intFromEnv('BENCH_MEDIA_SETTLE_SECONDS', 60, 0);
const END_OF_SPEECH_MS = 600;
const PAUSE_MS = intFromEnv('VOICE_PAUSE_MS', 96, 32);
if (plan.stt === 'utterance' && !TURN_TAKING) plan.speech = await callerSaying('When do you open tomorrow morning?');
/** The agents' end-of-turn detectors, one per campaign in turn (turn-taking compares them in the same run). */
const DETECTORS = TURN_TAKING ? (['WORDS', 'SILENCE'] as const) : ([undefined] as const);
const GOAL_TURN_P50_MS = 250;
const GOAL_TURN_P95_MS = 450;
const GOAL_CUT_OFF_PERCENT = 5;
const GOAL_P95_MS = 50;
const GOAL_LOOP_P99_MS = 20;
const GOAL_RSS_PER_CALL_MIB = 5;
const GOAL_RSS_RETURNED_PERCENT = 10;
const CAMPAIGN_SIZE = 50; // the most live calls one campaign allows

function thread<T>(workerData: object): { worker: Worker; first: Promise<T> } {
  const tsx = import.meta.resolve('tsx/esm/api');
  const script = new URL('./media-threads.ts', import.meta.url).href;
  const worker = new Worker(
    `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script)}); });`,
    {
      eval: true,
      workerData,
    },
  );
  const first = new Promise<T>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { worker, first };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
};

/** The zero-delay providers alone: the model to its first sentence, then the voice to its first chunk. */
async function providersAlone(urls: { chat: string; elevenlabs: string; elevenlabsKey: string }, voice: string, times: number) {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    const reply = await fetch(`${urls.chat}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'bench-model',
        stream: true,
        messages: [{ role: 'user', content: 'When do you open tomorrow morning?' }],
      }),
    });
    const reader = reply.body!.getReader();
    let text = '';
    while (!text.includes('eight.')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    await reader.cancel();
    await firstVoiceChunk(urls, voice);
    samples.push(performance.now() - started);
  }
  return samples;
}

/** The voice's first chunk of a sentence: ElevenLabs' fake over HTTP, or eSpeak NG in its worker. */
async function firstVoiceChunk(urls: { elevenlabs: string; elevenlabsKey: string }, voice: string): Promise<void> {
  const text = 'We open at eight.';
  if (VOICE === 'ESPEAK') {
    const signal = new AbortController();
    const synthesis = espeakSpeech.synthesize({ text, voice, language: 'en', format: PHONE_AUDIO, signal: signal.signal });
    const chunks = synthesis.audio[Symbol.asyncIterator]();
    await chunks.next();
    // The rest of the sentence drains in the worker: the baseline is its first chunk.
    signal.abort();
    await chunks.return?.();
    return;
  }
  const speech = await fetch(`${urls.elevenlabs}/v1/text-to-speech/${voice}/stream?output_format=ulaw_8000`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'xi-api-key': urls.elevenlabsKey },
    body: JSON.stringify({ text, model_id: 'eleven_flash_v2_5' }),
  });
  const voiceReader = speech.body!.getReader();
  await voiceReader.read();
  await voiceReader.cancel();
}

/**
 * What the callers say in the turn-taking run: sentences a clinic hears, most with a pause inside
 * (a hesitation, a number read out in groups, one clause going on after a complete one), and two
 * without. Each piece's words are what a recogniser writes for it alone, full stop included.
 */
const PHRASES: [text: string, pauseAfterMs: number][][] = [
  [['When do you open tomorrow morning?', 0]],
  [
    ["I'd like to.", 500],
    ['Book an appointment for Tuesday.', 0],
  ],
  [
    ['My number is 4 1 5.', 700],
    ['5 5 5.', 400],
    ['0 1 0 0.', 0],
  ],
  [
    ['Can you tell me um.', 600],
    ['What time the pharmacy closes?', 0],
  ],
  [
    ['I was wondering if.', 300],
    ['You take walk in patients.', 0],
  ],
  [['Do you have anything on Friday?', 0]],
  [
    ['I need to move my appointment to.', 650],
    ['Thursday afternoon.', 0],
  ],
  [
    ['The appointment is for my son.', 500],
    ['And my daughter.', 0],
  ],
  [
    ['My date of birth is the.', 450],
    ['Third of May.', 0],
  ],
  [
    ['Could I speak with the.', 700],
    ['Nurse please?', 0],
  ],
  [
    ['Um.', 600],
    ['Is the doctor in today?', 0],
  ],
  [
    ['I have a question about my.', 550],
    ['Bill from last month.', 0],
  ],
];

async function callerPhrases(): Promise<CallerPhrase[]> {
  const phrases: CallerPhrase[] = [];
  for (const pieces of PHRASES) {
    const phrase: CallerPhrase = { pieces: [] };
    for (const [text, pauseAfterMs] of pieces) {
      // eSpeak says the words without the recogniser's punctuation of a fragment; trimmed to its voice.
      const audio = await callerSaying(text.replace(/\.$/, ''));
      const voiced = voicedSpan(audio);
      phrase.pieces.push({ audio: audio.subarray(Math.floor(voiced.startMs) * 8, Math.ceil(voiced.endMs) * 8), text, pauseAfterMs });
    }
    phrases.push(phrase);
  }
  return phrases;
}

/** Each detector's figures: last sound → first agent audio, and the sentences with a pause the agent answered inside. */
function turnTakingReport(utterances: UtteranceResult[]): string {
  const rows = [['end of turn by', 'sentences', 'last sound → agent p50 ms', 'p95 ms', 'unanswered', 'cut off in a pause']];
  const goals: string[] = [];
  const cutOffs: string[] = [];
  for (const label of DETECTORS) {
    const mine = utterances.filter((one) => one.label === label);
    const latencies = mine.flatMap((one) => one.latencyMs ?? []);
    const paused = mine.filter((one) => one.paused);
    const cutOff = paused.filter((one) => one.cutOff).length;
    const cutOffPercent = (cutOff / Math.max(1, paused.length)) * 100;
    const [p50, p95] = [percentile(latencies, 50), percentile(latencies, 95)];
    rows.push([
      `${label}${label === 'SILENCE' ? ' (baseline)' : ''}`,
      String(mine.length),
      fixed(p50, 1),
      fixed(p95, 1),
      String(mine.length - latencies.length),
      `${cutOff} of ${paused.length} (${fixed(cutOffPercent, 1)}%)`,
    ]);
    const cutSentences = new Map<string, number>();
    for (const one of paused) if (one.cutOff) cutSentences.set(one.sentence, (cutSentences.get(one.sentence) ?? 0) + 1);
    for (const [sentence, times] of cutSentences)
      cutOffs.push(`  ${label}: "${sentence}" ${times} of ${paused.filter((one) => one.sentence === sentence).length}`);
    if (label === 'WORDS')
      goals.push(
        `last sound → first agent audio p50 ≤ ${GOAL_TURN_P50_MS} ms: ${p50 <= GOAL_TURN_P50_MS ? 'met' : 'not met'} (${fixed(p50, 1)}); ` +
          `p95 ≤ ${GOAL_TURN_P95_MS} ms: ${p95 <= GOAL_TURN_P95_MS ? 'met' : 'not met'} (${fixed(p95, 1)}); ` +
          `false cut-offs ≤ ${GOAL_CUT_OFF_PERCENT}%: ${cutOffPercent <= GOAL_CUT_OFF_PERCENT ? 'met' : 'not met'} (${fixed(cutOffPercent, 1)}%)`,
      );
  }
  return (
    `\nturn-taking: callers' sentences with pauses inside them up to 700 ms\n${table(rows, (column) => column > 0)}\n` +
    `sentences answered inside a pause:\n${cutOffs.join('\n') || '  none'}\ngoals (WORDS): ${goals.join('')}\n\n`
  );
}

/**
 * Flux: last sound → first agent audio for each kind of turn. The model's time is hidden by the
 * eager end as far as it reaches (150 ms here); a reply prepared for words the caller went on
 * after is dropped, and the turn answered from its eager end again.
 */
function fluxReport(latencies: number[], turns: number[], baseline: number[]): string {
  const rows = [['turn', 'answered', 'last sound → agent p50 ms', 'p95 ms']];
  const p50Of = new Map<string, number>();
  FLUX_TURNS.forEach(({ kind }, index) => {
    const mine = latencies.filter((_, at) => turns[at]! % FLUX_TURNS.length === index);
    p50Of.set(kind, percentile(mine, 50));
    rows.push([kind, String(mine.length), fixed(percentile(mine, 50), 1), fixed(percentile(mine, 95), 1)]);
  });
  rows.push([
    'providers alone (baseline)',
    String(baseline.length),
    fixed(percentile(baseline, 50), 1),
    fixed(percentile(baseline, 95), 1),
  ]);
  const saved = p50Of.get(FLUX_TURNS[1].kind)! - p50Of.get(FLUX_TURNS[0].kind)!;
  return `${table(rows, (column) => column > 0)}\nsaved by the eager end of turn (p50, against the end of turn only): ${fixed(saved, 1)} ms\n`;
}

async function run(adminUrl: string | undefined): Promise<number> {
  if (TURN_TAKING) plan.phrases = await callerPhrases();
  const providers = thread<{
    deepgram: string;
    deepgramKey: string;
    elevenlabs: string;
    elevenlabsKey: string;
    chat: string;
    speech: string;
  }>({
    role: 'providers',
    plan,
  });
  const urls = await providers.first;
  const accountSid = `AC${randomBytes(16).toString('hex')}`;
  const authToken = randomBytes(16).toString('hex');
  const twilio = await startFakeTwilio({ accountSid, authToken });
  const port = await freeLoopbackPort();
  const { runtime, app, where } = await inProcessRuntime(adminUrl, {
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    TWILIO_API_URL: twilio.url,
    DEEPGRAM_API_URL: urls.deepgram,
    DEEPGRAM_API_KEY: urls.deepgramKey,
    ELEVENLABS_API_URL: urls.elevenlabs,
    ELEVENLABS_API_KEY: urls.elevenlabsKey,
    LLM_API_URL: `${urls.chat}/v1`,
    LLM_MODEL: 'bench-model',
    SPEECH_API_URL: `${urls.speech}/v1`,
    VOICE_END_OF_SPEECH_MS: String(END_OF_SPEECH_MS),
    VOICE_PAUSE_MS: String(PAUSE_MS),
    DIALER_CALLS_PER_SECOND: '10000',
    CALL_CONFIRM_TIMEOUT_SECONDS: '3600',
    VOICE_SILENCE_SECONDS: '120',
    STARTING_CREDIT: '100000',
  });
  await app.listen({ port, host: '127.0.0.1' });

  // One tenant, one agent, campaigns of 50 calls each, dialled through the Twilio fake.
  const inject = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object, token?: string) => {
    const response = await app.inject({
      method,
      url: `/api/v1${url}`,
      payload,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    if (response.statusCode >= 400) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.body ? response.json() : {};
  };
  const owner = await inject('POST', '/auth/signup', {
    email: `bench-${Date.now()}@example.com`,
    password: 'correct horse battery staple',
    tenantName: 'Bench',
  });
  const token = owner.accessToken as string;
  await inject('PUT', '/integrations/twilio', { accountSid, authToken }, token);
  const voices = await inject('GET', `/voices?provider=${VOICE}&language=en`, undefined, token);
  const voice = voices.data[0].id as string;
  const agents: { id: string }[] = [];
  for (const endOfTurn of DETECTORS)
    agents.push(
      await inject(
        'POST',
        '/agents',
        {
          name: `Clinic${endOfTurn ? ` (${endOfTurn})` : ''}`,
          firstMessage: 'Hello, this is the clinic.',
          stt: FLUX
            ? { provider: 'DEEPGRAM', endOfTurn: 'FLUX' }
            : { provider: plan.stt === 'live' ? 'DEEPGRAM' : 'OPENAI_COMPATIBLE', ...(endOfTurn ? { endOfTurn } : {}) },
          tts: { provider: VOICE },
          voice,
        },
        token,
      ),
    );
  const number = await inject('POST', '/voice-numbers', { phoneNumber: '+14155550100', provider: 'TWILIO' }, token);
  let dialled = 0;
  // Turn-taking: at least one campaign per detector, each detector's campaigns as many calls.
  const campaignSize = Math.min(CAMPAIGN_SIZE, Math.ceil(plan.calls / DETECTORS.length));
  const campaignOf = (contact: number) => Math.floor(contact / campaignSize);
  for (let first = 0; first < plan.calls; first += campaignSize) {
    const size = Math.max(2, Math.min(campaignSize, plan.calls - first));
    const list = await inject('POST', '/contact-lists', { name: `Bench ${first}` }, token);
    const contacts = Array.from({ length: size }, (_, i) => ({ phoneNumber: `+1415556${String(first + i).padStart(4, '0')}` }));
    await inject('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts }, token);
    const campaign = await inject(
      'POST',
      '/campaigns',
      {
        name: `Bench ${first}`,
        agentId: agents[campaignOf(first) % agents.length]!.id,
        voiceNumberId: number.id,
        contactListId: list.id,
        timezone: 'UTC',
        callWindowStart: '00:00',
        callWindowEnd: '23:59',
        callDays: [1, 2, 3, 4, 5, 6, 7],
        maxConcurrentCalls: CAMPAIGN_SIZE,
        // US numbers dialled at whatever hour the bench runs: the statutory hours (on by default) would
        // hold them overnight, so the bench's calls are declared no solicitation.
        callingRules: false,
      },
      token,
    );
    await inject('POST', `/campaigns/${campaign.id}/start`, {}, token);
    dialled += size;
  }
  while (twilio.requests.filter((r) => r.path.endsWith('/Calls.json')).length < dialled) await dialerTick(runtime);
  const calls = twilio.requests
    .filter((r) => r.path.endsWith('/Calls.json'))
    .slice(0, plan.calls)
    .map((request) => ({
      sid: [...twilio.calls.values()].find((call) => call.to === request.form.get('To'))!.sid,
      stream: streamOf(request.form.get('Twiml')!),
      label: DETECTORS[campaignOf(Number(request.form.get('To')!.slice(-4))) % DETECTORS.length] ?? '',
    }));

  const baseline = await providersAlone(urls, voice, plan.baselineRequests);
  // A service that has run a while has its detector's thread up; its first start (seconds) is not a turn's latency.
  if (plan.stt === 'utterance') await detectorStarted();
  const callers = thread<string>({
    role: 'callers',
    options: { plan, calls, connectTo: `ws://127.0.0.1:${port}/api/v1/telephony/twilio/media`, accountSid, authToken },
  });
  await callers.first;
  const memoryBefore = process.memoryUsage();
  const peak = { ...memoryBefore };
  const sampler = setInterval(() => {
    const now = process.memoryUsage();
    for (const key of ['rss', 'heapUsed', 'external', 'arrayBuffers'] as const) peak[key] = Math.max(peak[key], now[key]);
  }, 250);
  const LOOP_RESOLUTION_MS = 10;
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  // The main thread's own busy share (process CPU would count the fakes' and callers' threads too).
  const utilization = performance.eventLoopUtilization();
  const started = performance.now();
  const result = new Promise<{ latencies: number[]; turns: number[]; missing: number } | UtteranceResult[]>((resolve) =>
    callers.worker.once('message', resolve),
  );
  callers.worker.postMessage('go');
  const outcome = await result;
  const utterances = Array.isArray(outcome) ? outcome : undefined;
  const { latencies, missing, turns } = Array.isArray(outcome)
    ? {
        latencies: outcome.flatMap((one) => one.latencyMs ?? []),
        missing: outcome.filter((one) => one.latencyMs === null).length,
        turns: [],
      }
    : outcome;
  const busy = performance.eventLoopUtilization(utilization).utilization;
  const seconds = (performance.now() - started) / 1000;
  loop.disable();
  clearInterval(sampler);
  // Every call has ended: what the service keeps of them shows once it has sat idle a while. The
  // callers' and fakes' threads, idle too, stay until then, so the reading counts what "before" did.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
  const memoryAfter = process.memoryUsage();
  await Promise.all([callers.worker.terminate(), providers.worker.terminate(), twilio.close()]);

  const delay = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - LOOP_RESOLUTION_MS);
  const p95 = percentile(latencies, 95);
  // The detector's deliberate wait for a pause (the bench's question ends the turn there) is the caller's, not the pipeline's.
  const waited = plan.stt === 'utterance' ? PAUSE_MS : 0;
  const pipelineP95 = p95 - percentile(baseline, 95) - waited;
  process.stdout.write(
    `\n== voice pipeline on ${where}: ${plan.calls} Twilio calls at once, ${plan.turns} turns each, 20 ms frames both ways, ` +
      (plan.stt === 'live'
        ? 'Deepgram live\n'
        : FLUX
          ? `Deepgram Flux (its end of turn 260 ms after the caller's last sound, its eager end 150 ms before that; the model's first words after ${plan.modelFirstTokenMs} ms)\n`
          : `voice-activity detection + /audio/transcriptions (pause ${PAUSE_MS} ms, end of speech ${END_OF_SPEECH_MS} ms)\n`),
  );
  const loopP99 = delay(loop.percentile(99));
  const loopLine =
    `${fixed(seconds, 1)} s · the service's thread busy ${fixed(busy * 100, 1)}% · event-loop delay p50 ${fixed(delay(loop.percentile(50)), 2)} ms, ` +
    `p99 ${fixed(loopP99, 2)} ms, max ${fixed(delay(loop.max), 2)} ms\n`;
  const loopGoal = `event-loop p99 < ${GOAL_LOOP_P99_MS} ms: ${loopP99 < GOAL_LOOP_P99_MS ? 'met' : 'not met'}`;
  // Turn-taking times each sentence from its last sound (above); the pipeline's share is the other modes' figure.
  if (utterances) process.stdout.write(turnTakingReport(utterances) + loopLine + `goals: ${loopGoal}\n`);
  else if (FLUX) process.stdout.write(fluxReport(latencies, turns, baseline) + loopLine + `goals: ${loopGoal}\n`);
  else
    process.stdout.write(
      table(
        [
          ['', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
          [
            'providers alone (baseline)',
            fixed(percentile(baseline, 50), 1),
            fixed(percentile(baseline, 95), 1),
            fixed(percentile(baseline, 99), 1),
            fixed(Math.max(...baseline), 1),
          ],
          [
            'end of speech → first agent audio',
            fixed(percentile(latencies, 50), 1),
            fixed(p95, 1),
            fixed(percentile(latencies, 99), 1),
            fixed(Math.max(...latencies), 1),
          ],
          [
            `pipeline (turn − baseline${waited ? ' − pause' : ''})`,
            fixed(percentile(latencies, 50) - percentile(baseline, 50) - waited, 1),
            fixed(pipelineP95, 1),
            '',
            '',
          ],
        ],
        (column) => column > 0,
      ) +
        `\nturns measured ${latencies.length} of ${plan.calls * plan.turns} (unanswered ${missing}) · ratio turn/baseline p95 ${fixed(p95 / percentile(baseline, 95), 2)}x\n` +
        loopLine +
        `goals: pipeline p95 < ${GOAL_P95_MS} ms: ${pipelineP95 < GOAL_P95_MS ? 'met' : 'not met'}; ${loopGoal}\n`,
    );
  const mib = (bytes: number) => fixed(bytes / 2 ** 20, 1);
  const memoryRow = (label: string, memory: Pick<NodeJS.MemoryUsage, 'rss' | 'heapUsed' | 'external' | 'arrayBuffers'>) => [
    label,
    mib(memory.rss),
    mib(memory.heapUsed),
    mib(memory.external),
    mib(memory.arrayBuffers),
  ];
  const rssPerCall = (peak.rss - memoryBefore.rss) / plan.calls;
  const afterShare = memoryAfter.rss / memoryBefore.rss - 1;
  process.stdout.write(
    `\nthe process's memory (MiB; the callers' and fakes' threads count in every row):\n` +
      table(
        [
          ['', 'RSS', 'heap used', 'external', 'array buffers'],
          memoryRow('before the calls', memoryBefore),
          memoryRow('peak (each column its own)', peak),
          memoryRow(`${SETTLE_SECONDS} s after the last call`, memoryAfter),
        ],
        (column) => column > 0,
      ) +
      `\nmemory per call (peak − before): RSS ${fixed(rssPerCall / 2 ** 20, 2)} MiB, heap ${fixed((peak.heapUsed - memoryBefore.heapUsed) / plan.calls / 2 ** 10, 0)} KiB; ` +
      `RSS ${SETTLE_SECONDS} s after the last call ${afterShare >= 0 ? '+' : ''}${fixed(afterShare * 100, 1)}% of before\n` +
      `goals: RSS per call ≤ ${GOAL_RSS_PER_CALL_MIB} MiB: ${rssPerCall <= GOAL_RSS_PER_CALL_MIB * 2 ** 20 ? 'met' : 'not met'}; ` +
      `RSS ${SETTLE_SECONDS} s after at most ${GOAL_RSS_RETURNED_PERCENT}% above before: ${afterShare * 100 <= GOAL_RSS_RETURNED_PERCENT ? 'met' : 'not met'}\n`,
  );
  return missing === 0 && latencies.length === plan.calls * plan.turns ? 0 : 1;
}

await runBench(() => run(process.env.DATABASE_URL));
