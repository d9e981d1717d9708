-- Inbound calls on a provider's line (issue: inbound calls answered through the media stream).

-- An incoming call looks its caller up by number among all of the tenant's lists.
CREATE INDEX contacts_phone_idx ON contacts (tenant_id, phone_number, updated_at DESC);
