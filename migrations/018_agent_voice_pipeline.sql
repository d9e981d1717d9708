-- How an agent's Twilio calls are voiced: MEDIA_STREAM (the call's audio streams to callforge, whose
-- speech-to-text and voice run) or CONVERSATION_RELAY (Twilio's ConversationRelay listens and
-- speaks; only text travels). Every existing agent keeps the media stream.
ALTER TABLE agents
  ADD COLUMN voice_pipeline text NOT NULL DEFAULT 'MEDIA_STREAM'
    CHECK (voice_pipeline IN ('MEDIA_STREAM', 'CONVERSATION_RELAY'));
