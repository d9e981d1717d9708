import type { Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['test_suites', 'test_suite_runs', 'test_suite_results', 'scorecards', 'call_scorecards'] as const;

export interface SuiteRow {
  tenant_id: string;
  id: string;
  agent_id: string;
  name: string;
  description: string | null;
  run_on_publish: boolean;
  scenarios: unknown[];
  created_at: Date;
  updated_at: Date;
}

export interface RunRow {
  tenant_id: string;
  id: string;
  suite_id: string;
  agent_id: string;
  agent_version: number | null;
  trigger: string;
  voice: boolean;
  status: string;
  scenarios: unknown[];
  passed: number;
  failed: number;
  skipped: number;
  cost_total: string;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface ResultRow {
  scenario_index: number;
  name: string;
  status: string;
  reason: string | null;
  assertions: unknown[];
  transcript: unknown[];
  end_reason: string | null;
  usage: Record<string, unknown>;
  cost: Record<string, string>;
  cost_total: string;
  duration_ms: number;
}

export async function insertSuite(
  db: Queryable,
  tenantId: string,
  suite: { id: string; agentId: string; name: string; description: string | null; runOnPublish: boolean; scenarios: unknown[]; at: Date },
): Promise<SuiteRow> {
  const { rows } = await db.query<SuiteRow>(
    `INSERT INTO test_suites (tenant_id, id, agent_id, name, description, run_on_publish, scenarios, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
    [tenantId, suite.id, suite.agentId, suite.name, suite.description, suite.runOnPublish, JSON.stringify(suite.scenarios), suite.at],
  );
  return rows[0]!;
}

export async function findSuite(db: Queryable, tenantId: string, id: string): Promise<SuiteRow | undefined> {
  const { rows } = await db.query<SuiteRow>('SELECT * FROM test_suites WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

export function listSuites(db: Queryable, tenantId: string, agentId: string | undefined, page: Page) {
  const where = 'tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2)';
  return selectPage<SuiteRow>(
    db,
    {
      rows: `SELECT * FROM test_suites WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM test_suites WHERE ${where}`,
      params: [tenantId, agentId ?? null],
    },
    page,
  );
}

/** Sets the fields given; undefined leaves a field as it is. */
export async function updateSuite(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: { name?: string; description?: string | null; runOnPublish?: boolean; scenarios?: unknown[]; at: Date },
): Promise<SuiteRow | undefined> {
  const { rows } = await db.query<SuiteRow>(
    `UPDATE test_suites SET name = COALESCE($3, name),
       description = CASE WHEN $4::boolean THEN $5 ELSE description END,
       run_on_publish = COALESCE($6, run_on_publish), scenarios = COALESCE($7::jsonb, scenarios), updated_at = $8
     WHERE tenant_id = $1 AND id = $2 RETURNING *`,
    [
      tenantId,
      id,
      patch.name ?? null,
      patch.description !== undefined,
      patch.description ?? null,
      patch.runOnPublish ?? null,
      patch.scenarios ? JSON.stringify(patch.scenarios) : null,
      patch.at,
    ],
  );
  return rows[0];
}

export async function deleteSuite(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM test_suites WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return (rowCount ?? 0) > 0;
}

/** The agent's suites that run when it publishes a version. */
export async function suitesRunOnPublish(db: Queryable, tenantId: string, agentId: string): Promise<SuiteRow[]> {
  const { rows } = await db.query<SuiteRow>(
    'SELECT * FROM test_suites WHERE tenant_id = $1 AND agent_id = $2 AND run_on_publish ORDER BY created_at, id',
    [tenantId, agentId],
  );
  return rows;
}

export async function insertRun(
  db: Queryable,
  tenantId: string,
  run: {
    id: string;
    suiteId: string;
    agentId: string;
    agentVersion: number | null;
    trigger: string;
    voice: boolean;
    scenarios: unknown[];
    at: Date;
  },
): Promise<RunRow> {
  const { rows } = await db.query<RunRow>(
    `INSERT INTO test_suite_runs (tenant_id, id, suite_id, agent_id, agent_version, trigger, voice, status, scenarios, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'QUEUED', $8, $9) RETURNING *`,
    [tenantId, run.id, run.suiteId, run.agentId, run.agentVersion, run.trigger, run.voice, JSON.stringify(run.scenarios), run.at],
  );
  return rows[0]!;
}

export async function findRun(db: Queryable, tenantId: string, id: string): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>('SELECT * FROM test_suite_runs WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

export function listRuns(db: Queryable, tenantId: string, suiteId: string, page: Page) {
  const where = 'tenant_id = $1 AND suite_id = $2';
  return selectPage<RunRow>(
    db,
    {
      rows: `SELECT * FROM test_suite_runs WHERE ${where} ORDER BY created_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM test_suite_runs WHERE ${where}`,
      params: [tenantId, suiteId],
    },
    page,
  );
}

/** Marks the run started (a retried run keeps its first start); undefined when it has finished already. */
export async function startRun(db: Queryable, tenantId: string, id: string, at: Date): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>(
    `UPDATE test_suite_runs SET status = 'RUNNING', started_at = COALESCE(started_at, $3)
     WHERE tenant_id = $1 AND id = $2 AND status IN ('QUEUED', 'RUNNING') RETURNING *`,
    [tenantId, id, at],
  );
  return rows[0];
}

/** The scenarios of the run that have their result already. */
export async function resultIndexes(db: Queryable, tenantId: string, runId: string): Promise<Set<number>> {
  const { rows } = await db.query<{ scenario_index: number }>(
    'SELECT scenario_index FROM test_suite_results WHERE tenant_id = $1 AND run_id = $2',
    [tenantId, runId],
  );
  return new Set(rows.map((row) => row.scenario_index));
}

/**
 * Stores a scenario's result once and counts it on its run; false when it was stored already
 * (the caller then bills nothing).
 */
export async function insertResult(db: Queryable, tenantId: string, runId: string, result: ResultRow): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO test_suite_results
       (tenant_id, run_id, scenario_index, name, status, reason, assertions, transcript, end_reason, usage, cost, cost_total, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT DO NOTHING RETURNING scenario_index`,
    [
      tenantId,
      runId,
      result.scenario_index,
      result.name,
      result.status,
      result.reason,
      JSON.stringify(result.assertions),
      JSON.stringify(result.transcript),
      result.end_reason,
      JSON.stringify(result.usage),
      JSON.stringify(result.cost),
      result.cost_total,
      result.duration_ms,
    ],
  );
  if (rows.length === 0) return false;
  await db.query(
    `UPDATE test_suite_runs SET passed = passed + $3, failed = failed + $4, skipped = skipped + $5, cost_total = cost_total + $6
     WHERE tenant_id = $1 AND id = $2`,
    [
      tenantId,
      runId,
      Number(result.status === 'passed'),
      Number(result.status === 'failed'),
      Number(result.status === 'skipped'),
      result.cost_total,
    ],
  );
  return true;
}

export async function finishRun(db: Queryable, tenantId: string, id: string, at: Date): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>(
    `UPDATE test_suite_runs SET status = CASE WHEN failed > 0 THEN 'FAILED' ELSE 'PASSED' END, finished_at = $3
     WHERE tenant_id = $1 AND id = $2 AND status = 'RUNNING' RETURNING *`,
    [tenantId, id, at],
  );
  return rows[0];
}

export async function resultsOf(db: Queryable, tenantId: string, runId: string): Promise<ResultRow[]> {
  const { rows } = await db.query<ResultRow>(
    `SELECT scenario_index, name, status, reason, assertions, transcript, end_reason, usage, cost, cost_total, duration_ms
     FROM test_suite_results WHERE tenant_id = $1 AND run_id = $2 ORDER BY scenario_index`,
    [tenantId, runId],
  );
  return rows;
}

/** Per version run (null: live), its finished runs' count and totals, and its latest finished run; newest version first. */
export async function passRates(db: Queryable, tenantId: string, suiteId: string) {
  const { rows } = await db.query<RunRow & { runs: number; all_passed: number; all_failed: number }>(
    `SELECT DISTINCT ON (agent_version) r.*,
       count(*) OVER (PARTITION BY agent_version)::int AS runs,
       sum(passed) OVER (PARTITION BY agent_version)::int AS all_passed,
       sum(failed) OVER (PARTITION BY agent_version)::int AS all_failed
     FROM test_suite_runs r
     WHERE tenant_id = $1 AND suite_id = $2 AND status IN ('PASSED', 'FAILED')
     ORDER BY agent_version DESC NULLS LAST, finished_at DESC, id DESC`,
    [tenantId, suiteId],
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Scorecards

export interface ScorecardRow {
  checks: unknown[];
  updated_at: Date;
}

export interface CallScorecardRow {
  call_id: string;
  agent_id: string | null;
  campaign_id: string | null;
  passed: boolean;
  checks: unknown[];
  cost_total: string;
  scored_at: Date;
}

export async function findScorecard(db: Queryable, tenantId: string): Promise<ScorecardRow | undefined> {
  const { rows } = await db.query<ScorecardRow>('SELECT checks, updated_at FROM scorecards WHERE tenant_id = $1', [tenantId]);
  return rows[0];
}

export async function putScorecard(db: Queryable, tenantId: string, checks: unknown[], at: Date): Promise<ScorecardRow> {
  const { rows } = await db.query<ScorecardRow>(
    `INSERT INTO scorecards (tenant_id, checks, updated_at) VALUES ($1, $2::jsonb, $3)
     ON CONFLICT (tenant_id) DO UPDATE SET checks = EXCLUDED.checks, updated_at = EXCLUDED.updated_at
     RETURNING checks, updated_at`,
    [tenantId, JSON.stringify(checks), at],
  );
  return rows[0]!;
}

/** Stores a call's scorecard once: false when it was scored already (a repeated call.ended). */
export async function insertCallScorecard(db: Queryable, tenantId: string, row: CallScorecardRow): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO call_scorecards (tenant_id, call_id, agent_id, campaign_id, passed, checks, cost_total, scored_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) ON CONFLICT (tenant_id, call_id) DO NOTHING`,
    [tenantId, row.call_id, row.agent_id, row.campaign_id, row.passed, JSON.stringify(row.checks), row.cost_total, row.scored_at],
  );
  return rowCount === 1;
}

export async function callScorecardExists(db: Queryable, tenantId: string, callId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM call_scorecards WHERE tenant_id = $1 AND call_id = $2', [tenantId, callId]);
  return rowCount === 1;
}

export function listCallScorecards(
  db: Queryable,
  tenantId: string,
  filter: { passed?: boolean; campaignId?: string; agentId?: string; callId?: string },
  page: Page,
): Promise<{ rows: CallScorecardRow[]; total: number }> {
  const where = `tenant_id = $1 AND ($2::boolean IS NULL OR passed = $2) AND ($3::uuid IS NULL OR campaign_id = $3)
                 AND ($4::uuid IS NULL OR agent_id = $4) AND ($5::uuid IS NULL OR call_id = $5)`;
  return selectPage<CallScorecardRow>(
    db,
    {
      rows: `SELECT call_id, agent_id, campaign_id, passed, checks, cost_total::text, scored_at FROM call_scorecards
             WHERE ${where} ORDER BY scored_at DESC, call_id DESC`,
      total: `SELECT count(*)::int AS n FROM call_scorecards WHERE ${where}`,
      params: [tenantId, filter.passed ?? null, filter.campaignId ?? null, filter.agentId ?? null, filter.callId ?? null],
    },
    page,
  );
}
