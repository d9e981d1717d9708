import { oncePer, perTurnAcrossTenants } from '../../platform/batches.ts';
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { isForeignKeyViolation, onUniqueViolation, type Queryable } from '../../platform/db.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Page } from '../../platform/pagination.ts';
import type { CountryCode } from 'libphonenumber-js/max';
import { INVALID_PHONE, normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { checkContactRow, DUPLICATE_PHONE, INVALID_TIMEZONE, type ContactFields } from './contact-fields.ts';
import { resolveTimeZone, unknownTimeZone } from '../../platform/time-zones.ts';
import * as repo from './repo.ts';

/** Reading a CSV of people by its phone column, for other modules' imports too (the do-not-call list). */
export { readCsvRows, type CsvRow, type CsvRowLimit } from './csv-rows.ts';
import type {
  Contact,
  ContactList,
  CreateContactBody,
  CreateListBody,
  UpdateContactBody,
  UpdateListBody,
  UploadResult,
} from './schemas.ts';

const toList = (row: repo.ListRow): ContactList => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  metadata: row.metadata,
  contactCount: row.contact_count,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const toContact = (row: repo.ContactRow): Contact => ({
  id: row.id,
  tenantId: row.tenant_id,
  contactListId: row.list_id,
  phoneNumber: row.phone_number,
  name: row.name,
  email: row.email,
  metadata: row.metadata,
  // Only when set: the contact's shape stays the seed's for everyone who does not use it.
  ...(row.timezone ? { timezone: row.timezone } : {}),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const duplicateListName = (name: string) => appError('LIST_NAME_TAKEN', { name });
const listNotFound = () => appError('NOT_FOUND', { what: 'Contact list' });
const contactNotFound = () => appError('NOT_FOUND', { what: 'Contact' });

/** Asks the campaigns module whether a list is in use (seed §4.4); passed in to keep contacts free of campaigns. */
export type ListUsage = (ctx: TenantCtx, listId: string) => Promise<boolean>;

export async function createList(ctx: TenantCtx, input: CreateListBody): Promise<ContactList> {
  const row = await onUniqueViolation(
    repo.insertList(ctx.db, ctx.tenantId, { id: newId(), name: input.name, metadata: input.metadata ?? {} }),
    () => duplicateListName(input.name),
  );
  return toList(row);
}

export async function getList(ctx: TenantCtx, listId: string): Promise<ContactList> {
  const row = await repo.findList(ctx.db, ctx.tenantId, listId);
  if (!row) throw listNotFound();
  return toList(row);
}

export async function listLists(ctx: TenantCtx, search: string | undefined, page: Page) {
  const { rows, total } = await repo.listLists(ctx.db, ctx.tenantId, search, page);
  return { data: rows.map(toList), total };
}

export async function updateList(ctx: TenantCtx, listId: string, input: UpdateListBody): Promise<ContactList> {
  const updated = await onUniqueViolation(repo.updateList(ctx.db, ctx.tenantId, listId, input), () => duplicateListName(input.name ?? ''));
  if (!updated) throw listNotFound();
  return getList(ctx, listId);
}

export async function deleteList(ctx: TenantCtx, listId: string, listInUse: ListUsage): Promise<void> {
  await requireList(ctx, listId);
  if (await listInUse(ctx, listId)) {
    throw appError('LIST_IN_USE');
  }
  if (!(await repo.deleteList(ctx.db, ctx.tenantId, listId))) throw listNotFound();
}

export async function requireList(ctx: TenantCtx, listId: string): Promise<void> {
  if (!(await repo.listExists(ctx.db, ctx.tenantId, listId))) throw listNotFound();
}

export async function addContact(ctx: TenantCtx, listId: string, input: CreateContactBody): Promise<Contact> {
  const check = checkContactRow(input);
  // An unknown zone is refused as on every route that takes one (contract §1: a validation failure).
  if (!check.ok && check.reason === INVALID_TIMEZONE) throw unknownTimeZone(String(input.timezone));
  if (!check.ok)
    throw appError('INVALID_CONTACT', { reason: check.reason }, [
      { path: check.reason === INVALID_PHONE ? '/phoneNumber' : '', message: check.reason },
    ]);
  await requireList(ctx, listId);
  const row = await repo.insertContact(ctx.db, ctx.tenantId, listId, { id: newId(), ...check.contact });
  if (!row) throw appError('DUPLICATE_PHONE_NUMBER', { phoneNumber: check.contact.phoneNumber });
  return toContact(row);
}

export interface NumberedRow {
  row: number;
  fields: Parameters<typeof checkContactRow>[0];
}

/**
 * Imports the rows that pass every rule, in one transaction, and reports the others with their
 * row numbers (a spreadsheet's for CSV, 1-based positions for bulk add).
 */
export async function importContacts(
  ctx: TenantCtx,
  listId: string,
  rows: NumberedRow[],
  { defaultCountry }: { defaultCountry?: CountryCode } = {},
): Promise<UploadResult> {
  const invalidRows: UploadResult['invalidRows'] = [];
  const accepted: (ContactFields & { id: string; row: number })[] = [];
  const seen = new Set<string>();
  rows.forEach(({ row, fields: input }) => {
    const check = checkContactRow(input, defaultCountry);
    if (!check.ok) return void invalidRows.push({ row, phone: check.phone, reason: check.reason });
    if (seen.has(check.contact.phoneNumber))
      return void invalidRows.push({ row, phone: String(input.phoneNumber), reason: DUPLICATE_PHONE });
    seen.add(check.contact.phoneNumber);
    accepted.push({ id: newId(), row, ...check.contact });
  });
  // One statement, atomic on its own; a list that does not exist (or was just deleted) fails its foreign key.
  if (accepted.length === 0) await requireList(ctx, listId);
  const inserted = await repo.insertContacts(ctx.db, ctx.tenantId, listId, accepted).catch((error: unknown) => {
    throw isForeignKeyViolation(error) ? listNotFound() : error;
  });
  const insertedNumbers = new Set(inserted);
  for (const contact of accepted) {
    if (!insertedNumbers.has(contact.phoneNumber))
      invalidRows.push({ row: contact.row, phone: contact.phoneNumber, reason: DUPLICATE_PHONE });
  }
  invalidRows.sort((a, b) => a.row - b.row);
  return { imported: inserted.length, skipped: invalidRows.length, invalidRows };
}

export async function getContact(ctx: TenantCtx, listId: string, contactId: string): Promise<Contact> {
  const row = await repo.findContact(ctx.db, ctx.tenantId, listId, contactId);
  if (!row) throw contactNotFound();
  return toContact(row);
}

/**
 * Pages asked in the same turn of the event loop, of any tenants, are read by one statement (a busy
 * process sends one round trip where it sent one per request); each is read after it was asked.
 */
const pagesOf = oncePer((db: Queryable) =>
  perTurnAcrossTenants(
    (asked: repo.ContactsAsked[]) => repo.listContactPages(db, asked),
    ({ tenantId, listId, page, search }) => `${tenantId}/${listId}/${page?.limit}/${page?.offset}/${search}`,
  ),
);

/**
 * A page of contacts as the API's JSON text (`{ data, total, page, limit }`), the contacts as the
 * database wrote them; with no page asked for, every contact of the list (seed §4.4), read on its own.
 */
export async function listContacts(ctx: TenantCtx, listId: string, page: Page | undefined, search?: string): Promise<string> {
  const ask = { tenantId: ctx.tenantId, listId, page, search };
  const found = page ? await pagesOf(ctx.db)(ask) : (await repo.listContactPages(ctx.db, [ask]))[0];
  if (!found) throw listNotFound();
  const { contactsJson, total } = found;
  return `{"data":${contactsJson},"total":${total},"page":${page?.page ?? 1},"limit":${page?.limit ?? total}}`;
}

export async function updateContact(ctx: TenantCtx, listId: string, contactId: string, input: UpdateContactBody): Promise<Contact> {
  let phoneNumber: string | undefined;
  const timezone = input.timezone ? resolveTimeZone(input.timezone) : input.timezone;
  if (timezone === undefined && input.timezone) throw unknownTimeZone(input.timezone);
  if (input.phoneNumber !== undefined) {
    phoneNumber = normalizePhoneNumber(input.phoneNumber) ?? undefined;
    if (!phoneNumber) throw appError('INVALID_CONTACT.phoneNumber', {}, [{ path: '/phoneNumber', message: INVALID_PHONE }]);
  }
  const row = await onUniqueViolation(
    repo.updateContact(ctx.db, ctx.tenantId, listId, contactId, { ...input, phoneNumber, timezone }),
    () => appError('DUPLICATE_PHONE_NUMBER', { phoneNumber: String(phoneNumber) }),
  );
  if (!row) throw contactNotFound();
  return toContact(row);
}

export async function deleteContact(ctx: TenantCtx, listId: string, contactId: string): Promise<void> {
  if ((await repo.deleteContacts(ctx.db, ctx.tenantId, listId, [contactId])) !== 1) throw contactNotFound();
}

/** All or nothing: one id that is not a contact of this list and nothing is deleted. */
export async function deleteContactsBatch(ctx: TenantCtx, listId: string, contactIds: string[]): Promise<{ deleted: number }> {
  const ids = [...new Set(contactIds.map((id) => id.toLowerCase()))];
  return withTransaction(ctx, async (txCtx) => {
    if (!(await repo.listExists(txCtx.db, ctx.tenantId, listId))) throw listNotFound();
    const deleted = await repo.deleteContacts(txCtx.db, ctx.tenantId, listId, ids);
    if (deleted !== ids.length) {
      throw appError('CONTACTS_NOT_FOUND', { missing: ids.length - deleted, total: ids.length });
    }
    return { deleted };
  });
}

/** A contact as another module copies it (a campaign's snapshot of its list). */
export interface ListedContact {
  id: string;
  phoneNumber: string;
  name: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  timezone: string | null;
}

const toListed = (row: Pick<repo.ContactRow, 'id' | 'phone_number' | 'name' | 'email' | 'metadata' | 'timezone'>): ListedContact => ({
  id: row.id,
  phoneNumber: row.phone_number,
  name: row.name,
  email: row.email,
  metadata: row.metadata,
  timezone: row.timezone,
});

/**
 * Who a caller is, by their number: when several lists hold it, the contact updated last (the
 * details the tenant gave most recently); undefined when no list holds it or it is not a number.
 */
export async function findContactByPhone(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, phoneNumber: string): Promise<ListedContact | undefined> {
  const normalized = normalizePhoneNumber(phoneNumber);
  const row = normalized ? await repo.findContactByPhone(ctx.db, ctx.tenantId, normalized) : undefined;
  return row && toListed(row);
}

/** A contact by its id, whichever its list (a caller an incoming call linked); undefined once deleted. */
export async function findContactById(ctx: Pick<TenantCtx, 'db' | 'tenantId'>, contactId: string): Promise<ListedContact | undefined> {
  const row = await repo.findContactById(ctx.db, ctx.tenantId, contactId);
  return row && toListed(row);
}

/**
 * Every contact of a list in insertion order, a batch at a time: a campaign copies a list of any
 * size with one read per batch, never one per contact and never the whole list in memory.
 */
export async function* contactsOfList(
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  listId: string,
  batchSize = 2000,
): AsyncGenerator<ListedContact[]> {
  let after: { pageKey: string; id: string } | undefined;
  for (;;) {
    const rows = await repo.contactsAfter(ctx.db, ctx.tenantId, listId, after, batchSize);
    if (rows.length > 0) {
      yield rows.map(toListed);
    }
    if (rows.length < batchSize) return;
    const last = rows[rows.length - 1]!;
    after = { pageKey: last.page_key, id: last.id };
  }
}
