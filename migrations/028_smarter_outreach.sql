-- Smarter outreach on voice campaigns.
-- retry_rules: when each outcome is tried again ({"BUSY": {"afterMinutes": 10}, "FAILED": {"never": true}, …});
--   null: every retryable outcome waits redial_delay_min, as before.
-- post_call_messages: EVERY_ATTEMPT (each ended call may send its follow-up, the default) or
--   FINAL_OUTCOME (only the call that settles the contact does).
-- pre_dial_webhook: {url, timeoutMs, onError} asked before each contact is dialled; null: none.
ALTER TABLE campaigns ADD COLUMN retry_rules jsonb;
ALTER TABLE campaigns ADD COLUMN post_call_messages text NOT NULL DEFAULT 'EVERY_ATTEMPT'
  CHECK (post_call_messages IN ('EVERY_ATTEMPT', 'FINAL_OUTCOME'));
ALTER TABLE campaigns ADD COLUMN pre_dial_webhook jsonb;

-- The pre-dial answer for a contact's next attempt: which attempt it was asked for, and the
-- variables the tenant's server gave for that call.
ALTER TABLE campaign_contacts ADD COLUMN pre_dial_attempt integer;
ALTER TABLE campaign_contacts ADD COLUMN pre_dial_variables jsonb;

-- Caller-ID pool: more numbers beside voice_number_id (which stays the primary, first in the pool).
ALTER TABLE campaigns ADD COLUMN voice_number_ids uuid[];
-- At most this many dials per pool number per local day; null: no cap.
ALTER TABLE campaigns ADD COLUMN caller_id_daily_cap integer;

-- Dials per number and local day (the campaign's time zone), for the per-number daily cap.
CREATE TABLE dial_counts (
  tenant_id uuid NOT NULL,
  voice_number_id uuid NOT NULL,
  day date NOT NULL,
  dials integer NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, voice_number_id, day)
);
