-- An agent's speech on a phone line: who turns the caller's words into text (null: the agent cannot
-- listen on a phone line) and who speaks its replies (eSpeak NG, offline, unless it names another),
-- each `{ "provider": …, "model"?: … }`. The voice stays in `voice`, now one of the provider's voices.
ALTER TABLE agents
  ADD COLUMN stt jsonb,
  ADD COLUMN tts jsonb NOT NULL DEFAULT '{"provider": "ESPEAK"}';
