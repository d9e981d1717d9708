import { Type } from '@sinclair/typebox';
import { ApiOrigin } from '../../platform/settings.ts';
import { Credential, PATTERN_MESSAGE } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { telnyxMediaStream } from './media-stream.ts';
import { telnyxSms } from './sms.ts';
import { telnyxTelephony } from './telephony.ts';

/** Telnyx: calls (Call Control v2, their audio over Media Streaming) and SMS (Messaging v2) with one API key; webhooks signed with the account's Ed25519 key. */
export const telnyx: Provider = {
  name: 'TELNYX',
  title: 'Telnyx',
  integration: {
    kind: 'telnyx',
    body: Type.Object(
      {
        apiKey: Credential({ minLength: 16, maxLength: 256, description: 'Telnyx API key (v2, KEY…); stored encrypted, never returned.' }),
        connectionId: Type.String({
          minLength: 1,
          maxLength: 64,
          pattern: '^[A-Za-z0-9_-]+$',
          [PATTERN_MESSAGE]: 'a Call Control application id: letters, digits, _ and -',
          description: 'Id of the Call Control application (formerly connection) that places the calls.',
        }),
        publicKey: Type.String({
          pattern: '^[A-Za-z0-9+/]{43}=$',
          [PATTERN_MESSAGE]: 'an Ed25519 public key in base64 (44 characters ending in =)',
          description: "The account's Ed25519 public key (base64, Keys & Credentials → Public Key) that verifies Telnyx's webhooks.",
        }),
      },
      { additionalProperties: false },
    ),
    secrets: ['apiKey'],
    summary: 'Connect Telnyx (API key, Call Control application id and public key) for calls and SMS',
  },
  settings: { TELNYX_API_URL: ApiOrigin('https://api.telnyx.com', "Base URL of Telnyx's v2 API (a local fake in tests).") },
  telephony: { ...telnyxTelephony, mediaStream: telnyxMediaStream },
  sms: telnyxSms,
};
