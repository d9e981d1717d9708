import { Type } from '@sinclair/typebox';
import { ApiOrigin } from '../../platform/settings.ts';
import { Credential } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { createDeepgramStt, DEEPGRAM_DEFAULT_URL } from './live-recognition.ts';

/** Deepgram: live speech-to-text for calls (the caller's words as they speak, and where each turn ends). */
export const deepgram: Provider = {
  name: 'DEEPGRAM',
  title: 'Deepgram',
  integration: {
    kind: 'deepgram',
    body: Type.Object(
      {
        apiKey: Credential({ minLength: 16, maxLength: 200, description: 'A Deepgram API key; stored encrypted, never returned.' }),
      },
      { additionalProperties: false },
    ),
    secrets: ['apiKey'],
    summary: "Connect your Deepgram account: your agents hear callers through it instead of the service's",
  },
  settings: {
    DEEPGRAM_API_URL: ApiOrigin(
      DEEPGRAM_DEFAULT_URL,
      "Deepgram's API origin; live transcription connects to it over wss:// (ws:// for http://).",
    ),
    DEEPGRAM_API_KEY: Type.Optional(
      Type.String({
        minLength: 16,
        description:
          "The service's own Deepgram key, for tenants that have not connected theirs (their speech is billed at RATE_STT_PER_MINUTE).",
      }),
    ),
  },
  stt: {
    connect: createDeepgramStt,
    vendorEndpoint: (settings) => ({ baseUrl: settings.DEEPGRAM_API_URL!, apiKey: settings.DEEPGRAM_API_KEY }),
  },
};
