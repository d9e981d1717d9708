-- Speech-to-speech: an agent may converse through a realtime model that hears and speaks itself
-- ({ model, voice, turnDetection }); null keeps the staged pipeline (speech-to-text, model, text-to-speech).
ALTER TABLE agents ADD COLUMN realtime jsonb;
