/**
 * The conversation engine's own cost: BENCH_CONVERSATIONS (default 200) simulated calls converse at
 * once with an OpenAI-compatible model that answers at once (a local server in a worker thread,
 * speaking the real streaming wire format: SSE chunks, a usage chunk, [DONE]), BENCH_TURNS (default
 * 10) contact turns each. A turn is what a call pays for one utterance: the engine's reply through
 * the OpenAI SDK (`session.hear`), which the contact waits for, and the turns written to the call
 * (`appendTurns`), which happens while the contact listens to the reply and is timed on its own; the
 * CPU per turn counts both.
 *
 *   npm run bench:conversation                      # embedded PGlite
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:conversation
 *
 * Contacts pause BENCH_PAUSE_MS (default 1,000, jittered ±50%) before each utterance, as callers
 * do; BENCH_PAUSE_MS=0 is a closed loop that measures saturation instead.
 *
 * Baseline, in the same run and at the same concurrency and pace: the same conversation sent to the
 * same server by a bare `fetch` reading the whole stream, the least any client pays to hear the model. The
 * platform's own overhead per turn is the difference. Also printed: CPU per turn, heap per live
 * conversation (sessions open, before their turns) and the event loop's delay while they talk.
 */
import { performance, monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { tenantCtx } from '../src/platform/context.ts';
import { advanceDueCalls, appendTurns, claimConversation, findCallRow, simulateInboundCall } from '../src/modules/calls/service.ts';
import { requireAgent } from '../src/modules/agents/service.ts';
import { sessionFor, usageOf } from '../src/modules/conversation/service.ts';
import { fixed, inProcessRuntime, intFromEnv, runBench, table } from './harness.ts';

const CONVERSATIONS = intFromEnv('BENCH_CONVERSATIONS', 200, 1);
const TURNS = intFromEnv('BENCH_TURNS', 10, 1);
/**
 * A contact's pause between the agent's reply and their next words, on average (jittered ±50%):
 * 200 callers who answer at once are the worst case, not a closed loop that saturates the process.
 * BENCH_PAUSE_MS=0 runs the closed loop.
 */
const PAUSE_MS = intFromEnv('BENCH_PAUSE_MS', 1000, 0);
const pause = () => new Promise((resolve) => setTimeout(resolve, PAUSE_MS * (0.5 + Math.random())));
const GOAL_P95_MS = 5;

// A system prompt of the size agents have in practice (about 2,000 characters), with variables.
const SYSTEM_PROMPT = [
  'You are {{agent.name}}, calling {{name}} on behalf of the clinic about the {{metadata.plan}} plan. Today is {{now}} ({{timezone}}).',
  'Goals: confirm the appointment, answer questions about opening hours, parking, prices and insurance, and offer to move the appointment when the contact cannot come.',
  'Style: warm, brief, one or two sentences per turn; never read lists; spell out times the way people say them; ask one question at a time.',
  'Rules: never give medical advice; if the contact asks for a person, offer a transfer; if they ask not to be called again, apologise, confirm, and end the call.',
  'Facts: the clinic opens from 8 am to 6 pm on weekdays and from 9 am to noon on Saturdays; parking is free in the blue garage behind the building; the first visit costs 60 euros and follow-ups 40; most private insurers are accepted, the public one is not.',
  'When the contact confirms, thank them and say goodbye; when they want another time, propose the next two free slots: tomorrow at 10 am or Thursday at 4 pm; when they are unsure, offer to send the details by SMS.',
  'If the line is bad or you did not understand, ask them to repeat once, then offer to call back later.',
].join('\n\n');
const LINES = [
  'Hello?',
  'Yes, this is me. What is it about?',
  'Oh right, the appointment. When was it again?',
  'Hmm, I am not sure I can make it on that day.',
  'Do you have something later in the week?',
  'Thursday at four would work better for me.',
  'And where do I park when I come?',
  'Is the first visit expensive?',
  'Do you take my insurance?',
  'Great, thank you very much.',
];

/** The model: a loopback OpenAI-compatible server in its own thread, so its work is not the engine's. */
const FAKE_MODEL = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const model = JSON.parse(body).model;
    const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model };
    const chunk = (delta, finish = null) => 'data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] }) + '\\n\\n';
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const piece of ['Of course. ', 'We open at eight ', 'on weekdays.']) res.write(chunk({ content: piece }));
    res.write(chunk({}, 'stop'));
    res.write('data: ' + JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 600, completion_tokens: 12, total_tokens: 612 } }) + '\\n\\n');
    res.end('data: [DONE]\\n\\n');
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

function startFakeModel(): Promise<{ url: string; stop: () => Promise<number> }> {
  const worker = new Worker(FAKE_MODEL, { eval: true });
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (port: number) => resolve({ url: `http://127.0.0.1:${port}/v1`, stop: () => worker.terminate() }));
  });
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

async function run(adminUrl: string | undefined): Promise<number> {
  const model = await startFakeModel();
  const { runtime, app, where } = await inProcessRuntime(adminUrl, {
    LLM_API_URL: model.url,
    LLM_MODEL: 'bench-model',
    SIMULATOR_RING_SECONDS: '0',
    SIMULATOR_TALK_SECONDS: '3600',
    STARTING_CREDIT: '100000',
  });
  const inject = async (method: 'GET' | 'POST', url: string, payload?: object, token?: string) =>
    (await app.inject({ method, url: `/api/v1${url}`, payload, headers: token ? { authorization: `Bearer ${token}` } : {} })).json();
  const signup = await inject('POST', '/auth/signup', {
    email: `bench-${Date.now()}@example.com`,
    password: 'correct horse battery staple',
    tenantName: 'Bench',
  });
  const token = signup.accessToken as string;
  const agent = await inject(
    'POST',
    '/agents',
    { name: 'Clinic', systemPrompt: SYSTEM_PROMPT, firstMessage: 'Hello {{name}}, this is the clinic.' },
    token,
  );
  const number = await inject(
    'POST',
    '/voice-numbers',
    { phoneNumber: '+14155550100', provider: 'SIMULATOR', inboundAgentId: agent.id },
    token,
  );
  const tenantId = agent.tenantId as string;
  const ctx = tenantCtx(runtime, tenantId);
  const callIds: string[] = [];
  for (let i = 0; i < CONVERSATIONS; i++) {
    const call = await simulateInboundCall(ctx, { voiceNumberId: number.id, fromNumber: `+1415556${String(i).padStart(4, '0')}` });
    callIds.push(call.id);
  }
  while ((await advanceDueCalls(runtime, runtime.clock.now())) > 0);
  // Baseline: the bare request, at the same concurrency, carrying the same conversation as the
  // engine's (the system prompt, the opening, every line and reply so far), serialised per turn as any client must.
  const REPLY = 'Of course. We open at eight on weekdays.';
  const baseline: number[] = [];
  const baselineCpu = process.cpuUsage();
  await Promise.all(
    callIds.map(async () => {
      const messages = [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'assistant', content: 'Hello Ana, this is the clinic.' },
      ];
      for (let turn = 0; turn < TURNS; turn++) {
        await pause();
        const started = performance.now();
        messages.push({ role: 'user', content: LINES[turn % LINES.length]! });
        const response = await fetch(`${model.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'bench-model', stream: true, stream_options: { include_usage: true }, messages }),
        });
        await response.text();
        messages.push({ role: 'assistant', content: REPLY });
        baseline.push(performance.now() - started);
      }
    }),
  );
  const baselineCpuMs = (process.cpuUsage(baselineCpu).user + process.cpuUsage(baselineCpu).system) / 1000;

  // The sessions, opened (first message said and written), then measured for memory.
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const agentRecord = await requireAgent(ctx, agent.id);
  const sessions = await Promise.all(
    callIds.map(async (callId) => {
      const call = (await claimConversation(ctx, callId)) ?? (await findCallRow(ctx, callId))!;
      const counterpart = {
        name: 'Ana',
        phone: call.from_number,
        email: null,
        metadata: { plan: 'gold' },
        campaignName: null,
        timezone: 'Europe/Madrid',
      };
      const opened = await sessionFor(runtime, ctx, agentRecord, counterpart, { kind: 'call', call }, call.answered_at ?? new Date());
      await appendTurns(ctx, callId, await opened.session.open(), usageOf(opened.session, opened.model));
      return { callId, ...opened };
    }),
  );
  global.gc?.();
  const heapPerConversation = (process.memoryUsage().heapUsed - heapBefore) / CONVERSATIONS;

  const replies: number[] = [];
  const writes: number[] = [];
  // The histogram records the time between its timer's runs: an idle loop reads the resolution.
  const LOOP_RESOLUTION_MS = 10;
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const platformCpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    sessions.map(async ({ callId, session, model: conversationModel }) => {
      let written: Promise<void> = Promise.resolve();
      for (let turn = 0; turn < TURNS; turn++) {
        // The contact listens to the reply and thinks while its turns are written.
        await Promise.all([pause(), written]);
        const t0 = performance.now();
        const said = await session.hear(LINES[turn % LINES.length]!);
        replies.push(performance.now() - t0);
        const t1 = performance.now();
        written = appendTurns(ctx, callId, said, usageOf(session, conversationModel)).then((live) => {
          if (!live) throw new Error(`call ${callId} ended mid-bench`);
          writes.push(performance.now() - t1);
        });
      }
      await written;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  loop.disable();
  const platformCpuMs = (process.cpuUsage(platformCpu).user + process.cpuUsage(platformCpu).system) / 1000;
  await model.stop();

  const count = CONVERSATIONS * TURNS;
  const delay = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - LOOP_RESOLUTION_MS);
  const cpuPerTurn = platformCpuMs / count;
  const cpuPerBaseline = baselineCpuMs / count;
  const overheadP50 = percentile(replies, 50) - percentile(baseline, 50);
  const overheadP95 = percentile(replies, 95) - percentile(baseline, 95);
  process.stdout.write(
    `\n== conversation engine on ${where}: ${CONVERSATIONS} conversations at once, ${TURNS} turns each, contacts pausing ${PAUSE_MS} ms ±50%\n`,
  );
  process.stdout.write(
    table(
      [
        ['', 'p50 ms', 'p95 ms', 'CPU ms/turn'],
        [
          'bare request to the model (baseline)',
          fixed(percentile(baseline, 50), 2),
          fixed(percentile(baseline, 95), 2),
          fixed(cpuPerBaseline, 3),
        ],
        ['turn: engine reply (session.hear)', fixed(percentile(replies, 50), 2), fixed(percentile(replies, 95), 2), ''],
        ['turn: transcript written meanwhile', fixed(percentile(writes, 50), 2), fixed(percentile(writes, 95), 2), ''],
        ['turn: reply and write', '', '', fixed(cpuPerTurn, 3)],
        ['platform overhead (reply − baseline)', fixed(overheadP50, 2), fixed(overheadP95, 2), fixed(cpuPerTurn - cpuPerBaseline, 3)],
      ],
      (column) => column > 0,
    ),
  );
  process.stdout.write(
    `\nturns/s ${fixed(count / seconds, 0)} · ratio reply/baseline p50 ${fixed(percentile(replies, 50) / percentile(baseline, 50), 2)}x, p95 ${fixed(percentile(replies, 95) / percentile(baseline, 95), 2)}x\n` +
      `heap per live conversation ${fixed(heapPerConversation / 1024, 1)} KiB${global.gc ? '' : ' (run with --expose-gc for a settled figure)'}\n` +
      `event-loop delay while talking: p50 ${fixed(delay(loop.percentile(50)), 2)} ms, p99 ${fixed(delay(loop.percentile(99)), 2)} ms, max ${fixed(delay(loop.max), 2)} ms\n` +
      `goal: platform overhead p95 < ${GOAL_P95_MS} ms: ${overheadP95 < GOAL_P95_MS ? 'met' : 'not met'}\n`,
  );
  return 0;
}

await runBench(() => run(process.env.DATABASE_URL));
