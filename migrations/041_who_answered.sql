-- Who answered a dialled call joins the chain of dial decisions as a record of its own ('answered',
-- its reason the call's answeredBy): records are never changed, so it is appended after the dial's.
ALTER TABLE compliance_records DROP CONSTRAINT compliance_records_verdict_check;
ALTER TABLE compliance_records ADD CONSTRAINT compliance_records_verdict_check CHECK (verdict IN ('dial', 'skip', 'wait', 'answered'));

-- A call's own hearing adds a call-screening assistant and a phone menu to who answered.
ALTER TABLE calls DROP CONSTRAINT calls_answered_by_check;
ALTER TABLE calls ADD CONSTRAINT calls_answered_by_check
  CHECK (answered_by IN ('human', 'machine', 'fax', 'unknown', 'call_screening', 'phone_menu'));
