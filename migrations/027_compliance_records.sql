-- Every dial decision (dialled or not, and why), append-only, each record chained to the tenant's
-- previous one by SHA-256 so any later change shows.
CREATE TABLE compliance_records (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  sequence bigint NOT NULL,
  id uuid NOT NULL,
  -- No foreign key: the record outlives a deleted campaign.
  campaign_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  phone_number text NOT NULL,
  decided_at timestamptz NOT NULL,
  -- dial, skip (final: never dialled by this campaign) or wait (not now: dialled later).
  verdict text NOT NULL CHECK (verdict IN ('dial', 'skip', 'wait')),
  reason text,
  -- What was checked: zones, local times, rules, do-not-call, consent, call counts.
  facts jsonb NOT NULL,
  previous_hash text NOT NULL,
  hash text NOT NULL,
  PRIMARY KEY (tenant_id, sequence)
);
CREATE INDEX compliance_records_campaign_idx ON compliance_records (tenant_id, campaign_id, sequence);

-- The head of each tenant's chain: locked while records are appended, so the chain never forks.
CREATE TABLE compliance_chain_heads (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  sequence bigint NOT NULL DEFAULT 0,
  hash text NOT NULL
);

-- Records are never changed, and removed only with their tenant.
CREATE FUNCTION compliance_records_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'compliance records are append-only';
END;
$$;
CREATE TRIGGER compliance_records_append_only BEFORE UPDATE OR DELETE ON compliance_records
  FOR EACH ROW EXECUTE FUNCTION compliance_records_append_only();
