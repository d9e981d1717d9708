-- How many chunks of a knowledge base hold each word (a lexeme of the chunks' full-text vectors):
-- the document frequencies that weight a query's rare words above its common ones, as BM25 does.
-- Kept with the chunks, in the same transaction, by the knowledge module.
CREATE TABLE knowledge_terms (
  tenant_id uuid NOT NULL,
  knowledge_base_id uuid NOT NULL,
  term text NOT NULL,
  chunks integer NOT NULL CHECK (chunks > 0),
  PRIMARY KEY (tenant_id, knowledge_base_id, term),
  FOREIGN KEY (tenant_id, knowledge_base_id) REFERENCES knowledge_bases (tenant_id, id) ON DELETE CASCADE
);

INSERT INTO knowledge_terms (tenant_id, knowledge_base_id, term, chunks)
SELECT c.tenant_id, c.knowledge_base_id, u.lexeme, count(*)
FROM knowledge_chunks c, unnest(c.search) AS u
GROUP BY c.tenant_id, c.knowledge_base_id, u.lexeme;
