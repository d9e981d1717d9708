-- Knowledge bases (contract §7): sources keep what they were made from (the text, the file, the
-- URL) so they can be processed again; chunks carry their text, a full-text vector and the
-- embedding (float32, unit length) of the model named beside it. Where pgvector exists, the
-- process adds an `embedding_vector` column with an HNSW index at start (src/modules/knowledge/vector-index.ts).
CREATE TABLE knowledge_bases (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  name text NOT NULL,
  description text,
  -- Bumped with every change to the base's chunks: in-process search caches compare it.
  chunks_version bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, name)
);
CREATE INDEX knowledge_bases_list_idx ON knowledge_bases (tenant_id, created_at DESC, id DESC);

CREATE TABLE knowledge_sources (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  knowledge_base_id uuid NOT NULL,
  source_name text NOT NULL,
  source_type text NOT NULL CHECK (source_type IN ('text', 'url', 'file')),
  status text NOT NULL DEFAULT 'PROCESSING' CHECK (status IN ('PROCESSING', 'READY', 'FAILED')),
  url text,
  file_name text,
  format text,
  content bytea,
  -- A refresh starts a new generation; a job of an older one finds its work outdated.
  generation integer NOT NULL DEFAULT 1,
  chunk_count integer NOT NULL DEFAULT 0,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, knowledge_base_id) REFERENCES knowledge_bases (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX knowledge_sources_list_idx ON knowledge_sources (tenant_id, knowledge_base_id, created_at DESC, id DESC);

CREATE TABLE knowledge_chunks (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  knowledge_base_id uuid NOT NULL,
  source_id uuid NOT NULL,
  position integer NOT NULL,
  text text NOT NULL,
  search tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
  embedding_model text NOT NULL,
  embedding bytea NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, source_id) REFERENCES knowledge_sources (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX knowledge_chunks_base_idx ON knowledge_chunks (tenant_id, knowledge_base_id);
CREATE INDEX knowledge_chunks_source_idx ON knowledge_chunks (tenant_id, source_id);
CREATE INDEX knowledge_chunks_search_idx ON knowledge_chunks USING gin (search);
