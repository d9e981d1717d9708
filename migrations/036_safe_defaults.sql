-- Safer defaults.
-- The statutory calling rules are on unless a tenant relaxes them: new campaigns and the tenant's
-- settings default to them. A settings row or an unfinished campaign saved with the old default
-- cannot be told from one that chose false, so both are switched on: the law applied by mistake
-- costs calling time, the law skipped by mistake is a violation. A tenant whose calls are not
-- solicitations (the only calls the statutes govern) relaxes them again, explicitly.
ALTER TABLE campaigns ALTER COLUMN calling_rules SET DEFAULT true;
ALTER TABLE compliance_settings ALTER COLUMN calling_rules SET DEFAULT true;
UPDATE compliance_settings SET calling_rules = true WHERE NOT calling_rules;
UPDATE campaigns SET calling_rules = true WHERE NOT calling_rules AND status IN ('DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED');

-- One follow-up per contact per campaign by default: only the call that settles the contact sends
-- its post-call messages. Existing campaigns keep what they were created with.
ALTER TABLE campaigns ALTER COLUMN post_call_messages SET DEFAULT 'FINAL_OUTCOME';
