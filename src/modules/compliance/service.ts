import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { csvCell } from '../../platform/csv.ts';
import { appError } from '../../platform/errors.ts';
import type { Page } from '../../platform/pagination.ts';
import { INVALID_PHONE, normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import type { CsvRow, CsvRowLimit } from '../contacts/service.ts';
import * as repo from './repo.ts';

import { isOptOutReply } from './opt-out-replies.ts';
import { Type } from '@sinclair/typebox';
import { ComplianceRecord, type AddDncBody, type DncEntry, type DncImportResult, type DncSource } from './schemas.ts';

/**
 * The tenant's do-not-call list: who must not be called or messaged again, on any channel, with
 * how each number came onto the list and what shows the person asked. Campaigns ask it whenever
 * they dial and messaging before it sends.
 */

/** At most this many numbers in one CSV import (a 5 MB file holds about 150,000). */
export const DNC_CSV_LIMIT: CsvRowLimit = { rows: 100_000, noun: 'numbers' };
const INSERT_BATCH = 5_000;
const EXPORT_SLICE = 5_000;

const toEntry = (row: repo.DncRow): DncEntry => ({
  phoneNumber: row.phone_number,
  source: row.source as DncSource,
  reason: row.reason,
  evidence: row.evidence,
  createdAt: row.created_at.toISOString(),
});

function phoneOrRefuse(raw: string): string {
  const phoneNumber = normalizePhoneNumber(raw);
  if (!phoneNumber) throw appError('INVALID_PHONE_NUMBER');
  return phoneNumber;
}

/**
 * Puts a number on the list. A number already listed keeps its first entry (the earliest
 * evidence), and `created` says whether this call added it.
 */
export async function addToDoNotCall(
  ctx: Pick<TenantCtx, 'db' | 'tenantId' | 'clock'>,
  input: { phoneNumber: string; source: DncSource; reason?: string | null; evidence?: Record<string, unknown> },
): Promise<{ entry: DncEntry; created: boolean }> {
  const phoneNumber = phoneOrRefuse(input.phoneNumber);
  const entry = { phoneNumber, source: input.source, reason: input.reason ?? null, evidence: input.evidence ?? {} };
  const [added] = await repo.insertEntries(ctx.db, ctx.tenantId, [entry], ctx.clock.now());
  if (added) return { entry: toEntry(added), created: true };
  return { entry: toEntry((await repo.findEntry(ctx.db, ctx.tenantId, phoneNumber))!), created: false };
}

export const addFromApi = (ctx: TenantCtx, body: AddDncBody) => addToDoNotCall(ctx, { ...body, source: 'api' });

export async function getDoNotCall(ctx: TenantCtx, rawPhone: string): Promise<DncEntry> {
  const row = await repo.findEntry(ctx.db, ctx.tenantId, phoneOrRefuse(rawPhone));
  if (!row) throw appError('NOT_FOUND.dnc');
  return toEntry(row);
}

export async function removeFromDoNotCall(ctx: TenantCtx, rawPhone: string): Promise<void> {
  if (!(await repo.deleteEntry(ctx.db, ctx.tenantId, phoneOrRefuse(rawPhone)))) throw appError('NOT_FOUND.dnc');
}

export async function listDoNotCall(ctx: TenantCtx, search: string | undefined, page: Page) {
  const { rows, total } = await repo.listEntries(ctx.db, ctx.tenantId, search?.trim() || undefined, page);
  return { data: rows.map(toEntry), total };
}

/**
 * A message a person sent (an SMS or a WhatsApp reply): when it is an opt-out word from a real
 * number, the number goes on the list with the message as evidence. Whether this added it.
 */
export async function optOutByReply(
  ctx: Pick<TenantCtx, 'db' | 'tenantId' | 'clock'>,
  reply: { source: 'sms' | 'whatsapp'; from: string; text: string; messageId: string; at: Date; reason: string },
): Promise<boolean> {
  const phoneNumber = normalizePhoneNumber(reply.from);
  if (!phoneNumber || !isOptOutReply(reply.text)) return false;
  const evidence = { messageId: reply.messageId, at: reply.at.toISOString() };
  return (await addToDoNotCall(ctx, { phoneNumber, source: reply.source, reason: reply.reason, evidence })).created;
}

/** Which of these numbers (E.164) are on the tenant's list: the dialer and messaging ask before every call and message. */
export const listedNumbers = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, phoneNumbers: string[]) =>
  repo.listedAmong(ctx.db, ctx.tenantId, phoneNumbers);

/**
 * Imports the rows of a CSV of numbers (a phone column, and optionally a `reason` column), all in one
 * transaction: every valid number is listed, invalid rows are reported and change nothing.
 */
export async function importDoNotCall(ctx: TenantCtx, rows: CsvRow[]): Promise<DncImportResult> {
  const invalidRows: DncImportResult['invalidRows'] = [];
  const entries = new Map<string, repo.NewEntry>();
  for (const { row, fields } of rows) {
    const phoneNumber = normalizePhoneNumber(fields.phoneNumber ?? '');
    if (!phoneNumber) {
      invalidRows.push({ row, phone: fields.phoneNumber ?? '', reason: INVALID_PHONE });
      continue;
    }
    const reason = (fields.metadata as Record<string, unknown> | undefined)?.reason;
    if (!entries.has(phoneNumber))
      entries.set(phoneNumber, {
        phoneNumber,
        source: 'import',
        reason: typeof reason === 'string' && reason ? reason.slice(0, 500) : null,
        evidence: { row },
      });
  }
  const all = [...entries.values()];
  const added = await withTransaction(ctx, async (txCtx) => {
    let count = 0;
    for (let start = 0; start < all.length; start += INSERT_BATCH)
      count += (await repo.insertEntries(txCtx.db, ctx.tenantId, all.slice(start, start + INSERT_BATCH), ctx.clock.now())).length;
    return count;
  });
  return { added, alreadyListed: all.length - added, invalidRows };
}

const CSV_HEADER = 'phone_number,source,reason,created_at,evidence\n';

/** The whole list as CSV, in number order, read in slices so a long list never sits in memory at once. */
export async function* exportDoNotCall(ctx: TenantCtx): AsyncGenerator<string> {
  yield CSV_HEADER;
  for (let after = ''; ;) {
    const rows = await repo.entriesAfter(ctx.db, ctx.tenantId, after, EXPORT_SLICE);
    if (rows.length === 0) return;
    yield rows
      .map(
        (row) =>
          [row.phone_number, row.source, row.reason ?? '', row.created_at.toISOString(), JSON.stringify(row.evidence)]
            .map(csvCell)
            .join(',') + '\n',
      )
      .join('');
    after = rows.at(-1)!.phone_number;
  }
}

/** The shape `exportRecordsJson` writes, for the route that serves a campaign's records (campaigns/): an array of records. */
export const ComplianceRecordList = Type.Array(ComplianceRecord);

export {
  addConsent,
  dialSettings,
  consentedNumbers,
  exportRecordsCsv,
  exportRecordsJson,
  getComplianceSettings,
  getConsent,
  listConsents,
  recordAnswers,
  recordScore,
  recordDecisions,
  revokeConsent,
  updateComplianceSettings,
  verifyRecords,
  type DialDecision,
  type DialSettings,
} from './dial-compliance.ts';
export { LONGEST_STATUTORY_CAP_HOURS, rulesForNumber } from './calling-rules.ts';
