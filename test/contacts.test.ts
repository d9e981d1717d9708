import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, twoTenantKeys, type TestApp } from './harness.ts';

// Seed §2.2, §2.3, §4.4, §8 and contract §4, through HTTP on a real database.
let t: TestApp;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ key, otherKey } = await twoTenantKeys(t.app));
});
afterAll(() => t.close());

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, as = key) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: bearer(as), ...(payload === undefined ? {} : { payload: payload as object }) });

let listCounter = 0;
async function newList(name = `List ${++listCounter} ${randomUUID().slice(0, 8)}`) {
  const response = await api('POST', '/contact-lists', { name });
  expect(response.statusCode).toBe(201);
  return response.json() as { id: string; name: string };
}

const phone = (n: number) => `+1415555${String(n).padStart(4, '0')}`;
const phones = (count: number, from = 0) => Array.from({ length: count }, (_, i) => ({ phoneNumber: phone(from + i) }));

describe('contact lists', () => {
  it('creates an empty list with metadata and contactCount 0', async () => {
    const response = await api('POST', '/contact-lists', { name: 'Renewals', metadata: { region: 'west' } });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ name: 'Renewals', metadata: { region: 'west' }, contactCount: 0 });
    expect(response.json().createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('refuses a duplicate name in the tenant with 409, whatever the case, but not across tenants', async () => {
    await newList('Unique name');
    const again = await api('POST', '/contact-lists', { name: 'UNIQUE NAME' });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('LIST_NAME_TAKEN');
    expect((await api('POST', '/contact-lists', { name: 'Unique name' }, otherKey)).statusCode).toBe(201);
  });

  it('renames with PATCH, refusing a name taken by another list', async () => {
    const a = await newList();
    const b = await newList();
    const renamed = await api('PATCH', `/contact-lists/${a.id}`, { name: `${a.name} renamed`, metadata: { x: 1 } });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ name: `${a.name} renamed`, metadata: { x: 1 } });
    expect((await api('PATCH', `/contact-lists/${a.id}`, { name: b.name })).statusCode).toBe(409);
  });

  it('lists with search by name and contactCount', async () => {
    const list = await newList(`Searchable ${randomUUID()}`);
    await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: phones(3) });
    const found = await api('GET', `/contact-lists?search=${encodeURIComponent(list.name.slice(0, 20).toLowerCase())}`);
    expect(found.statusCode).toBe(200);
    expect(found.json().data.find((l: { id: string }) => l.id === list.id)).toMatchObject({ contactCount: 3 });
    expect((await api('GET', `/contact-lists/${list.id}`)).json().contactCount).toBe(3);
  });

  it('deletes a list and all its contacts with 204', async () => {
    const list = await newList();
    await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: phones(2) });
    const response = await api('DELETE', `/contact-lists/${list.id}`);
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect((await api('GET', `/contact-lists/${list.id}`)).statusCode).toBe(404);
    const { rows } = await t.runtime.db.query('SELECT 1 FROM contacts WHERE list_id = $1', [list.id]);
    expect(rows).toHaveLength(0);
  });
});

describe('contact count', () => {
  const counted = async (listId: string) => {
    const { rows } = await t.runtime.db.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE list_id = $1', [listId]);
    const shown = (await api('GET', `/contact-lists/${listId}`)).json().contactCount as number;
    const total = (await api('GET', `/contact-lists/${listId}/contacts?limit=1`)).json().total as number;
    return { stored: rows[0]!.n, shown, total };
  };

  it('stays equal to the rows in the list through every kind of write', async () => {
    const { id: listId } = await newList();
    const other = await newList();
    await api('POST', `/contact-lists/${listId}/contacts/bulk`, { contacts: [...phones(5), ...phones(2)] });
    await api('POST', `/contact-lists/${other.id}/contacts/bulk`, { contacts: phones(3) });
    expect(await counted(listId)).toEqual({ stored: 5, shown: 5, total: 5 });
    expect((await api('POST', `/contact-lists/${listId}/contacts`, { phoneNumber: phone(0) })).statusCode).toBe(409);
    expect((await api('POST', `/contact-lists/${listId}/contacts`, { phoneNumber: phone(9) })).statusCode).toBe(201);
    const ids = (await api('GET', `/contact-lists/${listId}/contacts`)).json().data.map((c: { id: string }) => c.id) as string[];
    expect((await api('DELETE', `/contact-lists/${listId}/contacts/${ids[0]}`)).statusCode).toBe(204);
    expect((await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: [ids[1], randomUUID()] })).statusCode).toBe(
      404,
    );
    expect((await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: [ids[1], ids[2]] })).statusCode).toBe(200);
    expect(await counted(listId)).toEqual({ stored: 3, shown: 3, total: 3 });
    expect(await counted(other.id)).toEqual({ stored: 3, shown: 3, total: 3 });
  });
});

describe('contacts', () => {
  it('adds one contact, normalising the phone number to E.164', async () => {
    const list = await newList();
    const response = await api('POST', `/contact-lists/${list.id}/contacts`, {
      phoneNumber: '+1 (415) 555-2671',
      name: 'Ada',
      email: 'ada@example.com',
      metadata: { language: 'en' },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({
      contactListId: list.id,
      phoneNumber: '+14155552671',
      name: 'Ada',
      email: 'ada@example.com',
      metadata: { language: 'en' },
    });
    // Times are ISO 8601 in UTC to the millisecond, the same wherever the contact is read.
    const { id, createdAt, updatedAt } = response.json();
    expect(createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(createdAt) - Date.now())).toBeLessThan(60_000);
    expect((await api('GET', `/contact-lists/${list.id}/contacts/${id}`)).json()).toMatchObject({ createdAt, updatedAt });
    expect((await api('GET', `/contact-lists/${list.id}/contacts?limit=5`)).json().data[0]).toMatchObject({ id, createdAt, updatedAt });
    // null is a field not given (as PATCH and a bulk add have it), not a wrong type.
    const bare = await api('POST', `/contact-lists/${list.id}/contacts`, {
      phoneNumber: '+14155552672',
      name: null,
      email: null,
      timezone: null,
    });
    expect(bare.statusCode, bare.body).toBe(201);
    expect(bare.json()).toMatchObject({ name: null, email: null, metadata: {} });
  });

  it('refuses a phone number already in the list with 409, and an invalid one or e-mail with 400', async () => {
    const list = await newList();
    expect((await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(1) })).statusCode).toBe(201);
    expect((await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(1) })).statusCode).toBe(409);
    const badPhone = await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: '555-1234' });
    expect(badPhone.statusCode).toBe(400);
    expect(badPhone.json().message).toBe('Invalid phone number.');
    expect((await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(2), email: 'nope' })).statusCode).toBe(400);
  });

  it('gets, updates and deletes one contact', async () => {
    const list = await newList();
    const contact = (await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(5), name: 'Old' })).json();
    expect((await api('GET', `/contact-lists/${list.id}/contacts/${contact.id}`)).json().name).toBe('Old');
    const updated = await api('PATCH', `/contact-lists/${list.id}/contacts/${contact.id}`, { name: null, phoneNumber: '+1 415 555 0006' });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({ name: null, phoneNumber: phone(6) });
    expect((await api('DELETE', `/contact-lists/${list.id}/contacts/${contact.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/contact-lists/${list.id}/contacts/${contact.id}`)).statusCode).toBe(404);
  });
});

describe('bulk add', () => {
  it('imports 1,000 contacts and refuses 0 or 1,001 with 400', async () => {
    const list = await newList();
    const full = await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: phones(1000) });
    expect(full.statusCode).toBe(200);
    expect(full.json()).toEqual({ imported: 1000, skipped: 0, invalidRows: [] });
    const over = await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: phones(1001, 2000) });
    expect(over.statusCode).toBe(400);
    expect(over.json().message).toBe("Field 'contacts' must have at most 1000 items.");
    expect((await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: [] })).statusCode).toBe(400);
    expect((await api('GET', `/contact-lists/${list.id}`)).json().contactCount).toBe(1000);
  });

  it('reports each invalid row with its reason and imports the rest', async () => {
    const list = await newList();
    await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(9) });
    const result = await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
      contacts: [
        { phoneNumber: phone(1), name: 'ok' },
        { name: 'no phone' },
        { phoneNumber: 'abc' },
        { phoneNumber: phone(2), email: 'broken@' },
        { phoneNumber: phone(3), name: 'n'.repeat(201) },
        { phoneNumber: '+1 415 555 0001' },
        { phoneNumber: phone(9) },
      ],
    });
    expect(result.statusCode).toBe(200);
    expect(result.json()).toEqual({
      imported: 1,
      skipped: 6,
      invalidRows: [
        { row: 2, phone: '', reason: 'Missing phone number' },
        { row: 3, phone: 'abc', reason: 'Invalid phone number' },
        { row: 4, phone: phone(2), reason: 'Invalid email' },
        { row: 5, phone: phone(3), reason: 'name must be at most 200 characters long' },
        { row: 6, phone: '+1 415 555 0001', reason: 'Duplicate phone number in this list' },
        { row: 7, phone: phone(9), reason: 'Duplicate phone number in this list' },
      ],
    });
  });

  it('refuses with 400 an item of the wrong type or with an unknown property, naming its path, and imports nothing', async () => {
    const list = await newList();
    const bulk = (contacts: unknown[]) => api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts });
    const unknown = await bulk([{ phoneNumber: phone(1) }, { phoneNumber: '+14155550504', zzz: 1 }]);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: "Field 'contacts.1.zzz' is not an accepted property.",
      details: [{ path: '/contacts/1/zzz', message: 'is not an accepted property' }],
    });
    const wrongTypes = await bulk([
      { phoneNumber: phone(2), name: 5 },
      { phoneNumber: 1 },
      { phoneNumber: phone(3), metadata: 'x' },
      { phoneNumber: phone(5) },
    ]);
    expect(wrongTypes.statusCode).toBe(400);
    expect(wrongTypes.json().message).toBe("Field 'contacts.0.name' must be a string or null.");
    expect(wrongTypes.json().details).toEqual([
      { path: '/contacts/0/name', message: 'must be a string or null' },
      { path: '/contacts/1/phoneNumber', message: 'must be a string' },
      { path: '/contacts/2/metadata', message: 'must be an object or null' },
    ]);
    expect((await api('GET', `/contact-lists/${list.id}`)).json().contactCount).toBe(0);
  });
});

describe('pagination of contacts', () => {
  let listId: string;
  beforeAll(async () => {
    listId = (await newList()).id;
    await api('POST', `/contact-lists/${listId}/contacts/bulk`, { contacts: phones(230) });
  });

  it('returns every contact when neither page nor limit is given', async () => {
    const body = (await api('GET', `/contact-lists/${listId}/contacts`)).json();
    expect(body).toMatchObject({ total: 230, page: 1, limit: 230 });
    expect(body.data).toHaveLength(230);
  });

  it('defaults to 25 per page when only page is given, in insertion order', async () => {
    const body = (await api('GET', `/contact-lists/${listId}/contacts?page=2`)).json();
    expect(body).toMatchObject({ total: 230, page: 2, limit: 25 });
    expect(body.data[0].phoneNumber).toBe(phone(25));
  });

  it('accepts limit 200 and refuses 201 and 0', async () => {
    const body = (await api('GET', `/contact-lists/${listId}/contacts?limit=200`)).json();
    expect(body.data).toHaveLength(200);
    expect((await api('GET', `/contact-lists/${listId}/contacts?limit=201`)).statusCode).toBe(400);
    expect((await api('GET', `/contact-lists/${listId}/contacts?limit=0`)).statusCode).toBe(400);
    expect((await api('GET', `/contact-lists/${listId}/contacts?page=0`)).statusCode).toBe(400);
  });

  it('shows each contact in a page exactly as it is read alone: the JSON the database writes is the API shape', async () => {
    const list = await newList();
    const awkward = [
      {
        phoneNumber: phone(1),
        name: 'Zoë "Z" O\'Neil \\ tab\there\nnew line \u0001 😀',
        email: 'zoe@example.com',
        metadata: { nested: { list: [1, 2.5, 'x', null, true], quote: '"' }, big: 12345678901, emptyList: [], 'key with "quote"': 'ü' },
        timezone: 'Europe/Berlin',
      },
      { phoneNumber: phone(2), name: null, email: null },
      { phoneNumber: phone(3), name: '</script><b>', metadata: { deep: { deeper: { deepest: 'a\u2028b' } } } },
    ];
    for (const contact of awkward) expect((await api('POST', `/contact-lists/${list.id}/contacts`, contact)).statusCode).toBe(201);
    for (const url of [
      `/contact-lists/${list.id}/contacts`,
      `/contact-lists/${list.id}/contacts?limit=10`,
      `/contact-lists/${list.id}/contacts?search=zo`,
    ]) {
      const response = await api('GET', url);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      const body = response.json();
      expect(body.data.length).toBeGreaterThan(0);
      for (const listed of body.data) {
        const alone = await api('GET', `/contact-lists/${list.id}/contacts/${listed.id}`);
        expect(listed).toStrictEqual(alone.json());
        // The time zone only when set, as the contact read alone has it.
        expect('timezone' in listed).toBe(listed.phoneNumber === phone(1));
      }
    }
    const first = (await api('GET', `/contact-lists/${list.id}/contacts?limit=1`)).json();
    expect(first).toStrictEqual({
      data: [expect.objectContaining({ ...awkward[0], contactListId: list.id })],
      total: 3,
      page: 1,
      limit: 1,
    });
  });

  it('returns an empty page past the end', async () => {
    const body = (await api('GET', `/contact-lists/${listId}/contacts?page=3&limit=200`)).json();
    expect(body).toMatchObject({ total: 230, page: 3, limit: 200, data: [] });
  });

  it('searches phone, name and email in any case, counting the matches, wildcards taken literally', async () => {
    const searched = await newList();
    await api('POST', `/contact-lists/${searched.id}/contacts/bulk`, {
      contacts: [
        { phoneNumber: '+14155550111', name: 'Ada Lovelace', email: 'ada@example.com' },
        { phoneNumber: '+14155550112', name: 'Grace Hopper', email: 'grace@navy.example' },
        { phoneNumber: '+14155550999', name: '100% Linus', email: null },
      ],
    });
    const search = async (text: string, paging = '') =>
      (await api('GET', `/contact-lists/${searched.id}/contacts?search=${encodeURIComponent(text)}${paging}`)).json();
    expect((await search('ada')).data.map((c: { name: string }) => c.name)).toEqual(['Ada Lovelace']);
    expect((await search('NAVY')).data.map((c: { name: string }) => c.name)).toEqual(['Grace Hopper']);
    const byPhone = await search('5550', '&limit=1');
    expect(byPhone).toMatchObject({ total: 3, limit: 1 });
    expect(byPhone.data).toHaveLength(1);
    expect((await search('%')).data.map((c: { name: string }) => c.name)).toEqual(['100% Linus']);
    expect((await search('nobody')).total).toBe(0);
  });
});

describe('pages asked at once', () => {
  it("answers each from its own list and tenant: pages, searches, an empty page, a missing list and another tenant's list", async () => {
    const mine = await newList();
    await api('POST', `/contact-lists/${mine.id}/contacts/bulk`, {
      contacts: [{ phoneNumber: phone(9001), name: 'Ada Lovelace' }, ...phones(30, 9100)],
    });
    const theirs = (await api('POST', '/contact-lists', { name: `Theirs ${randomUUID()}` }, otherKey)).json() as { id: string };
    await api('POST', `/contact-lists/${theirs.id}/contacts/bulk`, { contacts: phones(3, 9500) }, otherKey);
    // Asked in the same turn, these share one statement; each answer must still be its own.
    const asked: [string, string][] = [
      [`/contact-lists/${mine.id}/contacts?limit=2`, key],
      [`/contact-lists/${theirs.id}/contacts?limit=2`, otherKey],
      [`/contact-lists/${mine.id}/contacts?limit=2&page=2`, key],
      [`/contact-lists/${mine.id}/contacts?limit=5&search=ada`, key],
      [`/contact-lists/${mine.id}/contacts?limit=2`, key],
      [`/contact-lists/${theirs.id}/contacts?limit=2`, key],
      [`/contact-lists/${randomUUID()}/contacts?limit=2`, key],
      [`/contact-lists/${mine.id}/contacts?limit=25&page=3`, key],
    ];
    const answers = await Promise.all(asked.map(([url, as]) => api('GET', url, undefined, as)));
    const view = answers.map((response) => {
      if (response.statusCode !== 200) return response.statusCode;
      const body = response.json() as { total: number; data: { phoneNumber: string }[] };
      return [body.total, body.data.map((contact) => contact.phoneNumber)];
    });
    expect(view).toEqual([
      [31, [phone(9001), phone(9100)]],
      [3, [phone(9500), phone(9501)]],
      [31, [phone(9101), phone(9102)]],
      [1, [phone(9001)]],
      [31, [phone(9001), phone(9100)]],
      404,
      404,
      [31, []],
    ]);
  });
});

describe('batch delete', () => {
  async function listWith(count: number) {
    const list = await newList();
    await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: phones(count) });
    const ids = (await api('GET', `/contact-lists/${list.id}/contacts`)).json().data.map((c: { id: string }) => c.id) as string[];
    return { listId: list.id, ids };
  }

  it('deletes 1,000 ids at once and refuses 0 or 1,001 with 400', async () => {
    const { listId, ids } = await listWith(1000);
    expect((await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: [] })).statusCode).toBe(400);
    const over = await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: [...ids, randomUUID()] });
    expect(over.statusCode).toBe(400);
    const response = await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: ids });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ deleted: 1000 });
  });

  it('deletes nothing when one id is unknown', async () => {
    const { listId, ids } = await listWith(3);
    const response = await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: [...ids, randomUUID()] });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('CONTACTS_NOT_FOUND');
    expect((await api('GET', `/contact-lists/${listId}`)).json().contactCount).toBe(3);
  });

  it('deletes nothing when one id belongs to another list', async () => {
    const a = await listWith(2);
    const b = await listWith(1);
    const response = await api('POST', `/contact-lists/${a.listId}/contacts/delete-batch`, { contactIds: [a.ids[0], b.ids[0]] });
    expect(response.statusCode).toBe(404);
    expect((await api('GET', `/contact-lists/${a.listId}`)).json().contactCount).toBe(2);
    expect((await api('GET', `/contact-lists/${b.listId}`)).json().contactCount).toBe(1);
  });

  it('refuses ids that are not uuids with 400', async () => {
    const { listId } = await listWith(1);
    const response = await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds: ['42'] });
    expect(response.statusCode).toBe(400);
    expect(response.json().details[0].path).toBe('/contactIds/0');
  });
});

describe('tenant isolation', () => {
  it("answers 404 on every route for another tenant's list and contact", async () => {
    const list = await newList();
    const contact = (await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(7) })).json();
    const routes: [Parameters<typeof api>[0], string, unknown?][] = [
      ['GET', `/contact-lists/${list.id}`],
      ['PATCH', `/contact-lists/${list.id}`, { name: 'stolen' }],
      ['DELETE', `/contact-lists/${list.id}`],
      ['POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: phone(8) }],
      ['POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts: phones(1, 8) }],
      ['GET', `/contact-lists/${list.id}/contacts`],
      ['POST', `/contact-lists/${list.id}/contacts/delete-batch`, { contactIds: [contact.id] }],
      ['GET', `/contact-lists/${list.id}/contacts/${contact.id}`],
      ['PATCH', `/contact-lists/${list.id}/contacts/${contact.id}`, { name: 'x' }],
      ['DELETE', `/contact-lists/${list.id}/contacts/${contact.id}`],
    ];
    for (const [method, url, payload] of routes) {
      const response = await api(method, url, payload, otherKey);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
    }
    const listed = (await api('GET', '/contact-lists?limit=200', undefined, otherKey)).json().data.map((l: { id: string }) => l.id);
    expect(listed).not.toContain(list.id);
    const mine = (await api('GET', `/contact-lists/${list.id}`)).json();
    expect(mine).toMatchObject({ name: list.name, contactCount: 1 });
  });
});
