import { finished, type Readable, type Writable } from 'node:stream';
import { parse } from 'csv-parse';
import { AppError, appError, uploadCutShort } from '../../platform/errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../platform/input.ts';
import { isPlainObject, METADATA_NOT_OBJECT, TOO_DEEP_METADATA } from './contact-fields.ts';

/** Reading an uploaded CSV into numbered contact rows (seed §4.4, contract §4). */

/** How many data rows one import takes, and what its rows are called in the refusal. */
export interface CsvRowLimit {
  rows: number;
  noun: string;
}
export const CONTACT_CSV_LIMIT: CsvRowLimit = { rows: 500, noun: 'contacts' };
/**
 * Rows whose fields are all empty read at most (truly empty lines cost nothing and are not
 * counted). csv-parse builds an error object (with its stack) for every row of another width than
 * the header, about 25 µs each: a 5 MB file of commas would hold the API's CPU for a minute.
 * Together with the import's own row limit this bounds what one file can cost; reading stops at
 * whichever is passed first, so no more is read than the refusal needs.
 */
export const MAX_CSV_BLANK_ROWS = 10_000;
/** Characters a row may have (its fields together): far more than a contact needs, little for the parser to hold. */
export const MAX_CSV_ROW_CHARACTERS = 65_536;
/** Columns a row may have: CRM exports run to a few hundred; each extra one becomes a metadata entry of every contact. */
export const MAX_CSV_COLUMNS = 1000;

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

/** Maps one record by its header; extra columns, and values a column of the same field already gave, become string entries of metadata. */
function toRow(header: string[], fieldOf: (Field | undefined)[], record: string[], row: number): CsvRow {
  const fields: CsvRow['fields'] = {};
  const extras: Record<string, string> = {};
  let metadata: unknown;
  record.forEach((value, column) => {
    const field = fieldOf[column];
    if (field === 'metadata') {
      if (value.trim() === '') return;
      // Checked on the text (one pass, no recursion) before anything recurses over it.
      if (nestsDeeperThan(value, MAX_JSON_DEPTH)) return void (metadata = TOO_DEEP_METADATA);
      try {
        metadata = JSON.parse(value);
      } catch {
        metadata = METADATA_NOT_OBJECT; // not JSON at all: reported like any non-object
      }
      return;
    }
    const key = header[column]?.trim();
    if (field && (fields[field] === undefined || fields[field] === '')) fields[field] = value;
    // An extra column, or a second one of a field already given (phone beside mobile): kept in metadata under its header.
    else if (key && value !== '') extras[key] = value;
  });
  if (metadata !== undefined && !isPlainObject(metadata)) fields.metadata = metadata;
  else if (metadata !== undefined || Object.keys(extras).length > 0)
    fields.metadata = { ...extras, ...(metadata as Record<string, unknown> | undefined) };
  return { row, fields };
}

/** Reads every record; refuses the whole file when it has no phone column or more rows than `limit` takes. */
export async function readCsvRows(input: Readable, limit: CsvRowLimit): Promise<CsvRow[]> {
  // A multipart body cut short hands over its file's stream already destroyed before its end.
  if (input.readableAborted) throw uploadCutShort();
  // Empty lines are skipped inside the parser (cheaply) but counted, so rows keep their spreadsheet numbers.
  const parser = input.pipe(
    parse({ bom: true, trim: true, relax_column_count: true, skip_empty_lines: true, info: true, max_record_size: MAX_CSV_ROW_CHARACTERS }),
  );
  // pipe() forwards neither a source's failure nor its end cut short (a multipart body without its closing boundary).
  finished(input, (error) => error && parser.destroy(error));
  const rows: CsvRow[] = [];
  let header: string[] | undefined;
  let fieldOf: (Field | undefined)[] = [];
  let blankRows = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { records: number; empty_lines: number } }>) {
      // The row as a spreadsheet numbers it: records so far (the header is the first) and the empty lines before this one.
      const index = info.records + info.empty_lines;
      if (record.length > MAX_CSV_COLUMNS)
        throw appError('INVALID_CSV.tooManyColumns', {
          row: index,
          columns: record.length.toLocaleString('en-US'),
          max: MAX_CSV_COLUMNS.toLocaleString('en-US'),
        });
      if (!header) {
        header = record;
        // Its names become metadata keys, and PostgreSQL cannot store U+0000.
        const nulColumn = header.findIndex((name) => name.includes('\u0000'));
        if (nulColumn >= 0) throw appError('INVALID_CSV.nulInHeader', { column: nulColumn + 1 });
        fieldOf = header.map(fieldOfHeader);
        if (!fieldOf.includes('phoneNumber')) {
          throw appError('INVALID_CSV.noPhoneColumn', { headers: PHONE_HEADERS.join(', ') });
        }
        continue;
      }
      if (record.every((value) => value === '')) {
        // A blank row is no contact.
        if (++blankRows > MAX_CSV_BLANK_ROWS)
          throw appError('INVALID_CSV.tooManyBlankRows', { max: MAX_CSV_BLANK_ROWS.toLocaleString('en-US') });
        continue;
      }
      if (rows.length === limit.rows)
        throw appError('INVALID_CSV.tooManyRows', { max: limit.rows.toLocaleString('en-US'), noun: limit.noun });
      rows.push(toRow(header, fieldOf, record, index));
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') throw error;
    const refusal = csvRefusal(error);
    // An upload over the size limit is refused as such, whatever the parser found before its end.
    if (refusal.code !== 'PAYLOAD_TOO_LARGE' && (await overSizeLimit(input, parser))) throw appError('PAYLOAD_TOO_LARGE.csv');
    throw refusal;
  }
  if (!header) throw appError('INVALID_CSV.empty');
  return rows;
}

/** Why reading stopped, as the answer to give. */
function csvRefusal(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const { code } = error as { code?: string };
  if (code === 'FST_REQ_FILE_TOO_LARGE') return appError('PAYLOAD_TOO_LARGE.csv');
  if (code === 'CSV_MAX_RECORD_SIZE') {
    // The row being read is not counted yet in the parser's records.
    const { records = 0, empty_lines = 0 } = error as { records?: number; empty_lines?: number };
    return appError('INVALID_CSV.rowTooLong', { row: records + empty_lines + 1, max: MAX_CSV_ROW_CHARACTERS.toLocaleString('en-US') });
  }
  return appError('INVALID_CSV', { reason: (error as Error).message });
}

/**
 * Reads the rest of the upload without parsing it; true when it is over the size limit (the
 * multipart file stream then ends early, marked truncated).
 */
function overSizeLimit(input: Readable, parser: Writable): Promise<boolean> {
  return new Promise((resolve) => {
    finished(input, () => resolve((input as Readable & { truncated?: boolean }).truncated === true));
    // Unpiped now, not when the destroyed parser closes a tick later: unpipe() pauses a source it
    // leaves without a destination, so the reading started below stopped there, the upload still
    // arriving was never read, and the request never got an answer. (When the pipe was holding
    // the source back, its clean-up resumed it again, which is why only some uploads hung: those
    // whose parser kept up with a file arriving slowly.)
    input.unpipe(parser);
    input.resume();
  });
}
