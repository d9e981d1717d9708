/**
 * `callforge test`: a test suite run on a running server through its API, as CI runs it. It asks
 * for the run (POST /test-suites/{id}/runs), polls GET /test-suite-runs/{id} until the run has
 * finished, and says each scenario's verdict as it comes.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestSuite, TestSuiteRunDetail } from '../modules/suites/schemas.ts';
import { RemoteError } from './args.ts';

/** How often the run is asked for while it runs. */
const POLL_MS = 500;

export interface TestCommand {
  suite: string;
  agentVersion?: number;
  /** Through the voice pipeline. */
  voice?: boolean;
  url: string;
  key: string;
  timeout: number;
}

async function api<T>(command: TestCommand, method: 'GET' | 'POST', path: string): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${command.url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${command.key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
  } catch (error) {
    throw new RemoteError(
      'SERVER_UNREACHABLE',
      `Nothing answers at ${command.url}: ${error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error)}.`,
    );
  }
  const body = (await response.json().catch(() => null)) as (T & { code?: string; message?: string }) | null;
  if (!response.ok || body === null) {
    throw new RemoteError(
      body?.code ?? 'HTTP_ERROR',
      `${method} ${path} answered ${response.status}: ${body?.message ?? response.statusText}`,
    );
  }
  return body;
}

const mark = { passed: 'PASS', failed: 'FAIL', skipped: 'SKIP' } as const;

export async function runSuiteOnServer(command: TestCommand, say: (line: string) => void) {
  const suite = await api<TestSuite>(command, 'GET', `/test-suites/${command.suite}`);
  const params = new URLSearchParams({
    ...(command.agentVersion === undefined ? {} : { version: String(command.agentVersion) }),
    ...(command.voice ? { voice: 'true' } : {}),
  });
  const query = params.size ? `?${params}` : '';
  const started = await api<{ id: string }>(command, 'POST', `/test-suites/${command.suite}/runs${query}`);
  say(
    `Running "${suite.name}" (${suite.scenarios.length} scenarios${command.voice ? ', through the voice pipeline' : ''}), run ${started.id}`,
  );
  // A wait, not a time of day: the monotonic clock, which no change of the system's time moves.
  const deadline = performance.now() + command.timeout * 1000;
  // Scenarios finish in any order (a few run at once): each is told once, as it comes.
  const told = new Set<number>();
  for (;;) {
    const run = await api<TestSuiteRunDetail>(command, 'GET', `/test-suite-runs/${started.id}`);
    for (const result of run.results.filter((result) => !told.has(result.index))) {
      told.add(result.index);
      const failed = result.assertions.filter((verdict) => verdict.verdict === 'failed');
      const why = result.reason ?? failed.map((verdict) => `${verdict.assertion.type}: ${verdict.why}`).join(' ');
      say(`${mark[result.status]} ${result.name}${why ? ` — ${why}` : ''}`);
    }
    if (run.status === 'PASSED' || run.status === 'FAILED') return { suiteName: suite.name, run };
    if (performance.now() > deadline)
      throw new RemoteError(
        'TIMEOUT',
        `Run ${run.id} had not finished after ${command.timeout} s (${run.results.length} of ${run.scenarios} scenarios ran).`,
      );
    await sleep(POLL_MS);
  }
}
