import { Type } from '@sinclair/typebox';
import { ApiOrigin } from '../../platform/settings.ts';
import { Credential, PATTERN_MESSAGE } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { createWhatsAppCloud, verifyWhatsAppSignature } from './cloud-api.ts';
import { readWhatsAppWebhook } from './webhooks.ts';

/** Meta's WhatsApp Cloud API: approved templates sent from a business account's numbers. */
export const whatsappCloud: Provider = {
  name: 'WHATSAPP',
  title: 'WhatsApp',
  integration: {
    kind: 'whatsapp',
    body: Type.Object(
      {
        businessAccountId: Type.String({
          pattern: '^[0-9]{1,32}$',
          [PATTERN_MESSAGE]: 'the digits of a WhatsApp Business Account id',
          description: 'WhatsApp Business Account (WABA) id.',
        }),
        accessToken: Credential({
          minLength: 16,
          maxLength: 1024,
          description:
            'A system-user access token with whatsapp_business_messaging and whatsapp_business_management; stored encrypted, never returned.',
        }),
        appSecret: Type.String({
          minLength: 16,
          maxLength: 256,
          description: "The Meta app's secret, which signs webhook deliveries (X-Hub-Signature-256); stored encrypted, never returned.",
        }),
        phoneNumberId: Type.String({
          pattern: '^[0-9]{1,32}$',
          [PATTERN_MESSAGE]: 'the digits of a WhatsApp phone number ID',
          description: 'The default sender phone number id.',
        }),
      },
      { additionalProperties: false },
    ),
    secrets: ['accessToken', 'appSecret'],
    summary: 'Connect the WhatsApp Cloud API (business account, token, app secret, default sender)',
  },
  settings: {
    WHATSAPP_API_URL: ApiOrigin(
      'https://graph.facebook.com',
      "Base URL of Meta's Graph API for the WhatsApp Cloud API (a local fake in tests).",
    ),
    WHATSAPP_API_VERSION: Type.String({
      default: 'v21.0',
      pattern: '^v[0-9]+\\.[0-9]+$',
      description: 'Graph API version used for WhatsApp requests.',
      expected: 'a version such as v21.0',
    }),
  },
  whatsapp: {
    connect: (connection) =>
      createWhatsAppCloud({
        accessToken: connection.credentials.accessToken!,
        baseUrl: connection.settings.WHATSAPP_API_URL,
        apiVersion: connection.settings.WHATSAPP_API_VERSION,
        timeoutMs: connection.timeoutMs,
      }),
    verify: (rawBody, signature, credentials) => verifyWhatsAppSignature(credentials.appSecret!, rawBody, signature),
    read: readWhatsAppWebhook,
  },
};
