-- A tenant's messaging settings. unconfirmed_policy: what becomes of a message whose worker died
-- between recording SENDING and hearing the provider's answer (whether the provider took it is
-- unknown): FAIL marks it FAILED (never a second send; the provider's status callback corrects
-- it when it was sent), RESEND hands it to the provider again (the risk of a duplicate accepted).
-- A tenant without a row has the default, FAIL.
CREATE TABLE messaging_settings (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  unconfirmed_policy text NOT NULL DEFAULT 'FAIL' CHECK (unconfirmed_policy IN ('FAIL', 'RESEND')),
  updated_at timestamptz NOT NULL DEFAULT now()
);
