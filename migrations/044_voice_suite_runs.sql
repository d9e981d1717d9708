-- Test suites through the voice pipeline (issue 41, item 2): a run asked with voice=true plays each
-- scenario as a call on an in-process phone line, its caller's words spoken by eSpeak NG and heard
-- by the agent's speech-to-text (docs/decisions/0063-suites-through-the-voice-pipeline.md).
ALTER TABLE test_suite_runs ADD COLUMN voice boolean NOT NULL DEFAULT false;
