-- A tenant's own provider credentials (contract §3): settings in clear, secrets sealed with
-- AES-256-GCM under a key derived from SECRETS_KEY.
CREATE TABLE integrations (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  kind text NOT NULL,
  settings jsonb NOT NULL DEFAULT '{}',
  secrets_sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, kind)
);
