-- Analytics (contract §8): the fields each agent extracts, the values extracted per call, and
-- the index the usage and trend reports read ended calls by.
CREATE TABLE analytics_bindings (
  tenant_id uuid NOT NULL,
  agent_id uuid NOT NULL,
  fields jsonb NOT NULL DEFAULT '[]',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, agent_id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE analytics_results (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  call_id uuid NOT NULL,
  agent_id uuid,
  campaign_id uuid,
  contact_id uuid,
  fields jsonb NOT NULL,
  extracted_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, call_id)
);
CREATE INDEX analytics_results_agent_idx ON analytics_results (tenant_id, agent_id, extracted_at DESC);
CREATE INDEX analytics_results_extracted_idx ON analytics_results (tenant_id, extracted_at DESC, id DESC);

CREATE INDEX calls_ended_idx ON calls (tenant_id, ended_at) WHERE status = 'ENDED';
