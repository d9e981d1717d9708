import { Type, type Static, type TObject } from '@sinclair/typebox';
import { StringEnum, Timestamp } from '../../platform/schemas.ts';

/**
 * Each kind of integration: its fields, and which of them are secrets (sealed at rest, never
 * returned). Messaging providers join this table with the post-call messaging issue.
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
  },
} satisfies Record<string, { body: TObject; secrets: string[] }>;

export type IntegrationKind = keyof typeof INTEGRATION_KINDS;
export const KindParams = Type.Object({ kind: StringEnum(Object.keys(INTEGRATION_KINDS) as [IntegrationKind]) });
export type TwilioIntegrationBody = Static<typeof INTEGRATION_KINDS.twilio.body>;

export const Integration = Type.Object({
  kind: Type.String(),
  settings: Type.Record(Type.String(), Type.String(), { description: 'The fields that are not secret.' }),
  secretsSet: Type.Array(Type.String(), { description: 'Names of the secret fields stored (their values are never returned).' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Integration = Static<typeof Integration>;
