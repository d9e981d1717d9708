-- The tenant's do-not-call list, checked whenever a campaign dials and before a post-call message.
CREATE TABLE dnc_entries (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  phone_number text NOT NULL,
  -- How the number came onto the list: api (an API client or the dashboard), import (a CSV file),
  -- call (the person asked on a call), sms or whatsapp (an opt-out reply).
  source text NOT NULL CHECK (source IN ('api', 'import', 'call', 'sms', 'whatsapp')),
  reason text,
  -- What shows the person asked: a call id and the transcript turn, a message id.
  evidence jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, phone_number)
);

-- A campaign contact the dialer did not dial, and why (dnc: the number is on the do-not-call list).
ALTER TABLE campaign_contacts DROP CONSTRAINT campaign_contacts_status_check;
ALTER TABLE campaign_contacts
  ADD CONSTRAINT campaign_contacts_status_check CHECK (status IN ('PENDING', 'IN_PROGRESS', 'ANSWERED', 'UNANSWERED', 'BUSY', 'FAILED', 'SKIPPED'));
ALTER TABLE campaign_contacts ADD COLUMN skip_reason text;
