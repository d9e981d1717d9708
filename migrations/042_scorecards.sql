-- Scorecards (issue 41, item 5): the checks a tenant holds every ended call to, and each call's
-- verdicts. A call's scorecard is sealed into the tenant's compliance chain as a 'scored' record.
CREATE TABLE scorecards (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  -- [{ name, assertion }], validated by the API's schema (the assertions of test suites).
  checks jsonb NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE call_scorecards (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- No foreign key: the calls table is another module's; a scorecard is written once per call.
  call_id uuid NOT NULL,
  agent_id uuid,
  campaign_id uuid,
  passed boolean NOT NULL,
  -- [{ name, assertion, verdict, why, reasoning? }]
  checks jsonb NOT NULL,
  -- What the model's judging cost (rubrics, fields), debited with the scorecard.
  cost_total numeric(12, 4) NOT NULL DEFAULT 0,
  scored_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, call_id)
);
CREATE INDEX call_scorecards_scored_idx ON call_scorecards (tenant_id, scored_at DESC, call_id);

ALTER TABLE compliance_records DROP CONSTRAINT compliance_records_verdict_check;
ALTER TABLE compliance_records ADD CONSTRAINT compliance_records_verdict_check
  CHECK (verdict IN ('dial', 'skip', 'wait', 'answered', 'scored'));
