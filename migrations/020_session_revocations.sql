-- Dashboard sessions ended before their time (log-out): a session token is a signed JWT checked
-- without the database, so the ones that must no longer work are listed here by their id (the
-- token's jti) until the latest moment the token could still have been valid; then the row is
-- useless and deleted.
CREATE TABLE session_revocations (
  session_id text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX session_revocations_expiry_idx ON session_revocations (expires_at);
