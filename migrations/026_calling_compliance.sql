-- Who may be called, and when: a contact's own time zone, per-campaign choices, the tenant's
-- compliance settings and consents.

-- A contact's IANA time zone, when known better than its number tells (null: derived from the number).
ALTER TABLE contacts ADD COLUMN timezone text;

-- The campaign's copy of it, and why a PENDING contact is waiting (outside_window, frequency_cap;
-- null: due, or waiting for its redial delay). The dialer writes a compliance record only when
-- this changes, never once per tick for the same waiting contact.
ALTER TABLE campaign_contacts ADD COLUMN timezone text;
ALTER TABLE campaign_contacts ADD COLUMN wait_reason text;

-- CAMPAIGN: the window is read in the campaign's time zone; CONTACT: in each contact's own.
ALTER TABLE campaigns ADD COLUMN window_time_zone text NOT NULL DEFAULT 'CAMPAIGN' CHECK (window_time_zone IN ('CAMPAIGN', 'CONTACT'));
-- Apply the statutory calling rules (src/modules/compliance/calling-rules.ts) and the tenant's own.
ALTER TABLE campaigns ADD COLUMN calling_rules boolean NOT NULL DEFAULT false;
-- Dial only contacts with a valid consent for voice.
ALTER TABLE campaigns ADD COLUMN require_consent boolean NOT NULL DEFAULT false;

-- The tenant's compliance settings: defaults for new campaigns, frequency caps per person, own rules.
CREATE TABLE compliance_settings (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  window_time_zone text NOT NULL DEFAULT 'CAMPAIGN' CHECK (window_time_zone IN ('CAMPAIGN', 'CONTACT')),
  calling_rules boolean NOT NULL DEFAULT false,
  require_consent boolean NOT NULL DEFAULT false,
  -- At most this many calls to one number in 24 hours / 7 days, across all campaigns (null: no cap).
  max_calls_per_day integer,
  max_calls_per_week integer,
  -- The tenant's own calling rules, in the shape of the statutory ones.
  custom_rules jsonb NOT NULL DEFAULT '[]',
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A person's consent to be contacted on a channel: where it came from, what shows it, until when.
CREATE TABLE consents (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  phone_number text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('voice', 'sms', 'whatsapp')),
  source text NOT NULL,
  evidence jsonb NOT NULL DEFAULT '{}',
  granted_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX consents_number_idx ON consents (tenant_id, phone_number, channel);

-- The frequency caps count a number's placed calls over the last days.
CREATE INDEX calls_to_number_idx ON calls (tenant_id, to_number, started_at) WHERE direction = 'OUTGOING';
