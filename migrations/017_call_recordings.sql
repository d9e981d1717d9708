-- Call recordings (issue 17, recording): the line's audio, the caller on the left channel and the
-- agent on the right, kept for the agent's retention and then deleted.

-- An agent's setting: {enabled, retentionDays}; off unless the tenant turns it on.
ALTER TABLE agents ADD COLUMN recording jsonb NOT NULL DEFAULT '{"enabled": false, "retentionDays": 30}';

-- One recording per call: the format of its audio (the line's), how many frames (a sample of each
-- channel) its chunks hold so far, and when it is deleted.
CREATE TABLE call_recordings (
  tenant_id uuid NOT NULL,
  call_id uuid NOT NULL,
  encoding text NOT NULL CHECK (encoding IN ('mulaw', 'pcm16')),
  sample_rate integer NOT NULL CHECK (sample_rate > 0),
  frames bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, call_id),
  FOREIGN KEY (tenant_id, call_id) REFERENCES calls (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX call_recordings_expiry_idx ON call_recordings (expires_at);

-- The audio, written as the call goes in chunks of a fixed stretch of line time: both channels
-- interleaved, in the recording's encoding. Deleted with its recording.
CREATE TABLE call_recording_chunks (
  tenant_id uuid NOT NULL,
  call_id uuid NOT NULL,
  seq integer NOT NULL CHECK (seq >= 0),
  audio bytea NOT NULL,
  PRIMARY KEY (tenant_id, call_id, seq),
  FOREIGN KEY (tenant_id, call_id) REFERENCES call_recordings (tenant_id, call_id) ON DELETE CASCADE
);
