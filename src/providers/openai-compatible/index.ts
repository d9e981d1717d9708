import { Type } from '@sinclair/typebox';
import { Credential, PATTERN_MESSAGE } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { createChatModel } from './chat-model.ts';
import { openRealtime } from './realtime.ts';
import { createSpeaker, createTranscriber } from './speech.ts';

/**
 * Every server that speaks OpenAI's Chat Completions (OpenAI, Azure OpenAI, Groq, Together,
 * Mistral, vLLM, Ollama, LM Studio, llama.cpp's server, LiteLLM): one adapter, through the vendor's SDK.
 * The same servers' speech endpoints (`/audio/transcriptions`, `/audio/speech`: OpenAI, Groq,
 * LocalAI, Speaches) are its speech-to-text and text-to-speech.
 */
export const openaiCompatible: Provider = {
  name: 'OPENAI_COMPATIBLE',
  title: 'OpenAI-compatible',
  integration: {
    kind: 'llm',
    body: Type.Object(
      {
        apiUrl: Type.String({
          pattern: '^https?://',
          [PATTERN_MESSAGE]: 'an http or https URL',
          maxLength: 2000,
          description:
            "Your model server's API base URL, up to /v1 (https://api.openai.com/v1, https://api.groq.com/openai/v1…); a public address.",
        }),
        apiKey: Type.Optional(
          Credential({ minLength: 1, maxLength: 500, description: 'Its bearer key; stored encrypted, never returned.' }),
        ),
      },
      { additionalProperties: false },
    ),
    secrets: ['apiKey'],
    summary: "Connect your own OpenAI-compatible model server: your agents converse through it instead of the service's",
  },
  llm: { connect: createChatModel },
  realtime: { connect: openRealtime },
  stt: { connect: createTranscriber },
  tts: { connect: createSpeaker },
};
