-- Mid-call failover: an agent may name a backup model, speech-to-text and text-to-speech
-- ({ llm, stt, tts }, each null when none); null: no backup.
ALTER TABLE agents ADD COLUMN backup jsonb;
