/**
 * Test suites (issue 41, item 2): scenarios an agent is tested against, run on the job queue
 * through the conversation engine, on demand (a version, or the agent as it is) and whenever the
 * agent publishes a version; each run keeps every scenario's verdicts, transcript and cost
 * (docs/decisions/0059-test-suites.md).
 */
import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { appError, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import { money } from '../../platform/money.ts';
import type { Page } from '../../platform/pagination.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as identity from '../identity/service.ts';
import * as media from '../media/service.ts';
import * as repo from './repo.ts';
import { resultRow, runScenario } from './runner.ts';
import type {
  CreateTestSuiteBody,
  PassRates,
  Scenario,
  ScenarioResult,
  TestSuite,
  TestSuiteRun,
  TestSuiteRunDetail,
  UpdateTestSuiteBody,
} from './schemas.ts';

export const RUN_TEST_SUITE = 'suites.run';
export interface RunTestSuiteJob {
  tenantId: string;
  runId: string;
}

/**
 * Scenarios of one run that converse at once: a model's replies are waited on side by side, while
 * the retrieval agent's searches share the process's CPU (more at once would only queue).
 */
const SCENARIOS_AT_ONCE = 4;

const suiteNotFound = () => appError('NOT_FOUND', { what: 'Test suite' });
const runNotFound = () => appError('NOT_FOUND', { what: 'Test suite run' });

const toSuite = (row: repo.SuiteRow): TestSuite => ({
  id: row.id,
  agentId: row.agent_id,
  name: row.name,
  description: row.description,
  runOnPublish: row.run_on_publish,
  scenarios: row.scenarios as Scenario[],
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const passRateOf = (passed: number, failed: number) => (passed + failed === 0 ? null : passed / (passed + failed));

const toRun = (row: repo.RunRow): TestSuiteRun => ({
  id: row.id,
  suiteId: row.suite_id,
  agentId: row.agent_id,
  agentVersion: row.agent_version,
  trigger: row.trigger as TestSuiteRun['trigger'],
  voice: row.voice,
  status: row.status as TestSuiteRun['status'],
  scenarios: row.scenarios.length,
  passed: row.passed,
  failed: row.failed,
  skipped: row.skipped,
  passRate: passRateOf(row.passed, row.failed),
  costTotal: money(row.cost_total).toFixed(4),
  createdAt: row.created_at.toISOString(),
  startedAt: row.started_at?.toISOString() ?? null,
  finishedAt: row.finished_at?.toISOString() ?? null,
});

const toResult = (row: repo.ResultRow): ScenarioResult => ({
  index: row.scenario_index,
  name: row.name,
  status: row.status as ScenarioResult['status'],
  reason: row.reason,
  assertions: row.assertions as ScenarioResult['assertions'],
  transcript: row.transcript as ScenarioResult['transcript'],
  endReason: row.end_reason as ScenarioResult['endReason'],
  usage: { ...calls.NO_USAGE, ...row.usage } as ScenarioResult['usage'],
  cost: row.cost as ScenarioResult['cost'],
  durationMs: row.duration_ms,
});

/** What the schema cannot say: one caller per scenario, names unique, one mock per tool. */
function checkScenarios(scenarios: Scenario[]): void {
  const problems: FieldError[] = [];
  scenarios.forEach((scenario, i) => {
    if ((scenario.script === undefined) === (scenario.persona === undefined))
      problems.push({ path: `/scenarios/${i}`, message: 'needs exactly one caller: a script (lines) or a persona (a model plays it)' });
    if (scenarios.findIndex((other) => other.name === scenario.name) !== i)
      problems.push({ path: `/scenarios/${i}/name`, message: `repeats the scenario name "${scenario.name}"` });
    (scenario.mocks ?? []).forEach((mock, m, mocks) => {
      if (mocks.findIndex((other) => other.tool === mock.tool) !== m)
        problems.push({ path: `/scenarios/${i}/mocks/${m}/tool`, message: `repeats the mock of ${mock.tool}` });
    });
  });
  if (problems.length > 0) {
    const first = problems[0]!;
    throw appError(
      'VALIDATION_FAILED.testSuite',
      { problem: `Field '${first.path.slice(1).replaceAll('/', '.')}' ${first.message}.` },
      problems,
    );
  }
}

export async function createSuite(ctx: TenantCtx, body: CreateTestSuiteBody): Promise<TestSuite> {
  checkScenarios(body.scenarios);
  await agents.requireAgent(ctx, body.agentId);
  const row = await repo.insertSuite(ctx.db, ctx.tenantId, {
    id: newId(),
    agentId: body.agentId,
    name: body.name,
    description: body.description ?? null,
    runOnPublish: body.runOnPublish ?? true,
    scenarios: body.scenarios,
    at: ctx.clock.now(),
  });
  return toSuite(row);
}

async function requireSuite(ctx: TenantCtx, id: string): Promise<repo.SuiteRow> {
  const row = await repo.findSuite(ctx.db, ctx.tenantId, id);
  if (!row) throw suiteNotFound();
  return row;
}

export const getSuite = async (ctx: TenantCtx, id: string) => toSuite(await requireSuite(ctx, id));

export async function listSuites(ctx: TenantCtx, agentId: string | undefined, page: Page) {
  const { rows, total } = await repo.listSuites(ctx.db, ctx.tenantId, agentId, page);
  return { data: rows.map(toSuite), total };
}

export async function updateSuite(ctx: TenantCtx, id: string, body: UpdateTestSuiteBody): Promise<TestSuite> {
  if (body.scenarios) checkScenarios(body.scenarios);
  const row = await repo.updateSuite(ctx.db, ctx.tenantId, id, { ...body, at: ctx.clock.now() });
  if (!row) throw suiteNotFound();
  return toSuite(row);
}

export async function deleteSuite(ctx: TenantCtx, id: string): Promise<void> {
  if (!(await repo.deleteSuite(ctx.db, ctx.tenantId, id))) throw suiteNotFound();
}

/** Queues a run of the suite in the caller's transaction: the run exists if and only if its job does. */
async function queueRun(
  ctx: TenantCtx,
  suite: repo.SuiteRow,
  agentVersion: number | null,
  trigger: TestSuiteRun['trigger'],
  voice = false,
) {
  const run = await repo.insertRun(ctx.db, ctx.tenantId, {
    id: newId(),
    suiteId: suite.id,
    agentId: suite.agent_id,
    agentVersion,
    trigger,
    voice,
    scenarios: suite.scenarios,
    at: ctx.clock.now(),
  });
  await ctx.jobs.send<RunTestSuiteJob>(RUN_TEST_SUITE, { tenantId: ctx.tenantId, runId: run.id }, { tx: ctx.db });
  return run;
}

/**
 * Runs the suite against `version` of its agent (undefined: the agent as it is when the run starts),
 * on the job queue; as text, or through the voice pipeline (`voice`), which the agent must be able
 * to hear on (refused now, not found out scenario by scenario).
 */
export async function startRun(ctx: TenantCtx, suiteId: string, query: { version?: number; voice?: boolean }): Promise<TestSuiteRun> {
  const suite = await requireSuite(ctx, suiteId);
  const { version, voice = false } = query;
  if (version !== undefined) await agents.requireVersion(ctx, suite.agent_id, version);
  if (voice) {
    const agent = await agents.agentOfCall(ctx, { agent_id: suite.agent_id, agent_version: version ?? null });
    const refusal = agent && media.voiceTestRefusal(agent);
    if (refusal) throw refusal;
  }
  return toRun(await withTransaction(ctx, (txCtx) => queueRun(txCtx, suite, version ?? null, 'manual', voice)));
}

/** Publishing a version runs the agent's suites against it: called in the publishing transaction. */
export async function runSuitesOnPublish(txCtx: TenantCtx, agentId: string, version: number): Promise<void> {
  for (const suite of await repo.suitesRunOnPublish(txCtx.db, txCtx.tenantId, agentId)) await queueRun(txCtx, suite, version, 'publish');
}

export async function getRun(ctx: TenantCtx, id: string): Promise<TestSuiteRunDetail> {
  const row = await repo.findRun(ctx.db, ctx.tenantId, id);
  if (!row) throw runNotFound();
  return { ...toRun(row), results: (await repo.resultsOf(ctx.db, ctx.tenantId, id)).map(toResult) };
}

export async function listRuns(ctx: TenantCtx, suiteId: string, page: Page) {
  await requireSuite(ctx, suiteId);
  const { rows, total } = await repo.listRuns(ctx.db, ctx.tenantId, suiteId, page);
  return { data: rows.map(toRun), total };
}

export async function passRates(ctx: TenantCtx, suiteId: string): Promise<PassRates> {
  await requireSuite(ctx, suiteId);
  const rows = await repo.passRates(ctx.db, ctx.tenantId, suiteId);
  return {
    suiteId,
    versions: rows.map((row) => ({
      agentVersion: row.agent_version,
      runs: row.runs,
      passRate: passRateOf(row.all_passed, row.all_failed),
      latest: toRun(row),
    })),
  };
}

/** Retries of a run's job: on its last attempt (retryCount at this limit) a scenario that throws is stored as failed, not thrown. */
const RUN_RETRY_LIMIT = 3;

/**
 * A scenario that threw on every attempt of its run, as its result: failed with why, no transcript
 * and nothing billed, so that the run finishes (FAILED) instead of staying RUNNING, polled for ever.
 */
function notRunResult(ctx: TenantCtx, index: number, scenario: Scenario, error: unknown): repo.ResultRow {
  const reason = error instanceof Error ? error.message : String(error);
  return resultRow(ctx, index, scenario, {
    status: 'failed',
    reason: `could not run: it failed on each of the run's ${RUN_RETRY_LIMIT + 1} attempts (${reason}); nothing was billed for it, and you may run the suite again.`,
    assertions: [],
    transcript: [],
    endReason: null,
    usage: calls.NO_USAGE,
    durationMs: 0,
  });
}

/**
 * The run's job: every scenario not yet run is run (a few at once), stored and billed in one
 * transaction each, so a retried job runs and bills each scenario once; then the run is finished.
 * A scenario that throws is retried with the job; on its last attempt it is that scenario's failure.
 */
export async function runSuite(deps: Deps, job: RunTestSuiteJob, meta: { retryCount: number }): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const run = await repo.startRun(ctx.db, ctx.tenantId, job.runId, ctx.clock.now());
  if (!run) return;
  const agent = await agents.agentOfCall(ctx, { agent_id: run.agent_id, agent_version: run.agent_version });
  // The agent was deleted meanwhile: its suites and their runs went with it.
  if (!agent) return;
  const timezone = (await identity.tenantTimezone(ctx)) ?? 'UTC';
  const done = await repo.resultIndexes(ctx.db, ctx.tenantId, run.id);
  const scenarios = run.scenarios as Scenario[];
  const pending = scenarios.map((_, index) => index).filter((index) => !done.has(index));
  const next = () => pending.shift();
  const store = (result: repo.ResultRow) =>
    withTransaction(ctx, async (txCtx) => {
      const stored = await repo.insertResult(txCtx.db, ctx.tenantId, run.id, result);
      const cost = money(result.cost_total);
      if (stored && cost.greaterThan(0)) await identity.debitWallet(txCtx.db, ctx.tenantId, cost, `Test suite run ${run.id}`, run.id);
    });
  const worker = async () => {
    for (let index = next(); index !== undefined; index = next()) {
      const scenario = scenarios[index]!;
      try {
        await store(await runScenario(deps, ctx, { agent, runId: run.id, index, scenario, timezone, voice: run.voice }));
      } catch (error) {
        if (meta.retryCount < RUN_RETRY_LIMIT) throw error;
        // The earlier attempts' errors were logged with their stack by the job queue; this one is not thrown to it.
        deps.log.warn(
          { tenantId: ctx.tenantId, runId: run.id, scenario: index, err: error },
          `test suite run ${run.id}: scenario ${index} failed on its last attempt`,
        );
        await store(notRunResult(ctx, index, scenario, error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(SCENARIOS_AT_ONCE, pending.length) }, worker));
  await repo.finishRun(ctx.db, ctx.tenantId, run.id, ctx.clock.now());
}

export const runTestSuiteJob = (deps: Deps): JobDefinition<RunTestSuiteJob> => ({
  name: RUN_TEST_SUITE,
  retryLimit: RUN_RETRY_LIMIT,
  // 200 scenarios with a slow model take a while; the lease is renewed while the run lives.
  expireInSeconds: 3600,
  batchSize: 1,
  handle: (data, meta) => runSuite(deps, data, meta),
});
