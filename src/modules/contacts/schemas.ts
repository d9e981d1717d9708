import { Type, type Static } from '@sinclair/typebox';
import { PageQuery, pageParams } from '../../platform/pagination.ts';
import { Timestamp, Uuid } from '../../platform/schemas.ts';

const Metadata = Type.Record(Type.String(), Type.Unknown(), { description: 'Arbitrary key-value pairs (custom variables).' });
const ListName = Type.String({ minLength: 1, maxLength: 200 });

export const ContactList = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  name: Type.String(),
  metadata: Metadata,
  contactCount: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type ContactList = Static<typeof ContactList>;

export const CreateListBody = Type.Object({ name: ListName, metadata: Type.Optional(Metadata) }, { additionalProperties: false });
export type CreateListBody = Static<typeof CreateListBody>;
export const UpdateListBody = Type.Object(
  { name: Type.Optional(ListName), metadata: Type.Optional(Metadata) },
  { additionalProperties: false },
);
export type UpdateListBody = Static<typeof UpdateListBody>;

export const ListQuery = Type.Object({
  ...PageQuery.properties,
  search: Type.Optional(Type.String({ maxLength: 200, description: 'Part of the list name, any case.' })),
});

export const Contact = Type.Object({
  id: Uuid,
  tenantId: Uuid,
  contactListId: Uuid,
  phoneNumber: Type.String({ description: 'E.164' }),
  name: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  metadata: Metadata,
  timezone: Type.Optional(Type.String({ description: 'IANA time zone, when set; else the dialer derives it from the number.' })),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Contact = Static<typeof Contact>;

/** A contact's limits, held by every way in: the schemas below and the row check of bulk add and CSV import (contact-fields.ts). */
export const MAX_PHONE_NUMBER_LENGTH = 40;
export const MAX_CONTACT_NAME_LENGTH = 200;
export const MAX_EMAIL_LENGTH = 254;
export const MAX_TIME_ZONE_LENGTH = 64;

const PhoneNumber = Type.String({
  minLength: 1,
  maxLength: MAX_PHONE_NUMBER_LENGTH,
  description: 'E.164; spaces, dashes, dots and parentheses are removed first.',
});
const ContactName = Type.String({ maxLength: MAX_CONTACT_NAME_LENGTH });
const Email = Type.String({ format: 'email', maxLength: MAX_EMAIL_LENGTH });
const TimeZone = Type.String({
  minLength: 1,
  maxLength: MAX_TIME_ZONE_LENGTH,
  description:
    "IANA time zone of the contact (such as America/Chicago), or a city that names exactly one zone (Berlin is stored as Europe/Berlin); without it, the number's zone is used where a contact's local time matters.",
});

// A null name, email or timezone is a field not given, here as in a bulk add (in PATCH it clears the field).
export const CreateContactBody = Type.Object(
  {
    phoneNumber: PhoneNumber,
    name: Type.Optional(Type.Union([ContactName, Type.Null()])),
    email: Type.Optional(Type.Union([Email, Type.Null()])),
    metadata: Type.Optional(Metadata),
    timezone: Type.Optional(Type.Union([TimeZone, Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateContactBody = Static<typeof CreateContactBody>;

export const UpdateContactBody = Type.Object(
  {
    phoneNumber: Type.Optional(PhoneNumber),
    name: Type.Optional(Type.Union([ContactName, Type.Null()])),
    email: Type.Optional(Type.Union([Email, Type.Null()])),
    metadata: Type.Optional(Metadata),
    timezone: Type.Optional(Type.Union([TimeZone, Type.Null()])),
  },
  { additionalProperties: false },
);
export type UpdateContactBody = Static<typeof UpdateContactBody>;

/**
 * A contact of a bulk add: the one-contact body's properties with their types, and no others (a
 * wrong type or an unknown property refuses the body, contract §1); null stands for a field not
 * given, as in a CRM export. Values are not judged here: rows are checked one by one, so the valid
 * ones are imported and the others reported with their reason (a missing or invalid phone number,
 * an invalid e-mail, a name too long: seed §2.8), as CSV rows are.
 */
const BulkContact = Type.Object(
  {
    phoneNumber: Type.Optional(Type.String()),
    name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    email: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    metadata: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
    timezone: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { additionalProperties: false },
);

export const BulkContactsBody = Type.Object(
  { contacts: Type.Array(BulkContact, { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false },
);
export type BulkContactsBody = Static<typeof BulkContactsBody>;

export const UploadResult = Type.Object({
  imported: Type.Integer(),
  skipped: Type.Integer(),
  invalidRows: Type.Array(Type.Object({ row: Type.Integer(), phone: Type.String(), reason: Type.String() })),
});
export type UploadResult = Static<typeof UploadResult>;

export const DeleteBatchBody = Type.Object(
  { contactIds: Type.Array(Uuid, { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false },
);
export type DeleteBatchBody = Static<typeof DeleteBatchBody>;

export const ContactsQuery = Type.Object({
  // No defaults: with neither page nor limit every contact is returned.
  ...pageParams({ defaults: false, limitDescription: 'Default 25, at most 200. With neither page nor limit every contact is returned.' }),
  search: Type.Optional(
    Type.String({ maxLength: 200, description: 'Only contacts whose phone number, name or email contains this text (any case).' }),
  ),
});

export const ContactParams = Type.Object({ id: Uuid, contactId: Uuid });
