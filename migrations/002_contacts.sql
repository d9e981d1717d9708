-- Contact lists and contacts (seed §2.2, §2.3, §4.4; contract §4).

CREATE TABLE contact_lists (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  name text NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- Names are unique in a tenant regardless of case: "VIP" and "vip" would be confused.
CREATE UNIQUE INDEX contact_lists_name_key ON contact_lists (tenant_id, lower(name));
CREATE INDEX contact_lists_created_idx ON contact_lists (tenant_id, created_at DESC, id DESC);

CREATE TABLE contacts (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  list_id uuid NOT NULL,
  phone_number text NOT NULL,
  name text,
  email text,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, list_id, phone_number),
  FOREIGN KEY (tenant_id, list_id) REFERENCES contact_lists (tenant_id, id) ON DELETE CASCADE
);
-- Pages of a list in insertion order.
CREATE INDEX contacts_list_page_idx ON contacts (tenant_id, list_id, created_at, id);
