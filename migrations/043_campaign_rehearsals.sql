-- Campaign rehearsals (issue 41, item 4): what a campaign would do over (a sample of) its list,
-- without dialling: each contact's verdict, conversation, follow-up and cost, kept as one report
-- (docs/decisions/0062-campaign-rehearsal.md). A rehearsal writes this row and nothing else.
CREATE TABLE campaign_rehearsals (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  campaign_id uuid NOT NULL,
  -- QUEUED, RUNNING, DONE, FAILED
  status text NOT NULL,
  sample integer NOT NULL,
  -- The instant the verdicts are asked for (the request's `from`, or when it was made).
  from_at timestamptz NOT NULL,
  -- The report, once DONE: { brain, notes, summary, contacts, cost }; the reason, once FAILED.
  report jsonb,
  failure text,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, campaign_id) REFERENCES campaigns (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX campaign_rehearsals_campaign_idx ON campaign_rehearsals (tenant_id, campaign_id, created_at DESC);
