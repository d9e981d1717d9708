import { Type, type Static, type TObject } from '@sinclair/typebox';
import { StringEnum, Timestamp } from '../../platform/shapes.ts';

/**
 * Each kind of integration: its fields, and which of them are secrets (sealed at rest, never
 * returned). `twilio` serves both calls and SMS.
 */
export const INTEGRATION_KINDS = {
  twilio: {
    body: Type.Object(
      {
        accountSid: Type.String({ pattern: '^AC[0-9a-fA-F]{32}$', description: 'Twilio Account SID (AC followed by 32 hex digits).' }),
        authToken: Type.String({ minLength: 16, maxLength: 128, description: 'Twilio Auth Token; stored encrypted, never returned.' }),
      },
      { additionalProperties: false },
    ),
    secrets: ['authToken'],
    summary: 'Connect Twilio (Account SID and Auth Token) for calls and SMS',
  },
  whatsapp: {
    body: Type.Object(
      {
        businessAccountId: Type.String({ pattern: '^[0-9]{1,32}$', description: 'WhatsApp Business Account (WABA) id.' }),
        accessToken: Type.String({
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
        phoneNumberId: Type.String({ pattern: '^[0-9]{1,32}$', description: 'The default sender phone number id.' }),
      },
      { additionalProperties: false },
    ),
    secrets: ['accessToken', 'appSecret'],
    summary: 'Connect the WhatsApp Cloud API (business account, token, app secret, default sender)',
  },
  msg91: {
    body: Type.Object(
      {
        authKey: Type.String({ minLength: 8, maxLength: 128, description: 'MSG91 auth key; stored encrypted, never returned.' }),
      },
      { additionalProperties: false },
    ),
    secrets: ['authKey'],
    summary: 'Connect MSG91 (India, DLT) for SMS',
  },
} satisfies Record<string, { body: TObject; secrets: string[]; summary: string }>;

export type IntegrationKind = keyof typeof INTEGRATION_KINDS;
/** The body of `PUT /integrations/{kind}` for one kind. */
export type IntegrationBody<K extends IntegrationKind> = Static<(typeof INTEGRATION_KINDS)[K]['body']>;
export const KindParams = Type.Object({ kind: StringEnum(Object.keys(INTEGRATION_KINDS) as [IntegrationKind]) });

export const Integration = Type.Object({
  kind: Type.String(),
  settings: Type.Record(Type.String(), Type.String(), { description: 'The fields that are not secret.' }),
  secretsSet: Type.Array(Type.String(), { description: 'Names of the secret fields stored (their values are never returned).' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Integration = Static<typeof Integration>;
