-- Indexes for the status filters of GET /messages and GET /webhook-deliveries, and the event type
-- filter of the latter.
CREATE INDEX messages_status_idx ON messages (tenant_id, status, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_status_idx ON webhook_deliveries (tenant_id, status, created_at DESC, id DESC);
CREATE INDEX webhook_events_type_idx ON webhook_events (tenant_id, type);
