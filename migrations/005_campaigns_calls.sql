-- Voice campaigns, their per-contact dial state, calls, and the per-number dialling pace
-- (seed §2.4, §3, §4.3, §4.7; contract §3, §5, §8).

CREATE TABLE campaigns (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  name text NOT NULL,
  description text,
  agent_id uuid,
  voice_number_id uuid,
  contact_list_id uuid,
  status text NOT NULL CHECK (status IN ('DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED')),
  status_reason text,
  scheduled_at timestamptz,
  timezone text NOT NULL,
  call_window_start text NOT NULL,
  call_window_end text NOT NULL,
  call_days integer[] NOT NULL,
  dial_timeout integer NOT NULL,
  max_attempts integer NOT NULL,
  redial_delay_min integer NOT NULL,
  max_concurrent_calls integer NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- A finished campaign keeps its history when its agent, number or list is deleted later; the
  -- services refuse those deletions while an unfinished campaign uses them.
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE SET NULL (agent_id),
  FOREIGN KEY (tenant_id, voice_number_id) REFERENCES voice_numbers (tenant_id, id) ON DELETE SET NULL (voice_number_id),
  FOREIGN KEY (tenant_id, contact_list_id) REFERENCES contact_lists (tenant_id, id) ON DELETE SET NULL (contact_list_id)
);
CREATE UNIQUE INDEX campaigns_name_key ON campaigns (tenant_id, lower(name));
CREATE INDEX campaigns_created_idx ON campaigns (tenant_id, created_at DESC, id DESC);
CREATE INDEX campaigns_agent_idx ON campaigns (tenant_id, agent_id);
CREATE INDEX campaigns_list_idx ON campaigns (tenant_id, contact_list_id);
CREATE INDEX campaigns_number_idx ON campaigns (tenant_id, voice_number_id);
-- What the dialer looks at on every tick: few rows, across tenants.
CREATE INDEX campaigns_active_idx ON campaigns (status, scheduled_at) WHERE status IN ('SCHEDULED', 'RUNNING');

-- The contacts a campaign dials, copied from its list when it starts (contract §5).
CREATE TABLE campaign_contacts (
  tenant_id uuid NOT NULL,
  campaign_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  position integer NOT NULL,
  phone_number text NOT NULL,
  name text,
  email text,
  metadata jsonb NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'IN_PROGRESS', 'ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED')),
  attempts integer NOT NULL DEFAULT 0,
  last_outcome text,
  last_call_id uuid,
  next_attempt_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, campaign_id, contact_id),
  FOREIGN KEY (tenant_id, campaign_id) REFERENCES campaigns (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX campaign_contacts_page_idx ON campaign_contacts (tenant_id, campaign_id, position);
-- The dialer's claim walks this in order (next attempt, then list order) and stops at its limit.
CREATE INDEX campaign_contacts_due_idx ON campaign_contacts (campaign_id, next_attempt_at, position) WHERE status = 'PENDING';
CREATE INDEX campaign_contacts_live_idx ON campaign_contacts (campaign_id) WHERE status = 'IN_PROGRESS';

CREATE TABLE calls (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  agent_id uuid,
  campaign_id uuid,
  contact_id uuid,
  voice_number_id uuid,
  direction text NOT NULL CHECK (direction IN ('OUTGOING', 'INCOMING')),
  from_number text NOT NULL,
  to_number text NOT NULL,
  attempt integer NOT NULL DEFAULT 1,
  status text NOT NULL CHECK (status IN ('QUEUED', 'RINGING', 'IN_PROGRESS', 'ENDED')),
  outcome text CHECK (outcome IN ('ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED')),
  failure_reason text,
  permanent_failure boolean NOT NULL DEFAULT false,
  provider text NOT NULL,
  provider_call_id text,
  dial_timeout integer NOT NULL DEFAULT 30,
  -- When the call must move on by itself: the simulator's next step, or the moment a call that
  -- its provider never confirmed is given up as FAILED.
  deadline_at timestamptz,
  started_at timestamptz NOT NULL DEFAULT now(),
  answered_at timestamptz,
  ended_at timestamptz,
  duration_sec integer,
  transcript jsonb NOT NULL DEFAULT '[]',
  recording_url text,
  usage jsonb,
  cost jsonb,
  cost_total numeric(20, 4),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX calls_created_idx ON calls (tenant_id, created_at DESC, id DESC);
CREATE INDEX calls_agent_idx ON calls (tenant_id, agent_id, created_at DESC);
CREATE INDEX calls_campaign_idx ON calls (tenant_id, campaign_id, created_at DESC);
CREATE INDEX calls_contact_idx ON calls (tenant_id, contact_id, created_at DESC);
CREATE UNIQUE INDEX calls_provider_idx ON calls (provider, provider_call_id);
CREATE INDEX calls_due_idx ON calls (deadline_at) WHERE status <> 'ENDED';

-- Calls-per-second pace of each voice number, shared by every worker (a virtual-time bucket).
CREATE TABLE dial_pace (
  tenant_id uuid NOT NULL,
  voice_number_id uuid NOT NULL,
  next_dial_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, voice_number_id)
);
