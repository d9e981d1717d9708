/**
 * A test suite of BENCH_SCENARIOS (default 200, the limit) scenarios run offline: the retrieval
 * agent answers each caller's BENCH_LINES (default 3) lines from a knowledge base, on the job queue,
 * and every scenario's assertions are judged and stored. Timed from POST /test-suites/{id}/runs to
 * the run's end, as a CI job waits for it. Goal: under 60 s.
 *
 *   npm run bench:suites                      # embedded PGlite
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:suites
 *
 * Baseline, in the same run: the same conversations as test chats through the API, one message
 * after another (POST /test-chats, then each line to POST /test-chats/{id}/messages), the way a
 * person testing by hand would send them; the suite does that work plus judging and storing.
 */
import { performance } from 'node:perf_hooks';
import { fixed, inProcessRuntime, intFromEnv, runBench, table } from './harness.ts';

const SCENARIOS = intFromEnv('BENCH_SCENARIOS', 200, 1);
const LINES = intFromEnv('BENCH_LINES', 3, 1);
const GOAL_S = 60;

const FACTS = [
  'Opening hours. The clinic opens at 8 am and closes at 6 pm on weekdays, and opens from 9 am to noon on Saturdays.',
  'Parking. Parking is free in the blue garage behind the building.',
  'Prices. The first visit costs 60 euros and each follow-up visit costs 40 euros.',
  'Insurance. Most private insurers are accepted; the public insurer is not.',
  'Cancellations. An appointment can be cancelled free of charge up to 24 hours before it.',
].join('\n\n');
const QUESTIONS = [
  ['What time does the clinic open on weekdays?', 'opens at 8 am'],
  ['Where can I park my car?', 'blue garage'],
  ['How much does the first visit cost?', '60 euros'],
  ['Do you accept private insurance?', 'private insurers'],
  ['Can I cancel my appointment?', '24 hours'],
] as const;

function scenarios() {
  return Array.from({ length: SCENARIOS }, (_, i) => {
    const [question, answer] = QUESTIONS[i % QUESTIONS.length]!;
    const script = ['Hello?', question, 'Thank you, goodbye.', 'Hello? Anyone?'].slice(0, Math.max(LINES, 1));
    return {
      name: `Scenario ${i + 1}: ${question}`,
      contact: { name: `Caller ${i + 1}` },
      script,
      assertions: [
        { type: 'said', phrase: answer },
        { type: 'never_said', phrase: 'I am a robot' },
        { type: 'end_reason', equals: LINES >= 3 ? 'agent_ended' : null },
        { type: 'tool_not_called', tool: 'transfer_call' },
      ],
    };
  });
}

async function run(adminUrl: string | undefined): Promise<number> {
  const { runtime, app, where } = await inProcessRuntime(adminUrl);
  const [{ jobDefinitions }, { processSource }] = await Promise.all([
    import('../src/jobs.ts'),
    import('../src/modules/knowledge/service.ts'),
  ]);
  const signup = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/signup',
    payload: { tenantName: 'Bench', email: `bench-${process.pid}@example.com`, password: 'correct horse battery' },
  });
  const { accessToken, user } = signup.json() as { accessToken: string; user: { tenantId: string } };
  const api = async (method: 'GET' | 'POST', url: string, payload?: object) => {
    const response = await app.inject({ method, url: `/api/v1${url}`, headers: { authorization: `Bearer ${accessToken}` }, payload });
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json() as Record<string, unknown> & { id: string };
  };
  const base = await api('POST', '/knowledge-bases', { name: 'Clinic' });
  const source = await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'facts', rawText: FACTS });
  await processSource(runtime, { tenantId: user.tenantId, sourceId: source.id, generation: 1 }, { retryCount: 0 });
  const agent = await api('POST', '/agents', { name: 'Clinic desk', knowledgeBaseIds: [base.id] });
  const suite = await api('POST', '/test-suites', { agentId: agent.id, name: 'Bench', scenarios: scenarios() });
  await runtime.jobs.work(jobDefinitions(runtime));

  // Warm-up: the embedding model and the statements, on one scenario of its own.
  const warm = await api('POST', '/test-suites', { agentId: agent.id, name: 'Warm-up', scenarios: scenarios().slice(0, 1) });
  const waitFor = async (runId: string) => {
    for (;;) {
      const current = await api('GET', `/test-suite-runs/${runId}`);
      if (current.status === 'PASSED' || current.status === 'FAILED') return current;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await waitFor((await api('POST', `/test-suites/${warm.id}/runs`)).id);

  process.stdout.write(`Test suite of ${SCENARIOS} scenarios × ${LINES} lines, retrieval agent, on ${where}\n`);
  const suiteStart = performance.now();
  const finished = await waitFor((await api('POST', `/test-suites/${suite.id}/runs`)).id);
  const suiteS = (performance.now() - suiteStart) / 1000;

  const chatStart = performance.now();
  let messages = 0;
  for (const scenario of scenarios()) {
    const chat = await api('POST', '/test-chats', { agentId: agent.id, contact: scenario.contact });
    for (const line of scenario.script) {
      const reply = await app.inject({
        method: 'POST',
        url: `/api/v1/test-chats/${chat.id}/messages`,
        headers: { authorization: `Bearer ${accessToken}` },
        payload: { text: line },
      });
      messages++;
      if (reply.statusCode === 409) break; // the agent ended the chat (goodbye), as it ends a scenario
    }
  }
  const chatS = (performance.now() - chatStart) / 1000;

  const ok = finished.passed === SCENARIOS && finished.failed === 0;
  process.stdout.write(
    table(
      [
        ['what', 'scenarios / chats', 'contact lines', 'seconds', 'per scenario ms'],
        [
          'suite run (job queue, judged, stored)',
          String(SCENARIOS),
          String(SCENARIOS * LINES),
          fixed(suiteS, 2),
          fixed((suiteS * 1000) / SCENARIOS, 1),
        ],
        [
          'baseline: test chats through the API',
          String(SCENARIOS),
          String(messages),
          fixed(chatS, 2),
          fixed((chatS * 1000) / SCENARIOS, 1),
        ],
      ],
      (column) => column > 0,
    ),
  );
  process.stdout.write(
    `\nRun ${String(finished.status)}: ${String(finished.passed)} passed, ${String(finished.failed)} failed, ${String(finished.skipped)} skipped, cost ${String(finished.costTotal)}.\n` +
      `Goal: ${SCENARIOS} scenarios in under ${GOAL_S} s: ${suiteS < GOAL_S ? 'met' : 'NOT met'} (${fixed(suiteS, 1)} s; ${fixed(suiteS / chatS, 2)}× the baseline).\n`,
  );
  if (!ok) process.stdout.write('Every scenario should have passed: the figures are of a run that did something else.\n');
  return ok && suiteS < GOAL_S ? 0 : 1;
}

await runBench(() => run(process.env.DATABASE_URL));
