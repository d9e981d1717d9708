-- Webhooks (contract §9): events written in the transaction of the change that causes them, one
-- delivery per subscribed API key, every attempt recorded.

CREATE TABLE webhook_events (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- Sent as `webhook-id`: the same on every attempt and redelivery, for de-duplication.
  id uuid NOT NULL,
  type text NOT NULL,
  agent_id uuid,
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

CREATE TABLE webhook_deliveries (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  event_id uuid NOT NULL,
  api_key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  url text NOT NULL,
  status text NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempts integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, event_id) REFERENCES webhook_events (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (tenant_id, event_id);

CREATE TABLE webhook_attempts (
  tenant_id uuid NOT NULL,
  delivery_id uuid NOT NULL,
  attempt integer NOT NULL,
  at timestamptz NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  PRIMARY KEY (tenant_id, delivery_id, attempt),
  FOREIGN KEY (tenant_id, delivery_id) REFERENCES webhook_deliveries (tenant_id, id) ON DELETE CASCADE
);

-- Keys whose webhooks a tenant's events go to.
CREATE INDEX api_keys_webhook_idx ON api_keys (tenant_id) WHERE webhook_url IS NOT NULL AND revoked_at IS NULL;

-- `wallet.low_balance` fires once per crossing below the threshold: set when it fires, cleared
-- when the balance is back at or above the threshold.
ALTER TABLE wallets ADD COLUMN low_balance_notified boolean NOT NULL DEFAULT false;
