-- The full-text ranking now runs in each process over an index of a base's words read from the
-- chunks' stored full-text vectors (kept until the base's chunk version moves), so the per-base
-- word counts and the GIN index that served the ranking in SQL have no reader left. Dropping them
-- takes their upkeep out of every source's write.
DROP TABLE knowledge_terms;
DROP INDEX knowledge_chunks_search_idx;
