-- A list's contact count is kept on the list, so pages and list views do not count a big list's
-- contacts on every request. Statement-level triggers with transition tables keep it exact for
-- every write path (bulk insert with ON CONFLICT, batch delete, cascade), one UPDATE per statement.

ALTER TABLE contact_lists ADD COLUMN contact_count integer NOT NULL DEFAULT 0;

UPDATE contact_lists l SET contact_count = (SELECT count(*) FROM contacts c WHERE c.tenant_id = l.tenant_id AND c.list_id = l.id);

CREATE FUNCTION contacts_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE contact_lists l SET contact_count = l.contact_count + n.added
  FROM (SELECT tenant_id, list_id, count(*)::int AS added FROM new_contacts GROUP BY tenant_id, list_id) n
  WHERE l.tenant_id = n.tenant_id AND l.id = n.list_id;
  RETURN NULL;
END $$;

CREATE FUNCTION contacts_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE contact_lists l SET contact_count = l.contact_count - o.removed
  FROM (SELECT tenant_id, list_id, count(*)::int AS removed FROM old_contacts GROUP BY tenant_id, list_id) o
  WHERE l.tenant_id = o.tenant_id AND l.id = o.list_id;
  RETURN NULL;
END $$;

CREATE TRIGGER contacts_count_insert AFTER INSERT ON contacts
  REFERENCING NEW TABLE AS new_contacts FOR EACH STATEMENT EXECUTE FUNCTION contacts_count_inserted();
CREATE TRIGGER contacts_count_delete AFTER DELETE ON contacts
  REFERENCING OLD TABLE AS old_contacts FOR EACH STATEMENT EXECUTE FUNCTION contacts_count_deleted();
