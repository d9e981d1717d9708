-- The conversation engine (issue 16): what an agent converses with, and what a call records of it.

-- The agent's model (null: the service's LLM_MODEL, or the retrieval agent when none is
-- configured), whether its knowledge is put in context each turn, where transfers go, and the
-- tenant's own HTTP tools (their signing secret sealed, like every provider secret).
ALTER TABLE agents
  ADD COLUMN llm jsonb,
  ADD COLUMN knowledge_in_context boolean NOT NULL DEFAULT false,
  ADD COLUMN transfer_number text,
  ADD COLUMN custom_tools jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN tool_secret_sealed text;

-- Why an answered call ended (the agent ended it, the contact hung up, a model error…), the
-- structured outcomes its tools recorded (an appointment, a payment promise), and the moment a
-- conversation took the call (so a retried job never runs a second conversation on it).
ALTER TABLE calls
  ADD COLUMN end_reason text,
  ADD COLUMN outcomes jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN conversation_started_at timestamptz;

-- One record for every ended call: why its fields are empty when they are, the model's summary,
-- and the conversation's outcome as the engine saw it.
ALTER TABLE analytics_results
  ADD COLUMN status text NOT NULL DEFAULT 'extracted',
  ADD COLUMN summary text,
  ADD COLUMN outcome text;

-- The dashboard's "Talk to this agent": the same engine without a call. The model's messages are
-- kept so the next request continues the conversation (in any API process); `version` guards two
-- messages sent at once.
CREATE TABLE test_chats (
  tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id uuid NOT NULL,
  agent_id uuid NOT NULL,
  -- Who answered ('model:<name>' or 'retrieval-agent'), as it was when the chat last spoke.
  brain text NOT NULL,
  history jsonb NOT NULL,
  transcript jsonb NOT NULL DEFAULT '[]',
  usage jsonb NOT NULL,
  cost jsonb NOT NULL,
  cost_total numeric(14, 4) NOT NULL DEFAULT 0,
  end_reason text,
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX test_chats_agent_idx ON test_chats (tenant_id, agent_id, created_at DESC);

-- Messages an agent sends during a call (send_sms, send_whatsapp): each tool call sends once,
-- however often its step is retried; the post-call follow-ups stay one per channel per call.
ALTER TABLE messages ADD COLUMN tool_call_id text;
DROP INDEX messages_call_channel_key;
CREATE UNIQUE INDEX messages_call_channel_key ON messages (tenant_id, call_id, channel) WHERE tool_call_id IS NULL;
CREATE UNIQUE INDEX messages_tool_call_key ON messages (tenant_id, call_id, tool_call_id) WHERE tool_call_id IS NOT NULL;

-- What every simulated contact of a campaign says when its own metadata has no script.
ALTER TABLE campaigns ADD COLUMN simulator_script text[];
