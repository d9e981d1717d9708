import { Type, type Static } from '@sinclair/typebox';
import { InstantOrDate, MoneyString, PATTERN_MESSAGE, Timestamp, Uuid } from '../../platform/schemas.ts';

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 8, maxLength: 200, description: 'At least 8 characters.' });

export const SignupBody = Type.Object(
  {
    tenantName: Type.String({ minLength: 1, maxLength: 200 }),
    email: Email,
    password: Password,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    country: Type.Optional(
      Type.String({
        pattern: '^[A-Z]{2}$',
        [PATTERN_MESSAGE]: 'an ISO 3166-1 country code in capitals, such as US',
        description: 'ISO 3166-1 alpha-2, e.g. US.',
      }),
    ),
    currency: Type.Optional(
      Type.String({
        pattern: '^[A-Z]{3}$',
        [PATTERN_MESSAGE]: 'an ISO 4217 currency code in capitals, such as USD',
        description: 'ISO 4217, e.g. USD. Default USD.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SignupBody = Static<typeof SignupBody>;

export const LoginBody = Type.Object(
  { email: Email, password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export type LoginBody = Static<typeof LoginBody>;

export const PasswordBody = Type.Object(
  { currentPassword: Type.String({ minLength: 1, maxLength: 200 }), newPassword: Password },
  { additionalProperties: false },
);
export type PasswordBody = Static<typeof PasswordBody>;

export const User = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Type.String(),
  createdAt: Timestamp,
});
export type User = Static<typeof User>;

export const Session = Type.Object({
  accessToken: Type.Optional(
    Type.String({ description: 'Send as `Authorization: Bearer <accessToken>`. Absent from an Idempotency-Key replay: shown once.' }),
  ),
  expiresIn: Type.Integer({ description: 'Seconds until the token expires.' }),
  user: User,
});
export type Session = Static<typeof Session>;

const KeyName = Type.String({ minLength: 1, maxLength: 100 });
const WebhookUrl = Type.String({
  format: 'uri',
  pattern: '^https?://',
  [PATTERN_MESSAGE]: 'an http or https URL',
  maxLength: 2048,
  description: 'Where call results are posted.',
});

export const CreateApiKeyBody = Type.Object(
  {
    name: KeyName,
    expiresAt: Type.Optional(InstantOrDate('The key stops working after this instant; a bare date means the end of that day (UTC).')),
    webhookUrl: Type.Optional(WebhookUrl),
    agentId: Type.Optional(Type.Union([Uuid, Type.Null()], { description: 'Pins the key so its webhook fires only for this agent.' })),
  },
  { additionalProperties: false },
);
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  keyPrefix: Type.String({ description: 'The first characters of the key, to recognise it.' }),
  status: Type.Union([Type.Literal('ACTIVE'), Type.Literal('EXPIRED'), Type.Literal('REVOKED')]),
  expiresAt: Type.Union([Timestamp, Type.Null()]),
  webhookUrl: Type.Union([Type.String(), Type.Null()]),
  agentId: Type.Union([Uuid, Type.Null()]),
  lastUsedAt: Type.Union([Timestamp, Type.Null()]),
  revokedAt: Type.Union([Timestamp, Type.Null()]),
  createdAt: Timestamp,
});
export type ApiKey = Static<typeof ApiKey>;

export const CreatedApiKey = Type.Composite([
  ApiKey,
  Type.Object({
    key: Type.Optional(Type.String({ description: 'The full key. Shown only in this response (absent from an Idempotency-Key replay).' })),
    webhookSecret: Type.Optional(
      Type.String({ description: 'Signing secret of the webhook (Standard Webhooks). Shown only in this response.' }),
    ),
  }),
]);
export type CreatedApiKey = Static<typeof CreatedApiKey>;

export const UpdateApiKeyBody = Type.Object(
  {
    name: Type.Optional(KeyName),
    webhookUrl: Type.Optional(
      Type.Union([WebhookUrl, Type.Null()], { description: 'Where call results are posted from now on; null: no more webhooks.' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateApiKeyBody = Static<typeof UpdateApiKeyBody>;

export const UpdatedApiKey = Type.Composite([
  ApiKey,
  Type.Object({
    webhookSecret: Type.Optional(
      Type.String({
        description:
          'Signing secret of the webhook, when this change gave the key its first webhook URL (or one after it was removed). Shown only in this response.',
      }),
    ),
  }),
]);
export type UpdatedApiKey = Static<typeof UpdatedApiKey>;

export const Profile = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  data: Type.Object({
    user: Type.Union([User, Type.Null()]),
    tenant: Type.Object({
      id: Uuid,
      name: Type.String(),
      slug: Type.String(),
      status: Type.String(),
      country: Type.Union([Type.String(), Type.Null()]),
      currency: Type.String(),
    }),
    onboarding: Type.Object({
      hasIntegration: Type.Boolean(),
      hasFlow: Type.Boolean(),
      hasTestedCall: Type.Boolean(),
      completed: Type.Boolean(),
    }),
    wallet: Type.Object({
      id: Uuid,
      balance: MoneyString,
      currency: Type.String(),
      lowBalanceThreshold: MoneyString,
    }),
  }),
});
export type Profile = Static<typeof Profile>;
