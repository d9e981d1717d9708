import { Type } from '@sinclair/typebox';
import { ApiOrigin } from '../../platform/settings.ts';
import { Credential } from '../../platform/schemas.ts';
import type { Provider } from '../types.ts';
import { msg91Callbacks } from './inbound.ts';
import { createMsg91Sms } from './sms.ts';

/** MSG91: SMS in India, where every template is registered under DLT. */
export const msg91: Provider = {
  name: 'MSG91',
  title: 'MSG91',
  integration: {
    kind: 'msg91',
    body: Type.Object(
      { authKey: Credential({ minLength: 8, maxLength: 128, description: 'MSG91 auth key; stored encrypted, never returned.' }) },
      { additionalProperties: false },
    ),
    secrets: ['authKey'],
    summary: 'Connect MSG91 (India, DLT) for SMS',
  },
  settings: { MSG91_API_URL: ApiOrigin('https://api.msg91.com', "Base URL of MSG91's SMS API (India, DLT) (a local fake in tests).") },
  sms: {
    connect: (connection) =>
      createMsg91Sms({
        authKey: connection.credentials.authKey!,
        baseUrl: connection.settings.MSG91_API_URL,
        timeoutMs: connection.timeoutMs,
      }),
    templatesOnly: true,
    callbacks: msg91Callbacks,
  },
};
