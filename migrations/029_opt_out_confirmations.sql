-- The one confirmation a person gets after opting out by a reply ("You will not be contacted
-- again…"), on the channel the opt-out came from. One row per number and tenant, ever: a second
-- opt-out of the same number finds its row and sends nothing.
CREATE TABLE opt_out_confirmations (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  phone_number text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('WHATSAPP', 'SMS')),
  provider text NOT NULL,
  -- SMS: the tenant's number the opt-out was sent to; WhatsApp: null (the integration's sender).
  sender text,
  body text NOT NULL,
  dlt_sender_id text,
  dlt_template_id text,
  status text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'SENDING', 'SENT', 'FAILED')),
  attempts integer NOT NULL DEFAULT 0,
  provider_message_id text,
  failure_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, phone_number)
);

-- Whether opt-outs by reply are confirmed, and with which words; null text: the default sentence.
ALTER TABLE messaging_settings ADD COLUMN opt_out_confirmation_enabled boolean NOT NULL DEFAULT true;
ALTER TABLE messaging_settings ADD COLUMN opt_out_confirmation_text text;
ALTER TABLE messaging_settings ADD COLUMN opt_out_confirmation_dlt_sender_id text;
ALTER TABLE messaging_settings ADD COLUMN opt_out_confirmation_dlt_template_id text;
