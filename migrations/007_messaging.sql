-- Post-call WhatsApp and SMS campaigns (seed §2.5, §2.6, §4.1, §4.2; contract §6).

-- A campaign's template mappings are one JSON array: read together after every call, and replaced
-- wholesale by an update (seed §4.1), so a join table would only add statements.
CREATE TABLE whatsapp_campaigns (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  agent_id uuid NOT NULL,
  name text NOT NULL,
  phone_number_id text,
  is_active boolean NOT NULL DEFAULT true,
  templates jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
-- Seed §8: one WhatsApp campaign per agent.
CREATE UNIQUE INDEX whatsapp_campaigns_agent_key ON whatsapp_campaigns (tenant_id, agent_id);
CREATE INDEX whatsapp_campaigns_created_idx ON whatsapp_campaigns (tenant_id, created_at DESC, id DESC);

CREATE TABLE sms_campaigns (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  agent_id uuid NOT NULL,
  name text NOT NULL,
  sender_number text NOT NULL,
  sender_provider text NOT NULL,
  is_active boolean NOT NULL DEFAULT true,
  templates jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
-- Contract §6: one SMS campaign per agent.
CREATE UNIQUE INDEX sms_campaigns_agent_key ON sms_campaigns (tenant_id, agent_id);
CREATE INDEX sms_campaigns_created_idx ON sms_campaigns (tenant_id, created_at DESC, id DESC);

-- The verification token of a tenant's WhatsApp webhook subscription (seed §4.1).
CREATE TABLE whatsapp_webhook_tokens (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  token text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Every post-call message, from the moment it is decided until its last delivery status.
CREATE TABLE messages (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  channel text NOT NULL CHECK (channel IN ('WHATSAPP', 'SMS')),
  call_id uuid NOT NULL,
  agent_id uuid,
  campaign_id uuid,
  contact_id uuid,
  to_number text NOT NULL,
  sender text,
  provider text NOT NULL,
  template_name text,
  language_code text,
  body text,
  parameters jsonb NOT NULL DEFAULT '[]',
  dlt_sender_id text,
  dlt_template_id text,
  encoding text,
  segments integer,
  -- QUEUED: decided, not yet handed to the provider; SENDING: handed over, answer not recorded;
  -- then SENT, DELIVERED, READ as the provider reports, or FAILED with failure_reason.
  status text NOT NULL CHECK (status IN ('QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'READ', 'FAILED')),
  provider_message_id text,
  failure_reason text,
  attempts integer NOT NULL DEFAULT 0,
  sent_at timestamptz,
  delivered_at timestamptz,
  read_at timestamptz,
  failed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- Contract §6: at most one message per channel per call, whatever retries and restarts do.
CREATE UNIQUE INDEX messages_call_channel_key ON messages (tenant_id, call_id, channel);
CREATE INDEX messages_created_idx ON messages (tenant_id, created_at DESC, id DESC);
CREATE INDEX messages_channel_idx ON messages (tenant_id, channel, created_at DESC, id DESC);
-- Delivery callbacks name the provider's message id.
CREATE INDEX messages_provider_idx ON messages (provider, provider_message_id) WHERE provider_message_id IS NOT NULL;

-- WhatsApp webhook deliveries name the business account; they lead to the tenant that connected it.
CREATE INDEX integrations_whatsapp_account_idx ON integrations ((settings ->> 'businessAccountId')) WHERE kind = 'whatsapp';
