-- Failed attempts counted in fixed windows (failed sign-ins per account and per address, requests
-- with an invalid API key per address), shared by every API process. A row is one counter: its
-- key names what is counted ("login-account:<sha256 of the e-mail>", "login-address:<ip>",
-- "api-key-address:<ip>"); the window starts at the first failure and lasts the configured time.
-- Rows whose window has passed are deleted as new failures arrive.
CREATE TABLE auth_failures (
  key text PRIMARY KEY,
  failures integer NOT NULL CHECK (failures > 0),
  window_started_at timestamptz NOT NULL
);
CREATE INDEX auth_failures_window_started_at ON auth_failures (window_started_at);

-- Changing a password ends the user's other sessions: a session carries the version it was
-- issued under (0 for sessions older than this column) and is honoured while it matches, or
-- while it is the very session that changed the password (kept_session_id, its `jti`).
ALTER TABLE users
  ADD COLUMN session_version integer NOT NULL DEFAULT 0,
  ADD COLUMN kept_session_id text;
