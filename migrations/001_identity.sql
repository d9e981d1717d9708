-- Tenants, their people, API keys and wallets (seed §2.1, §2.10, §5; contract §2).

CREATE TABLE tenants (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  slug text NOT NULL UNIQUE,
  status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SUSPENDED')),
  country text,
  currency text NOT NULL DEFAULT 'USD',
  timezone text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  email text NOT NULL,
  name text,
  role text NOT NULL DEFAULT 'OWNER',
  password_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- Login is by e-mail alone, so an address belongs to one user across the platform.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- Looked up by hash before the tenant is known, and platform keys have no tenant:
-- the one table keyed globally rather than by tenant.
CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
  name text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  key_prefix text NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  webhook_url text,
  webhook_secret_sealed text,
  agent_id uuid,
  created_by uuid,
  last_used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at DESC);

CREATE TABLE wallets (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  balance numeric(20, 4) NOT NULL DEFAULT 0,
  currency text NOT NULL,
  low_balance_threshold numeric(20, 4) NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id)
);

CREATE TABLE wallet_transactions (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  wallet_id uuid NOT NULL,
  amount numeric(20, 4) NOT NULL,
  balance_after numeric(20, 4) NOT NULL,
  kind text NOT NULL CHECK (kind IN ('CREDIT', 'DEBIT')),
  reason text NOT NULL,
  reference text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, wallet_id) REFERENCES wallets (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX wallet_transactions_wallet_idx ON wallet_transactions (tenant_id, wallet_id, created_at);

-- Idempotency-Key replay store (contract §1), scoped per caller.
CREATE TABLE idempotency_keys (
  scope text NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status_code integer,
  content_type text,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
