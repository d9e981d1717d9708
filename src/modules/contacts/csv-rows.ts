import { finished, type Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { AppError, appError, uploadCutShort } from '../../platform/errors.ts';
import { isPlainObject, METADATA_NOT_OBJECT } from './contact-fields.ts';

/** Reading an uploaded CSV into numbered contact rows (seed §4.4, contract §4). */

export const MAX_CSV_ROWS = 500;

const PHONE_HEADERS = ['phone_number', 'phone', 'mobile', 'customer_number'];
const NAME_HEADERS = ['name', 'customer_name', 'contact_name', 'first_name'];

type Field = 'phoneNumber' | 'name' | 'email' | 'metadata' | 'timezone';
const TIMEZONE_HEADERS = ['timezone', 'time_zone'];

/** Case-insensitive, with spaces, underscores or hyphens between words: "Phone Number" = "phone_number". */
export const normalizeHeader = (header: string): string =>
  header
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '_');

export function fieldOfHeader(header: string): Field | undefined {
  const normalized = normalizeHeader(header);
  if (PHONE_HEADERS.includes(normalized)) return 'phoneNumber';
  if (NAME_HEADERS.includes(normalized)) return 'name';
  if (normalized === 'email') return 'email';
  if (normalized === 'metadata') return 'metadata';
  if (TIMEZONE_HEADERS.includes(normalized)) return 'timezone';
  return undefined;
}

export interface CsvRow {
  /** The row as a spreadsheet numbers it: the header is row 1. */
  row: number;
  fields: { phoneNumber?: string; name?: string; email?: string; metadata?: unknown; timezone?: string };
}

/** Maps one record by its header; extra columns become string entries of metadata. */
function toRow(header: string[], fieldOf: (Field | undefined)[], record: string[], row: number): CsvRow {
  const fields: CsvRow['fields'] = {};
  const extras: Record<string, string> = {};
  let metadata: unknown;
  record.forEach((value, column) => {
    const field = fieldOf[column];
    if (field === 'metadata') {
      if (value.trim() === '') return;
      try {
        metadata = JSON.parse(value);
      } catch {
        metadata = METADATA_NOT_OBJECT; // not JSON at all: reported like any non-object
      }
      return;
    }
    if (field) {
      if (fields[field] === undefined || fields[field] === '') fields[field] = value;
      return;
    }
    const key = header[column]?.trim();
    if (key && value !== '') extras[key] = value;
  });
  if (metadata !== undefined && !isPlainObject(metadata)) fields.metadata = metadata;
  else if (metadata !== undefined || Object.keys(extras).length > 0)
    fields.metadata = { ...extras, ...(metadata as Record<string, unknown> | undefined) };
  return { row, fields };
}

/** Reads every record; refuses the whole file when it has no phone column or more than `maxRows` rows. */
export async function readCsvRows(input: Readable, maxRows = MAX_CSV_ROWS): Promise<CsvRow[]> {
  // A multipart body cut short hands over its file's stream already destroyed before its end.
  if (input.readableAborted) throw uploadCutShort();
  const parser = input.pipe(parse({ bom: true, trim: true, relax_column_count: true, skip_empty_lines: false }));
  // pipe() forwards neither a source's failure nor its end cut short (a multipart body without its closing boundary).
  finished(input, (error) => error && parser.destroy(error));
  const rows: CsvRow[] = [];
  let header: string[] | undefined;
  let fieldOf: (Field | undefined)[] = [];
  let index = 0;
  let dataRows = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      index++;
      if (!header) {
        header = record;
        fieldOf = header.map(fieldOfHeader);
        if (!fieldOf.includes('phoneNumber')) {
          throw appError('INVALID_CSV.noPhoneColumn', { headers: PHONE_HEADERS.join(', ') });
        }
        continue;
      }
      if (record.every((value) => value === '')) continue; // a blank line is no contact
      dataRows++;
      if (dataRows <= maxRows) rows.push(toRow(header, fieldOf, record, index));
    }
  } catch (error) {
    input.resume(); // let the rest of the upload drain
    if (error instanceof AppError || (error as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') throw error;
    if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') {
      throw appError('PAYLOAD_TOO_LARGE.csv');
    }
    throw appError('INVALID_CSV', { reason: (error as Error).message });
  }
  if (!header) throw appError('INVALID_CSV.empty');
  if (dataRows > maxRows) throw appError('INVALID_CSV.tooManyRows', { rows: dataRows, max: maxRows });
  return rows;
}
