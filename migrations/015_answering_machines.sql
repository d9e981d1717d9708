-- Answering machines (issue: Twilio asynchronous AMD and a per-campaign policy).

-- A voice campaign's policy, null when it does not ask who answers:
-- {detect, onMachine: HANG_UP_AND_RETRY | LEAVE_VOICEMAIL, voicemailMessage?}.
ALTER TABLE campaigns ADD COLUMN answering_machine jsonb;

-- Whether the call's dial asked who answers, and the verdict (null while none came, or when
-- detection did not run).
ALTER TABLE calls
  ADD COLUMN machine_detection boolean NOT NULL DEFAULT false,
  ADD COLUMN answered_by text CHECK (answered_by IN ('human', 'machine', 'fax', 'unknown'));
