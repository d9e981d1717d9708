import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// Whatever a client sends, the contacts routes answer 2xx or 4xx, and an import is all or what it says.
let t: TestApp;
let key: string;
let listId: string;

beforeAll(async () => {
  t = await startTestApp();
  key = (await createKey(t.app, (await signUp(t.app)).token)).key;
  listId = (
    await t.app.inject({ method: 'POST', url: '/api/v1/contact-lists', headers: bearer(key), payload: { name: 'property' } })
  ).json().id;
});
afterAll(() => t.close());

const contactCount = async () =>
  (await t.app.inject({ method: 'GET', url: `/api/v1/contact-lists/${listId}`, headers: bearer(key) })).json().contactCount as number;

const csvCell = fc.oneof(
  fc.constantFrom(
    '+14155550100',
    '+1 (415) 555-0101',
    '+442079460958',
    'abc',
    '',
    'ada@example.com',
    '{"a":1}',
    '[1]',
    '"',
    '""',
    ',',
    '\n',
    '\r\n',
    '\uFEFF',
  ),
  fc.string({ maxLength: 12 }),
);
const csvText = fc
  .tuple(
    fc.array(fc.constantFrom('phone', 'Phone Number', 'mobile', 'name', 'email', 'metadata', 'notes', 'x y', ''), {
      minLength: 0,
      maxLength: 5,
    }),
    fc.array(fc.array(csvCell, { maxLength: 6 }), { maxLength: 8 }),
    fc.constantFrom('\n', '\r\n'),
  )
  .map(([header, rows, lineEnd]) => [header, ...rows].map((cells) => cells.join(',')).join(lineEnd));
const csvBytes = fc.oneof(
  csvText.map((text) => Buffer.from(text)),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
);

function multipart(content: Buffer) {
  const boundary = `----fc${randomUUID()}`;
  return {
    payload: Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\n\r\n`),
      content,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

describe('contacts under random input', () => {
  it('never answers 5xx to random CSV bytes, and imports exactly what it reports or nothing', async () => {
    await fc.assert(
      fc.asyncProperty(csvBytes, async (bytes) => {
        const before = await contactCount();
        const { payload, contentType } = multipart(bytes);
        const response = await t.app.inject({
          method: 'POST',
          url: `/api/v1/contact-lists/${listId}/upload`,
          headers: { ...bearer(key), 'content-type': contentType },
          payload,
        });
        expect(response.statusCode).toBeLessThan(500);
        const after = await contactCount();
        if (response.statusCode === 200) {
          const result = response.json();
          expect(after - before).toBe(result.imported);
          expect(result.skipped).toBe(result.invalidRows.length);
        } else {
          expect(response.statusCode).toBeGreaterThanOrEqual(400);
          expect(after).toBe(before);
          expect(typeof response.json().message).toBe('string');
        }
      }),
      { numRuns: 80 },
    );
  });

  it('never answers 5xx to random JSON bodies on any contacts route', async () => {
    const contactId = (
      await t.app.inject({
        method: 'POST',
        url: `/api/v1/contact-lists/${listId}/contacts`,
        headers: bearer(key),
        payload: { phoneNumber: '+14155550999' },
      })
    ).json().id;
    const routes: ['POST' | 'PATCH', string][] = [
      ['POST', '/api/v1/contact-lists'],
      ['PATCH', `/api/v1/contact-lists/${listId}`],
      ['POST', `/api/v1/contact-lists/${listId}/contacts`],
      ['POST', `/api/v1/contact-lists/${listId}/contacts/bulk`],
      ['POST', `/api/v1/contact-lists/${listId}/contacts/delete-batch`],
      ['PATCH', `/api/v1/contact-lists/${listId}/contacts/${contactId}`],
    ];
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record({ name: fc.jsonValue(), metadata: fc.jsonValue() }, { requiredKeys: [] }),
      fc.record({ phoneNumber: fc.oneof(fc.string(), fc.jsonValue()), email: fc.jsonValue(), name: fc.jsonValue() }, { requiredKeys: [] }),
      fc.record({
        contacts: fc.array(fc.oneof(fc.jsonValue(), fc.record({ phoneNumber: fc.string(), metadata: fc.jsonValue() })), { maxLength: 5 }),
      }),
      fc.record({ contactIds: fc.array(fc.oneof(fc.uuid(), fc.string()), { maxLength: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), body, async ([method, url], payload) => {
        const response = await t.app.inject({
          method,
          url,
          headers: { ...bearer(key), 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
        expect(response.statusCode, `${method} ${url} ${JSON.stringify(payload)} -> ${response.body}`).toBeLessThan(500);
      }),
      { numRuns: 200 },
    );
  });
});
