-- Providers come from the service's provider registry, which validates a number's provider when it
-- is registered: adding a provider needs no migration.
ALTER TABLE voice_numbers DROP CONSTRAINT voice_numbers_provider_check;

-- A call keeps the contact it was placed to as it was then, so the calls module never reads the
-- campaigns module's tables (the simulator reads its plan here; the agent's prompt will too).
ALTER TABLE calls ADD COLUMN contact_name text, ADD COLUMN contact_metadata jsonb;
UPDATE calls c SET contact_name = cc.name, contact_metadata = cc.metadata
FROM campaign_contacts cc
WHERE c.status <> 'ENDED' AND cc.tenant_id = c.tenant_id AND cc.campaign_id = c.campaign_id AND cc.contact_id = c.contact_id;
