-- Agent versions (issue 41): publishing an agent freezes its conversational config as version N,
-- never changed afterwards; a campaign pins a version, or splits its contacts between versions
-- (an experiment). A call, and its analytics result, names the version it ran (null: the agent as
-- it was, live).
CREATE TABLE agent_versions (
  tenant_id uuid NOT NULL,
  agent_id uuid NOT NULL,
  version integer NOT NULL CHECK (version >= 1),
  -- The fields docs/decisions/0058-agent-versions.md lists, as the agent's API shows them.
  config jsonb NOT NULL,
  note text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, agent_id, version),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE campaigns ADD COLUMN agent_version integer;
-- { arms: [{ version, weight }] }
ALTER TABLE campaigns ADD COLUMN experiment jsonb;
-- The version each contact is called with, chosen when the campaign starts (its arm), so every
-- attempt of a contact runs the same version.
ALTER TABLE campaign_contacts ADD COLUMN agent_version integer;
ALTER TABLE calls ADD COLUMN agent_version integer;
ALTER TABLE analytics_results ADD COLUMN agent_version integer;
