import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { StringEnum, Timestamp } from '../../platform/schemas.ts';

export const DNC_SOURCES = ['api', 'import', 'call', 'sms', 'whatsapp'] as const;
export type DncSource = (typeof DNC_SOURCES)[number];

export const DncEntry = Type.Object({
  phoneNumber: Type.String({ description: 'E.164.' }),
  source: StringEnum(DNC_SOURCES, {
    description: 'api (an API client or the dashboard), import (a CSV file), call (asked on a call), sms or whatsapp (an opt-out reply).',
  }),
  reason: Type.Union([Type.String(), Type.Null()]),
  evidence: Type.Record(Type.String(), Type.Unknown(), {
    description: 'What shows the person asked: for a call, its callId and the transcript turn; for a reply, its message id.',
  }),
  createdAt: Timestamp,
});
export type DncEntry = Static<typeof DncEntry>;

export const AddDncBody = Type.Object(
  {
    phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'E.164, such as +14155550100.' }),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
export type AddDncBody = Static<typeof AddDncBody>;

export const DncParams = Type.Object({
  phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'E.164, such as +14155550100.' }),
});

export const DncQuery = Type.Object({
  ...PageQuery.properties,
  search: Type.Optional(Type.String({ maxLength: 32, description: 'A part of the number.' })),
});

export const DncImportResult = Type.Object({
  added: Type.Integer({ description: 'Numbers put on the list by this file.' }),
  alreadyListed: Type.Integer({ description: 'Numbers of the file that were on the list already (their entries are kept).' }),
  invalidRows: Type.Array(Type.Object({ row: Type.Integer(), phone: Type.String(), reason: Type.String() })),
});
export type DncImportResult = Static<typeof DncImportResult>;
