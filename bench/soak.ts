/**
 * Soak: the real service (a child process, started as `npm start` does) fed hostile requests on
 * every route for SOAK_SECONDS, from SOAK_CONCURRENCY workers, with the fuzz test's generator
 * (test/fuzz-requests.ts), while /healthz is asked every second. Prints requests/s, answers by
 * status and the longest /healthz latency; exits 1 on any 5xx (but a provider's 502, see below), an
 * error outside the error shape, a request with no answer, or /healthz silent for over 5 s.
 * See bench/README.md.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { answerProblem, fuzzSeed, fuzzTarget, sampleRequests, UNREACHABLE_PROVIDERS, type FuzzRequest } from '../test/fuzz-requests.ts';
import {
  createKey,
  errorMessage,
  forEachEngine,
  intFromEnv,
  postJson,
  runBench,
  sleep,
  startServer,
  table,
  type Engine,
} from './harness.ts';

const SECONDS = intFromEnv('SOAK_SECONDS', 600, 1);
const CONCURRENCY = intFromEnv('SOAK_CONCURRENCY', 4, 1);
const SEED = fuzzSeed(Date.now() % 1_000_000_000);
// Small batches: generating one blocks this process (and its /healthz timing) for a moment.
const BATCH = 50;
const REQUEST_TIMEOUT_MS = 30_000;
const HEALTH_EVERY_MS = 1_000;
const HEALTH_TIMEOUT_MS = 10_000;
const MAX_HEALTH_GAP_MS = 5_000;
const MAX_PROBLEMS_SHOWN = 10;

interface SoakResult {
  engine: string;
  seconds: number;
  requests: number;
  statuses: Map<number, number>;
  providerErrors: number;
  problems: string[];
  healthChecks: number;
  longestHealthMs: number;
  longestHealthGapMs: number;
}

async function soak(engine: Engine): Promise<SoakResult> {
  const server = await startServer(engine.name, { ...engine.serverEnv, ...UNREACHABLE_PROVIDERS });
  const { base } = server;

  // A tenant's API key, another tenant's session, and the service's routes and resources.
  const key = await createKey(base);
  const signup = await postJson(`${base}/api/v1/auth/signup`, {
    tenantName: 'Soak',
    email: `soak-${randomUUID()}@example.com`,
    password: randomUUID(),
  });
  const { routes, arbitrary } = await fuzzTarget(
    async (method, url, authorization, body) => {
      const answer = await request(`${base}${url}`, {
        method: method as 'GET',
        headers: { ...(authorization ? { authorization } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: answer.statusCode, body: await answer.body.json() };
    },
    key,
    String(signup.accessToken),
  );

  process.stdout.write(
    `\n${engine.name}: ${routes.length} routes, ${CONCURRENCY} workers for ${SECONDS} s, seed ${SEED} (FUZZ_SEED=${SEED} replays the requests)\n`,
  );

  const result: SoakResult = {
    engine: engine.name,
    seconds: 0,
    requests: 0,
    statuses: new Map(),
    providerErrors: 0,
    problems: [],
    healthChecks: 0,
    longestHealthMs: 0,
    longestHealthGapMs: 0,
  };
  const started = Date.now();
  const deadline = started + SECONDS * 1_000;

  // One shared queue of generated requests, refilled a batch at a time from seed, seed+1, …
  let queue: FuzzRequest[] = [];
  let batch = 0;
  const next = (): FuzzRequest => {
    if (queue.length === 0) queue = sampleRequests(arbitrary, SEED + batch++, BATCH);
    return queue.shift()!;
  };

  const send = async (fuzzed: FuzzRequest): Promise<void> => {
    let status: number;
    let body: string;
    let contentType: string | undefined;
    try {
      const answer = await request(`${base}${fuzzed.url}`, {
        method: fuzzed.method as 'GET',
        headers: fuzzed.headers,
        ...(fuzzed.body !== undefined ? { body: fuzzed.body } : {}),
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      });
      status = answer.statusCode;
      contentType = answer.headers['content-type'] as string | undefined;
      body = await answer.body.text();
    } catch (error) {
      // undici refuses some hostile requests itself (a header value it will not send): not the server's doing.
      const code = (error as { code?: string }).code;
      if (code === 'UND_ERR_INVALID_ARG' || code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_ARG_TYPE') return;
      result.problems.push(`${fuzzed.method} ${fuzzed.url.slice(0, 200)}: no answer (${errorMessage(error)})`);
      return;
    }
    result.requests++;
    result.statuses.set(status, (result.statuses.get(status) ?? 0) + 1);
    if (status === 502) result.providerErrors++;
    const problem = answerProblem(status, contentType, body);
    if (problem)
      result.problems.push(
        `${fuzzed.method} ${fuzzed.url.slice(0, 200)} ${JSON.stringify(fuzzed.headers).slice(0, 300)} ${(fuzzed.body ?? '').slice(0, 300)}\n  ${problem}`,
      );
  };

  const worker = async () => {
    while (Date.now() < deadline) await send(next());
  };

  const health = async () => {
    let lastAnswer = Date.now();
    while (Date.now() < deadline) {
      const asked = Date.now();
      try {
        const answer = await request(`${base}/healthz`, { headersTimeout: HEALTH_TIMEOUT_MS, bodyTimeout: HEALTH_TIMEOUT_MS });
        await answer.body.text();
        if (answer.statusCode === 200) {
          const now = Date.now();
          result.healthChecks++;
          result.longestHealthMs = Math.max(result.longestHealthMs, now - asked);
          result.longestHealthGapMs = Math.max(result.longestHealthGapMs, now - lastAnswer);
          lastAnswer = now;
        }
      } catch {
        // counted as a gap when the next answer comes (or at the end)
      }
      await sleep(Math.max(0, HEALTH_EVERY_MS - (Date.now() - asked)));
    }
    result.longestHealthGapMs = Math.max(result.longestHealthGapMs, Date.now() - lastAnswer - HEALTH_EVERY_MS);
  };

  let lastReport = Date.now();
  const progress = async () => {
    while (Date.now() < deadline) {
      await sleep(Math.min(60_000, Math.max(0, deadline - Date.now())));
      if (Date.now() - lastReport >= 59_000) {
        lastReport = Date.now();
        const elapsed = (Date.now() - started) / 1_000;
        process.stdout.write(
          `  ${elapsed.toFixed(0)} s: ${result.requests} requests, ${result.problems.length} problems, longest /healthz ${result.longestHealthMs} ms\n`,
        );
      }
    }
  };

  await Promise.all([...Array.from({ length: CONCURRENCY }, worker), health(), progress()]);
  result.seconds = (Date.now() - started) / 1_000;
  if (result.problems.length > 0 || result.longestHealthGapMs > MAX_HEALTH_GAP_MS)
    process.stderr.write(`\nlast server output:\n${server.output().slice(-4_000)}\n`);
  await server.stop();
  return result;
}

function report(result: SoakResult): boolean {
  const statuses = [...result.statuses].sort(([a], [b]) => a - b);
  process.stdout.write(
    `\n${result.engine}: ${result.requests.toLocaleString('en-US')} requests in ${result.seconds.toFixed(0)} s, ` +
      `${(result.requests / result.seconds).toFixed(1)} requests/s\n` +
      table(
        [['status', 'answers'], ...statuses.map(([status, count]) => [String(status), count.toLocaleString('en-US')])],
        (column) => column === 1,
      ) +
      `\n/healthz: ${result.healthChecks} answers, longest ${result.longestHealthMs} ms, longest gap between answers ${result.longestHealthGapMs} ms` +
      ` (limit ${MAX_HEALTH_GAP_MS} ms)\n` +
      (result.providerErrors > 0
        ? `502 PROVIDER_ERROR (a provider's API is a closed local port on purpose): ${result.providerErrors}\n`
        : ''),
  );
  for (const problem of result.problems.slice(0, MAX_PROBLEMS_SHOWN)) process.stdout.write(`PROBLEM ${problem}\n`);
  if (result.problems.length > MAX_PROBLEMS_SHOWN)
    process.stdout.write(`… and ${result.problems.length - MAX_PROBLEMS_SHOWN} more problems\n`);
  const clean = result.problems.length === 0 && result.longestHealthGapMs <= MAX_HEALTH_GAP_MS;
  process.stdout.write(clean ? 'clean: no 5xx, every error in the error shape, /healthz always answered\n' : 'FAILED\n');
  return clean;
}

await runBench(async () => {
  process.stdout.write(`callforge soak: hostile requests on every route for ${SECONDS} s per engine; node ${process.version}\n`);
  const { failed } = await forEachEngine(soak, report);
  return failed ? 1 : 0;
});
