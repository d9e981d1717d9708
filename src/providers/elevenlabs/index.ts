import { Type } from '@sinclair/typebox';
import { ApiOrigin } from '../../platform/settings.ts';
import { Credential } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { createElevenLabsTts, ELEVENLABS_DEFAULT_URL } from './text-to-speech.ts';

/** ElevenLabs: streaming text-to-speech for calls (the agent's voice) and its voice library. */
export const elevenlabs: Provider = {
  name: 'ELEVENLABS',
  title: 'ElevenLabs',
  integration: {
    kind: 'elevenlabs',
    body: Type.Object(
      {
        apiKey: Credential({ minLength: 16, maxLength: 200, description: 'An ElevenLabs API key; stored encrypted, never returned.' }),
      },
      { additionalProperties: false },
    ),
    secrets: ['apiKey'],
    summary: "Connect your ElevenLabs account: your agents speak with its voices (yours too) instead of the service's",
  },
  settings: {
    ELEVENLABS_API_URL: ApiOrigin(ELEVENLABS_DEFAULT_URL, "ElevenLabs' API origin (a data-residency one, or a local fake in tests)."),
    ELEVENLABS_API_KEY: Type.Optional(
      Type.String({
        minLength: 16,
        description:
          "The service's own ElevenLabs key, for tenants that have not connected theirs (their speech is billed at RATE_TTS_PER_1K_CHARACTERS).",
      }),
    ),
  },
  tts: {
    connect: createElevenLabsTts,
    vendorEndpoint: (settings) => ({ baseUrl: settings.ELEVENLABS_API_URL!, apiKey: settings.ELEVENLABS_API_KEY }),
  },
};
