-- Test suites (issue 41, item 2): scenarios an agent is tested against, run through the
-- conversation engine on demand and on every publish, their results kept per version
-- (docs/decisions/0059-test-suites.md).
CREATE TABLE test_suites (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  agent_id uuid NOT NULL,
  name text NOT NULL,
  description text,
  -- Publishing the agent runs the suite against the new version.
  run_on_publish boolean NOT NULL DEFAULT true,
  -- [{ name, contact, script | persona, mocks, assertions }], validated by the API's schema.
  scenarios jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX test_suites_agent_idx ON test_suites (tenant_id, agent_id);

CREATE TABLE test_suite_runs (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  suite_id uuid NOT NULL,
  agent_id uuid NOT NULL,
  -- The version run; null: the agent as it was when the run started (live).
  agent_version integer,
  -- 'manual' (POST /test-suites/{id}/runs) or 'publish' (POST /agents/{id}/versions).
  trigger text NOT NULL,
  -- QUEUED, RUNNING, PASSED, FAILED
  status text NOT NULL,
  -- The suite's scenarios as they were when the run was asked for: results line up with them.
  scenarios jsonb NOT NULL,
  passed integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  skipped integer NOT NULL DEFAULT 0,
  cost_total numeric(14, 4) NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  started_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, suite_id) REFERENCES test_suites (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX test_suite_runs_suite_idx ON test_suite_runs (tenant_id, suite_id, created_at DESC);

-- One row per scenario of a run, written once (a retried run skips the scenarios it has: each is
-- run, and billed, once).
CREATE TABLE test_suite_results (
  tenant_id uuid NOT NULL,
  run_id uuid NOT NULL,
  scenario_index integer NOT NULL,
  name text NOT NULL,
  -- passed, failed, skipped
  status text NOT NULL,
  -- Why a scenario was skipped or could not run; null otherwise.
  reason text,
  -- [{ assertion, verdict, why, reasoning? }]
  assertions jsonb NOT NULL,
  transcript jsonb NOT NULL,
  end_reason text,
  usage jsonb NOT NULL,
  cost jsonb NOT NULL,
  cost_total numeric(14, 4) NOT NULL DEFAULT 0,
  duration_ms integer NOT NULL,
  PRIMARY KEY (tenant_id, run_id, scenario_index),
  FOREIGN KEY (tenant_id, run_id) REFERENCES test_suite_runs (tenant_id, id) ON DELETE CASCADE
);
