import { Type, type Static } from '@sinclair/typebox';
import { INTEGRATIONS } from '../../providers/registry.ts';
import type { IntegrationDefinition } from '../../providers/types.ts';
import { StringEnum, Timestamp } from '../../platform/schemas.ts';

/**
 * Each kind of integration: its fields, and which of them are secrets (sealed at rest, never
 * returned). Each provider that needs credentials declares its own (src/providers/registry.ts);
 * `twilio` serves both calls and SMS.
 */
export const INTEGRATION_KINDS: Readonly<Record<string, IntegrationDefinition>> = Object.fromEntries(
  INTEGRATIONS.map((integration) => [integration.kind, integration]),
);

export type IntegrationKind = string;
export const KindParams = Type.Object({ kind: StringEnum(Object.keys(INTEGRATION_KINDS) as [string, ...string[]]) });

export const Integration = Type.Object({
  kind: Type.String(),
  settings: Type.Record(Type.String(), Type.String(), { description: 'The fields that are not secret.' }),
  secretsSet: Type.Array(Type.String(), { description: 'Names of the secret fields stored (their values are never returned).' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Integration = Static<typeof Integration>;
