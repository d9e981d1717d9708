import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, multipart, startTestApp, twoTenantKeys, type TestApp } from './harness.ts';

// Seed §4.4 CSV rules and contract §4, uploaded as multipart/form-data like a browser does.
let t: TestApp;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ key, otherKey } = await twoTenantKeys(t.app));
});
afterAll(() => t.close());

async function newList() {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/contact-lists',
    headers: bearer(key),
    payload: { name: `CSV ${randomUUID()}` },
  });
  return response.json().id as string;
}

async function upload(listId: string, content: string | Buffer, options: { field?: string; as?: string; query?: string } = {}) {
  const { body, contentType } = multipart(content, options.field);
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/contact-lists/${listId}/upload${options.query ?? ''}`,
    headers: { ...bearer(options.as ?? key), 'content-type': contentType },
    payload: body,
  });
}

const contactsOf = async (listId: string) =>
  (await t.app.inject({ method: 'GET', url: `/api/v1/contact-lists/${listId}/contacts`, headers: bearer(key) })).json().data as {
    phoneNumber: string;
    name: string | null;
    email: string | null;
    metadata: Record<string, unknown>;
  }[];

const csvOf = (count: number) => ['phone', ...Array.from({ length: count }, (_, i) => `+1415556${String(i).padStart(4, '0')}`)].join('\n');

describe('CSV upload', () => {
  it('imports valid rows and reports invalid ones with spreadsheet row numbers and reasons', async () => {
    const listId = await newList();
    const csv = [
      'Phone Number,Customer Name,Email,metadata,plan',
      '+1 (415) 555-2671,Ada,ada@example.com,"{""tier"":""gold""}",pro',
      ',No Phone,,,',
      '12345,Bad Phone,,,',
      '+14155552672,Bad Mail,not-an-email,,',
      '+14155552673,Bad Meta,,"[1,2]",',
      '+14155552674,Broken Meta,,{oops,',
      '+1-415-555-2671,Duplicate,,,',
    ].join('\r\n');
    const response = await upload(listId, csv);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      imported: 1,
      skipped: 6,
      invalidRows: [
        { row: 3, phone: '', reason: 'Missing phone number' },
        { row: 4, phone: '12345', reason: 'Invalid phone number' },
        { row: 5, phone: '+14155552672', reason: 'Invalid email' },
        { row: 6, phone: '+14155552673', reason: 'metadata is not a JSON object' },
        { row: 7, phone: '+14155552674', reason: 'metadata is not a JSON object' },
        { row: 8, phone: '+1-415-555-2671', reason: 'Duplicate phone number in this list' },
      ],
    });
    expect(await contactsOf(listId)).toMatchObject([
      { phoneNumber: '+14155552671', name: 'Ada', email: 'ada@example.com', metadata: { tier: 'gold', plan: 'pro' } },
    ]);
  });

  it('accepts every header alias, in any case, with spaces, underscores or hyphens', async () => {
    const phones = ['phone_number', 'PHONE', 'Mobile', 'customer number', 'Customer-Number'];
    const names = ['name', 'customer_name', 'Contact Name', 'FIRST-NAME'];
    for (const [i, phoneHeader] of phones.entries()) {
      for (const [j, nameHeader] of names.entries()) {
        const listId = await newList();
        const response = await upload(listId, `${phoneHeader},${nameHeader},E-Mail\n+4420794609${i}${j},Person ${i}${j},p@example.com\n`);
        expect(response.json(), `${phoneHeader} / ${nameHeader}`).toMatchObject({ imported: 1, skipped: 0 });
        expect((await contactsOf(listId))[0]).toMatchObject({ name: `Person ${i}${j}` });
      }
    }
  });

  it('imports 500 rows and refuses 501 whole, importing nothing', async () => {
    const listId = await newList();
    const ok = await upload(listId, csvOf(500));
    expect(ok.json()).toMatchObject({ imported: 500, skipped: 0 });
    const other = await newList();
    const over = await upload(other, csvOf(501));
    expect(over.statusCode).toBe(400);
    expect(over.json().message).toBe(
      'The CSV has more than 500 contacts, the most one import takes, so nothing was imported; split it into smaller files.',
    );
    expect(await contactsOf(other)).toHaveLength(0);
  });

  it('refuses a file without a phone column, naming the accepted headers', async () => {
    const response = await upload(await newList(), 'name,email\nAda,ada@example.com\n');
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toContain('phone_number, phone, mobile, customer_number');
  });

  it('reads a UTF-8 BOM, CRLF line ends, quoted fields with commas and newlines, and skips blank lines', async () => {
    const listId = await newList();
    const csv = '\uFEFFphone,name,notes\r\n+14155550101,"Lovelace, Ada","line one\r\nline two"\r\n\r\n+14155550102,Grace,\r\n';
    const response = await upload(listId, csv);
    expect(response.json()).toEqual({ imported: 2, skipped: 0, invalidRows: [] });
    const contacts = await contactsOf(listId);
    expect(contacts[0]).toMatchObject({ name: 'Lovelace, Ada', metadata: { notes: 'line one\r\nline two' } });
    expect(contacts[1]).toMatchObject({ phoneNumber: '+14155550102', name: 'Grace' });
  });

  it('counts rows after a blank line as the spreadsheet does', async () => {
    const response = await upload(await newList(), 'phone\n+14155550201\n\nbad\n');
    expect(response.json().invalidRows).toEqual([{ row: 4, phone: 'bad', reason: 'Invalid phone number' }]);
  });

  it('counts rows after several blank lines and a multi-line field as the spreadsheet does', async () => {
    const response = await upload(await newList(), 'phone,notes\n\n\n+14155550201,"two\nlines"\n\nbad,x\n');
    expect(response.json().invalidRows).toEqual([{ row: 6, phone: 'bad', reason: 'Invalid phone number' }]);
  });

  it('refuses cheaply, naming the row, a row too long, a row of too many columns and a file of too many rows', async () => {
    const refusal = async (csv: string) => {
      const listId = await newList();
      const response = await upload(listId, csv);
      expect(response.statusCode, response.body).toBe(400);
      expect(await contactsOf(listId)).toHaveLength(0);
      return response.json() as { code: string; message: string };
    };
    // A quote never closed swallows the rest of the file into one field.
    expect(await refusal(`phone,notes\n+14155550301,ok\n+14155550302,"${'x'.repeat(70_000)}\n+14155550303,ok\n`)).toEqual(
      expect.objectContaining({
        code: 'INVALID_CSV',
        message:
          'Row 3 of the CSV is longer than 65,536 characters, so nothing was imported; check that the file is CSV, with commas between fields and its quotes closed.',
      }),
    );
    // 1,000 columns are read; 1,001 are not.
    const columns = (n: number) => ['phone', ...Array.from({ length: n - 1 }, (_, i) => `c${i}`)].join(',');
    expect((await upload(await newList(), `${columns(1000)}\n+14155550304\n`)).json()).toMatchObject({ imported: 1 });
    expect((await refusal(`phone\n+14155550305\n${columns(1001)}\n`)).message).toBe(
      'Row 3 of the CSV has 1,001 columns; at most 1,000 are read, so nothing was imported. Remove the columns you do not need.',
    );
    // Rows of empty fields are no contacts, yet each of another width than the header costs the
    // parser: reading stops after 10,000 of them.
    expect((await refusal(`phone,name,email\n+14155550306,Ada,\n${',\n'.repeat(10_001)}`)).message).toBe(
      'The CSV has more than 10,000 rows whose fields are all empty, so nothing was imported; delete the empty rows.',
    );
    expect((await upload(await newList(), `phone,name,email\n+14155550307,Ada,\n${',\n'.repeat(10_000)}`)).json()).toMatchObject({
      imported: 1,
    });
  });

  it('answers a file far over the row limit while it is still arriving over a real connection', async () => {
    // The parser stops at the 501st row while most of the upload is still on its way: the rest is
    // read and dropped, and the answer comes (it used to wait for the stopped parser forever).
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const listId = await newList();
    const rows = Array.from({ length: 40_000 }, (_, i) => `+1415${String(5_000_000 + i)},Person ${i}`).join('\n');
    const form = new FormData();
    form.append('file', new Blob([`phone,name\n${rows}\n`], { type: 'text/csv' }), 'export.csv');
    const response = await fetch(`${address}/api/v1/contact-lists/${listId}/upload`, {
      method: 'POST',
      headers: bearer(key),
      body: form,
      signal: AbortSignal.timeout(15_000),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toBe(
      'The CSV has more than 500 contacts, the most one import takes, so nothing was imported; split it into smaller files.',
    );
    expect(await contactsOf(listId)).toHaveLength(0);
  });

  it('refuses a body that is not multipart with 415 and the sentence saying how to send the CSV, whatever its type', async () => {
    const listId = await newList();
    for (const type of ['text/csv', 'text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded', 'application/json']) {
      const response = await t.app.inject({
        method: 'POST',
        url: `/api/v1/contact-lists/${listId}/upload`,
        headers: { ...bearer(key), 'content-type': type },
        payload: type === 'application/json' ? '{}' : 'phone\n+14155550101\n',
      });
      expect(response.statusCode, type).toBe(415);
      expect(response.json(), type).toMatchObject({
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'Send the CSV as multipart/form-data with the file in a field named "file".',
      });
    }
    expect(await contactsOf(listId)).toHaveLength(0);
  });

  it('skips numbers already in the list', async () => {
    const listId = await newList();
    await upload(listId, 'phone\n+14155550301\n');
    const again = await upload(listId, 'phone\n+14155550301\n+14155550302\n');
    expect(again.json()).toEqual({
      imported: 1,
      skipped: 1,
      invalidRows: [{ row: 2, phone: '+14155550301', reason: 'Duplicate phone number in this list' }],
    });
  });

  it('refuses a file over 5 MB with 413 and imports nothing', async () => {
    const listId = await newList();
    const big = Buffer.alloc(5 * 1024 * 1024 + 10, 'a');
    big.write('phone,notes\n+14155550401,', 0);
    const response = await upload(listId, big);
    expect(response.statusCode).toBe(413);
    expect(response.json().code).toBe('PAYLOAD_TOO_LARGE');
    expect(await contactsOf(listId)).toHaveLength(0);
  });

  it('refuses an empty file, malformed CSV, a wrong field name and a JSON body', async () => {
    const listId = await newList();
    expect((await upload(listId, '')).statusCode).toBe(400);
    const unclosed = await upload(listId, 'phone,name\n+14155550501,"Ada\n');
    expect(unclosed.statusCode).toBe(400);
    expect(unclosed.json().code).toBe('INVALID_CSV');
    expect((await upload(listId, 'phone\n+14155550502\n', { field: 'upload' })).statusCode).toBe(400);
    const json = await t.app.inject({
      method: 'POST',
      url: `/api/v1/contact-lists/${listId}/upload`,
      headers: bearer(key),
      payload: { file: 'x' },
    });
    expect(json.statusCode).toBe(415);
    expect(await contactsOf(listId)).toHaveLength(0);
  });

  it("answers 404 for another tenant's list", async () => {
    const listId = await newList();
    const response = await upload(listId, 'phone\n+14155550601\n', { as: otherKey });
    expect(response.statusCode).toBe(404);
    expect(await contactsOf(listId)).toHaveLength(0);
  });

  it('reads numbers without + as national numbers of defaultCountry, and only then', async () => {
    const csv = ['phone,name', '030 1234567,Berlin office', '0151 23456789,Mobile', '+1 415 555 2671,Already E.164', '12,Too short'].join(
      '\n',
    );
    const withCountry = await newList();
    const response = await upload(withCountry, csv, { query: '?defaultCountry=DE' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ imported: 3, skipped: 1, invalidRows: [{ row: 5, phone: '12', reason: 'Invalid phone number' }] });
    expect((await contactsOf(withCountry)).map((contact) => contact.phoneNumber).sort()).toEqual([
      '+14155552671',
      '+4915123456789',
      '+49301234567',
    ]);

    // Without it, a number must carry its country code, as before.
    const withoutCountry = await newList();
    const strict = await upload(withoutCountry, csv);
    expect(strict.json()).toMatchObject({ imported: 1, skipped: 3 });
  });

  it('refuses a defaultCountry that is not a known country code with 400, importing nothing', async () => {
    const listId = await newList();
    for (const country of ['de', 'XX', 'DEU']) {
      const response = await upload(listId, 'phone\n030 1234567\n', { query: `?defaultCountry=${country}` });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: '/defaultCountry' })] });
    }
    expect(await contactsOf(listId)).toHaveLength(0);
  });
});

describe('CSV columns of the same field', () => {
  it('take the first value given and keep the others in metadata under their headers', async () => {
    const listId = await newList();
    const csv = ['phone,mobile,name,first_name', '+14155551305,+14155551306,Two,Ada', ',+14155551307,,Bo'].join('\n');
    const response = await upload(listId, csv);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ imported: 2, skipped: 0 });
    expect(await contactsOf(listId)).toMatchObject([
      { phoneNumber: '+14155551305', name: 'Two', metadata: { mobile: '+14155551306', first_name: 'Ada' } },
      { phoneNumber: '+14155551307', name: 'Bo', metadata: {} },
    ]);
  });
});

describe('CSV rows the database could not store or the JSON API would refuse', () => {
  const NUL_IN = (field: string) => `${field} must not contain the NUL character (\\u0000)`;

  it('reports a row holding the NUL character (in a cell, an extra column or an escape in metadata) and imports the others', async () => {
    const listId = await newList();
    const csv = [
      'phone,name,email,notes,metadata',
      '+14155550701,Ada,,ok,',
      '+14155550702,Gr\u0000ce,,,',
      '+14155550703,Bob,bob\u0000@example.com,,',
      '+14155550704,Cy,,no\u0000te,',
      '+14155550705,Di,,,"{""k\\u0000"":1}"',
      '+14155550706,Ed,,,"{""k"":[""v\\u0000""]}"',
      '+1415555\u00000707,Flo,,,',
      '+14155550708,Gus,,,"{""k"":""v""}"',
    ].join('\n');
    const response = await upload(listId, csv);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      imported: 2,
      skipped: 6,
      invalidRows: [
        { row: 3, phone: '+14155550702', reason: NUL_IN('name') },
        { row: 4, phone: '+14155550703', reason: NUL_IN('email') },
        { row: 5, phone: '+14155550704', reason: NUL_IN('metadata') },
        { row: 6, phone: '+14155550705', reason: NUL_IN('metadata') },
        { row: 7, phone: '+14155550706', reason: NUL_IN('metadata') },
        { row: 8, phone: '+1415555\u00000707', reason: NUL_IN('phoneNumber') },
      ],
    });
    expect(await contactsOf(listId)).toMatchObject([
      { phoneNumber: '+14155550701', name: 'Ada', metadata: { notes: 'ok' } },
      { phoneNumber: '+14155550708', name: 'Gus', metadata: { k: 'v' } },
    ]);
  });

  it('reports metadata holding half a surrogate pair, which jsonb cannot store, and imports the others', async () => {
    const listId = await newList();
    const csv = [
      'phone,metadata',
      '+14155550751,"{""k"":""\\ud800""}"',
      '+14155550752,"{""\\udc00"":1}"',
      '+14155550753,"{""k"":""\\ud83d\\ude00""}"',
    ];
    const response = await upload(listId, csv.join('\n'));
    expect(response.statusCode, response.body).toBe(200);
    const reason = 'metadata must not contain half a UTF-16 surrogate pair (such as \\ud800 alone)';
    expect(response.json()).toEqual({
      imported: 1,
      skipped: 2,
      invalidRows: [
        { row: 2, phone: '+14155550751', reason },
        { row: 3, phone: '+14155550752', reason },
      ],
    });
    expect(await contactsOf(listId)).toMatchObject([{ phoneNumber: '+14155550753', metadata: { k: '\u{1F600}' } }]);
  });

  it('refuses a file whose header row holds the NUL character with 400, naming the column, and imports nothing', async () => {
    const listId = await newList();
    const response = await upload(listId, 'phone,name,no\u0000tes\n+14155550801,Ada,x\n');
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      code: 'INVALID_CSV',
      message:
        'Column 3 of the CSV header row contains the NUL character (\\u0000), which cannot be stored, so nothing was imported; remove it from the header.',
    });
    expect(await contactsOf(listId)).toHaveLength(0);
  });

  it('reports metadata nested deeper than a JSON body may be, and the list stays readable', async () => {
    const listId = await newList();
    const nested = (levels: number) => `"${'{""a"":'.repeat(levels)}1${'}'.repeat(levels)}"`;
    const csv = [
      'phone,metadata',
      `+14155550901,"{""a"":${'['.repeat(3000)}${']'.repeat(3000)}}"`,
      `+14155550902,"${'['.repeat(3000)}${']'.repeat(3000)}"`,
      `+14155550903,${nested(65)}`,
      `+14155550904,${nested(64)}`,
    ].join('\n');
    const response = await upload(listId, csv);
    expect(response.statusCode, response.body).toBe(200);
    const reason = 'metadata nests objects and arrays more than 64 levels deep';
    expect(response.json()).toEqual({
      imported: 1,
      skipped: 3,
      invalidRows: [
        { row: 2, phone: '+14155550901', reason },
        { row: 3, phone: '+14155550902', reason },
        { row: 4, phone: '+14155550903', reason },
      ],
    });
    const listed = await t.app.inject({ method: 'GET', url: `/api/v1/contact-lists/${listId}/contacts`, headers: bearer(key) });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data).toMatchObject([{ phoneNumber: '+14155550904' }]);
  });

  it('holds every field to the limit the JSON API has, reported in its words: 200 characters of name are stored, 201 are not', async () => {
    const listId = await newList();
    const csv = [
      'phone,name,email,timezone',
      `+14155551001,${'n'.repeat(200)},,`,
      `+14155551002,${'n'.repeat(201)},,`,
      `+14155551003,${'n'.repeat(20_000)},,`,
      `+14155551004,Ada,${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}.com,`,
      `+1${' '.repeat(30)}415 555 1005,Ada,,`,
      `+14155551006,Ada,,America/${'X'.repeat(60)}`,
    ].join('\n');
    const response = await upload(listId, csv);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      imported: 1,
      skipped: 5,
      invalidRows: [
        { row: 3, phone: '+14155551002', reason: 'name must be at most 200 characters long' },
        { row: 4, phone: '+14155551003', reason: 'name must be at most 200 characters long' },
        { row: 5, phone: '+14155551004', reason: 'Invalid email' },
        { row: 6, phone: `+1${' '.repeat(30)}415 555 1005`, reason: 'Invalid phone number' },
        {
          row: 7,
          phone: '+14155551006',
          reason: 'Unknown time zone; use an IANA name such as America/New_York, or a city that names one zone, such as Berlin',
        },
      ],
    });
    expect(await contactsOf(listId)).toMatchObject([{ phoneNumber: '+14155551001', name: 'n'.repeat(200) }]);
  });
});
