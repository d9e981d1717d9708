-- Agents and voice numbers (seed §4.7; contract §3).

CREATE TABLE agents (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  name text NOT NULL,
  description text,
  language text NOT NULL DEFAULT 'en-US',
  voice text,
  system_prompt text,
  first_message text,
  -- Checked against the tenant's knowledge bases by the service once the knowledge module exists;
  -- an array rather than a join table because an agent uses a handful and they are read together.
  knowledge_base_ids uuid[] NOT NULL DEFAULT '{}',
  tools text[] NOT NULL DEFAULT '{}',
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- Names are unique in a tenant regardless of case, like contact lists.
CREATE UNIQUE INDEX agents_name_key ON agents (tenant_id, lower(name));
CREATE INDEX agents_created_idx ON agents (tenant_id, created_at DESC, id DESC);

CREATE TABLE voice_numbers (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  phone_number text NOT NULL,
  provider text NOT NULL CHECK (provider IN ('SIMULATOR', 'TWILIO')),
  label text,
  inbound_agent_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- One real number cannot belong to two tenants, and an inbound call arrives with only the
  -- dialled number: the one key of a tenant-owned table that is not led by tenant_id.
  CONSTRAINT voice_numbers_phone_number_key UNIQUE (phone_number),
  -- Deleting the agent leaves the number without an inbound agent; the column list (PostgreSQL 15)
  -- keeps tenant_id, which is part of the primary key, from being nulled too.
  FOREIGN KEY (tenant_id, inbound_agent_id) REFERENCES agents (tenant_id, id) ON DELETE SET NULL (inbound_agent_id)
);
CREATE INDEX voice_numbers_created_idx ON voice_numbers (tenant_id, created_at DESC, id DESC);
-- Deleting an agent finds the numbers whose inbound agent it is without scanning the tenant's numbers.
CREATE INDEX voice_numbers_inbound_agent_idx ON voice_numbers (tenant_id, inbound_agent_id);
