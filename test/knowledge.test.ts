import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { addJsonSource, createBase } from '../src/modules/knowledge/service.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { freeLoopbackPort, listenOnLoopback } from '../src/providers/fake-server.ts';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { settled, uploadSource, type UploadedFile } from './knowledge-fixtures.ts';
import { apiAs } from './voice-fixtures.ts';

// Contract §7: knowledge bases, sources of every type processed by a real job on a real database,
// hybrid retrieval, and every way a source fails, with the reason it gives.
const FIXTURES = new URL('./fixtures/knowledge/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, FIXTURES));

let t: TestApp;
let site: { url: string; close(): Promise<void> };
/** The pages the local site serves: path → [status, content type, body]. */
const pages: Record<string, [number, string, string | Buffer]> = {};

beforeAll(async () => {
  site = await listenOnLoopback(
    createServer((req, res) => {
      const [status, type, body] = pages[req.url ?? '/'] ?? [404, 'text/plain', 'not found'];
      res.writeHead(status, { 'content-type': type }).end(body);
    }),
  );
  // Only this app reaches the loopback site; the address rule is tested on one that keeps it.
  t = await startTestApp({ env: { ALLOW_PRIVATE_URLS: '1' } });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
});
afterAll(async () => {
  await t?.close();
  await site?.close();
});

type Api = ReturnType<typeof apiAs>;

async function tenant() {
  const session = (await signUp(t.app)).token;
  const key = (await createKey(t.app, session)).key;
  return { session, key, api: apiAs(t.app, key) };
}

async function newBase(api: Api, name = `Base ${Math.random().toString(36).slice(2, 8)}`) {
  const response = await api('POST', '/knowledge-bases', { name });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string; name: string };
}

/** A multipart/form-data upload as a browser sends it: the fields, then the file. */
const upload = (key: string, baseId: string, fields: Record<string, string>, file?: UploadedFile) =>
  uploadSource(t.app, key, baseId, fields, file);

async function addText(api: Api, baseId: string, sourceName: string, rawText: string) {
  const response = await api('POST', `/knowledge-bases/${baseId}/sources`, { sourceType: 'text', sourceName, rawText });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string };
}

const texts = async (api: Api, baseId: string, query: string, topK = 5) => {
  const response = await api('POST', `/knowledge-bases/${baseId}/query`, { query, topK });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json().results as { text: string }[]).map((r) => r.text);
};

describe('knowledge bases', () => {
  it('creates, reads, lists, renames and deletes a base; names are unique in the tenant', async () => {
    const { api } = await tenant();
    const created = await api('POST', '/knowledge-bases', { name: 'Clinic FAQ', description: 'What patients ask' });
    expect(created.statusCode).toBe(201);
    const base = created.json();
    expect(base).toEqual({
      id: expect.any(String),
      name: 'Clinic FAQ',
      description: 'What patients ask',
      sourceCount: 0,
      chunkCount: 0,
      createdAt: expect.stringMatching(/Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
    expect((await api('GET', `/knowledge-bases/${base.id}`)).json()).toEqual(base);
    const duplicate = await api('POST', '/knowledge-bases', { name: 'Clinic FAQ' });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().code).toBe('KNOWLEDGE_BASE_NAME_TAKEN');
    await newBase(api, 'Second');
    const list = (await api('GET', '/knowledge-bases?limit=1')).json();
    expect(list).toMatchObject({ total: 2, page: 1, limit: 1 });
    expect(list.data[0].name).toBe('Second');
    const renamed = await api('PATCH', `/knowledge-bases/${base.id}`, { name: 'Clinic answers', description: null });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'Clinic answers', description: null });
    expect((await api('PATCH', `/knowledge-bases/${base.id}`, { name: 'Second' })).statusCode).toBe(409);
    expect((await api('DELETE', `/knowledge-bases/${base.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/knowledge-bases/${base.id}`)).statusCode).toBe(404);
  });

  it('refuses malformed bodies with 400 and the field at fault', async () => {
    const { api } = await tenant();
    expect((await api('POST', '/knowledge-bases', {})).json().details[0].path).toBe('/name');
    expect((await api('POST', '/knowledge-bases', { name: 'x', color: 'red' })).json().details[0].path).toBe('/color');
    expect((await api('POST', '/knowledge-bases', { name: 'x'.repeat(201) })).statusCode).toBe(400);
    // Only spaces would be stored as an empty name once trimmed.
    expect((await api('POST', '/knowledge-bases', { name: ' \t ' })).json().message).toBe(
      "Field 'name' must be some text, not only spaces.",
    );
    const base = await newBase(api);
    expect((await api('PATCH', `/knowledge-bases/${base.id}`, { name: '   ' })).statusCode).toBe(400);
    const post = (body: object) => api('POST', `/knowledge-bases/${base.id}/sources`, body);
    const noText = await post({ sourceType: 'text', sourceName: 'Empty' });
    expect(noText.statusCode).toBe(400);
    expect(noText.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: "Field 'rawText' is required when sourceType is text.",
      details: [{ path: '/rawText' }],
    });
    expect((await post({ sourceType: 'text', sourceName: 'Blank', rawText: '  \n ' })).json()).toMatchObject({
      message: "Field 'rawText' has only spaces and line breaks; give the text to index.",
      details: [{ path: '/rawText' }],
    });
    expect((await post({ sourceType: 'text', sourceName: '   ', rawText: 'hello' })).json()).toMatchObject({
      message: "Field 'sourceName' must be some text, not only spaces.",
    });
    expect((await api('GET', `/knowledge-bases/${base.id}/sources`)).json().total).toBe(0);
    const source = (await post({ sourceType: 'text', sourceName: 'Hello', rawText: 'hello' })).json();
    const refresh = (body: unknown) => api('POST', `/knowledge-bases/${base.id}/sources/${source.id}/refresh`, body as object);
    expect((await refresh({ x: 1 })).json().details[0].path).toBe('/x');
    expect((await refresh({})).statusCode).toBe(202);
    expect((await post({ sourceType: 'url', sourceName: 'No url' })).json().details[0].path).toBe('/url');
    expect((await post({ sourceType: 'url', sourceName: 'Ftp', url: 'ftp://example.com/a.txt' })).json().message).toBe(
      "Field 'url' must use http or https, not ftp.",
    );
    expect((await post({ sourceType: 'url', sourceName: 'Bad', url: 'not a url' })).statusCode).toBe(400);
    expect((await post({ sourceType: 'pdf', sourceName: 'Odd' })).json().details[0].path).toBe('/sourceType');
    expect((await post({ sourceType: 'text', rawText: 'hello' })).json().details[0].path).toBe('/sourceName');
    const fileAsJson = await post({ sourceType: 'file', sourceName: 'File' });
    expect(fileAsJson.statusCode).toBe(415);
    expect(fileAsJson.json().message).toContain('multipart/form-data');
    const query = (body: object) => api('POST', `/knowledge-bases/${base.id}/query`, body);
    expect((await query({ query: '' })).statusCode).toBe(400);
    expect((await query({ query: 'x', topK: 0 })).statusCode).toBe(400);
    expect((await query({ query: 'x', topK: 51 })).json().details[0].path).toBe('/topK');
    expect((await query({ query: 'x', topK: 50 })).statusCode).toBe(200);
  });
});

describe('sources', () => {
  it('indexes a text source: PROCESSING, then READY with its chunks, found by a query, announced by a webhook event', async () => {
    const session = (await signUp(t.app)).token;
    const subscriber = await createKey(t.app, session, { webhookUrl: 'https://hooks.example.com/callforge' });
    const api = apiAs(t.app, subscriber.key);
    const base = await newBase(api);
    const created = await api('POST', `/knowledge-bases/${base.id}/sources`, {
      sourceType: 'text',
      sourceName: 'Refunds',
      rawText:
        '# Refunds\n\nRefunds reach your card within five business days. Store credit is instant.\n\n# Parking\n\nVisitors park free in the garage on Elm Street.',
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      knowledgeBaseId: base.id,
      sourceName: 'Refunds',
      sourceType: 'text',
      status: 'PROCESSING',
      chunkCount: 0,
      error: null,
    });
    const ready = await settled(api, base.id, created.json().id);
    expect(ready).toMatchObject({ status: 'READY', error: null, processedAt: expect.stringMatching(/Z$/) });
    expect(ready.chunkCount).toBe(2);
    expect((await api('GET', `/knowledge-bases/${base.id}`)).json()).toMatchObject({ sourceCount: 1, chunkCount: 2 });

    const answer = (await api('POST', `/knowledge-bases/${base.id}/query`, { query: 'Where can I leave my car?', topK: 1 })).json();
    expect(answer.results).toEqual([
      {
        chunkId: expect.any(String),
        sourceId: ready.id,
        sourceName: 'Refunds',
        text: expect.stringContaining('Elm Street'),
        score: expect.any(Number),
      },
    ]);
    expect(answer.results[0].score).toBeGreaterThan(0);

    const events = (await api('GET', '/webhook-deliveries?eventType=knowledge_source.processed')).json();
    expect(events.total).toBe(1);
    expect(events.data[0].payload.data).toMatchObject({ id: ready.id, status: 'READY', chunkCount: 2 });
  });

  it('indexes a PDF, a DOCX, an HTML page, a Markdown file and a text file from real fixture files', async () => {
    const { api, key } = await tenant();
    const base = await newBase(api);
    const files = [
      {
        name: 'handbook.pdf',
        type: 'application/pdf',
        phrase: 'free parking behind the building',
        query: 'Is there parking at the clinic?',
      },
      {
        name: 'handbook.docx',
        type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        phrase: 'Bring your insurance card to every visit',
        query: 'What should I bring to my visit?',
      },
      {
        name: 'page.html',
        type: 'text/html',
        phrase: 'Our helpline answers within two minutes',
        query: 'How fast does the helpline answer?',
      },
      {
        name: 'notes.md',
        type: 'text/markdown',
        phrase: 'Invoices are sent on the first working day of the month',
        query: 'When are invoices sent?',
      },
    ];
    for (const file of files) {
      const response = await upload(
        key,
        base.id,
        { sourceType: 'file', sourceName: file.name },
        { name: file.name, type: file.type, bytes: fixture(file.name) },
      );
      expect(response.statusCode, response.body).toBe(201);
      expect(response.json()).toMatchObject({ sourceType: 'file', fileName: file.name, status: 'PROCESSING' });
      const ready = await settled(api, base.id, response.json().id);
      expect(ready, `${file.name}: ${ready.error}`).toMatchObject({ status: 'READY' });
      expect((await texts(api, base.id, file.query, 3)).join('\n')).toContain(file.phrase);
    }
    const plain = await upload(
      key,
      base.id,
      { sourceName: 'Plain', sourceType: 'file' },
      { name: 'hours.txt', type: 'text/plain', bytes: Buffer.from('The front desk opens at 7:30 on Saturdays.') },
    );
    expect(await settled(api, base.id, plain.json().id)).toMatchObject({ status: 'READY', chunkCount: 1 });
    const html = (await texts(api, base.id, 'helpline', 5)).join('\n');
    expect(html).not.toContain('<');
    expect(html).not.toMatch(/trackVisitor|Home \| Pricing/);
  });

  it('refuses an upload of two files with a 400 that says so, storing nothing', async () => {
    const { api, key } = await tenant();
    const base = await newBase(api);
    const boundary = '----two-files';
    const part = (name: string, value: string, filename?: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"\r\nContent-Type: text/plain` : ''}\r\n\r\n${value}\r\n`;
    const response = await t.app.inject({
      method: 'POST',
      url: `/api/v1/knowledge-bases/${base.id}/sources`,
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload:
        part('sourceType', 'file') +
        part('sourceName', 'Two') +
        part('file', 'One.', 'one.txt') +
        part('file', 'Two.', 'two.txt') +
        `--${boundary}--\r\n`,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'Send exactly one file, in the multipart field named "file".',
      details: [{ path: '/file', message: 'is one file too many' }],
    });
    expect((await api('GET', `/knowledge-bases/${base.id}/sources`)).json().total).toBe(0);
    const extra = await upload(
      key,
      base.id,
      { sourceType: 'file', sourceName: 'Extra', color: 'red' },
      { name: 'one.txt', type: 'text/plain', bytes: Buffer.from('One.') },
    );
    expect(extra.statusCode).toBe(400);
    expect(extra.json()).toMatchObject({ message: "Field 'color' is not an accepted property.", details: [{ path: '/color' }] });
    expect((await api('GET', `/knowledge-bases/${base.id}/sources`)).json().total).toBe(0);
  });

  // A 10 MB file is parsed by the parsing child (seconds on a loaded machine).
  it(
    'refuses an empty file, an unsupported type, an oversized file and a malformed upload before storing anything',
    { timeout: 90_000 },
    async () => {
      const { api, key } = await tenant();
      const base = await newBase(api);
      const empty = await upload(
        key,
        base.id,
        { sourceType: 'file', sourceName: 'Empty' },
        { name: 'empty.txt', type: 'text/plain', bytes: Buffer.alloc(0) },
      );
      expect(empty.statusCode).toBe(400);
      expect(empty.json()).toMatchObject({ code: 'EMPTY_FILE', message: '"empty.txt" is empty; upload a file with text in it.' });
      const exe = await upload(
        key,
        base.id,
        { sourceType: 'file', sourceName: 'Tool' },
        { name: 'setup.exe', type: 'application/octet-stream', bytes: Buffer.from('MZ') },
      );
      expect(exe.statusCode).toBe(415);
      expect(exe.json().message).toBe('"setup.exe" is not a supported document; upload a PDF, DOCX, TXT, Markdown (.md) or HTML file.');
      const limit = 10 * 1024 * 1024;
      // Exactly at the limit is accepted (and, not being a PDF inside, fails quickly in the job).
      const atLimit = await upload(
        key,
        base.id,
        { sourceType: 'file', sourceName: 'Big' },
        { name: 'big.pdf', type: 'application/pdf', bytes: Buffer.alloc(limit, 'a') },
      );
      expect(atLimit.statusCode).toBe(201);
      expect((await settled(api, base.id, atLimit.json().id)).status).toBe('FAILED');
      const over = await upload(
        key,
        base.id,
        { sourceType: 'file', sourceName: 'Bigger' },
        { name: 'bigger.txt', type: 'text/plain', bytes: Buffer.alloc(limit + 1, 'a ') },
      );
      expect(over.statusCode).toBe(413);
      expect(over.json().message).toBe('The file is larger than 10 MB; split it or upload a smaller one.');
      expect((await upload(key, base.id, { sourceType: 'file', sourceName: 'No file' })).json().code).toBe('FILE_REQUIRED');
      expect(
        (
          await upload(
            key,
            base.id,
            { sourceType: 'text', sourceName: 'Wrong' },
            { name: 'a.txt', type: 'text/plain', bytes: Buffer.from('a') },
          )
        ).json().details[0].path,
      ).toBe('/sourceType');
      expect(
        (await upload(key, base.id, { sourceType: 'file' }, { name: 'a.txt', type: 'text/plain', bytes: Buffer.from('a') })).json()
          .details[0].path,
      ).toBe('/sourceName');
      expect((await api('GET', `/knowledge-bases/${base.id}/sources`)).json().total).toBe(1);
    },
  );

  it('fails a file with no extractable text and a corrupt document, saying why', async () => {
    const { api, key } = await tenant();
    const base = await newBase(api);
    const blank = await upload(
      key,
      base.id,
      { sourceType: 'file', sourceName: 'Scan' },
      { name: 'blank.pdf', type: 'application/pdf', bytes: fixture('blank.pdf') },
    );
    const failed = await settled(api, base.id, blank.json().id);
    expect(failed).toMatchObject({ status: 'FAILED', chunkCount: 0 });
    expect(failed.error).toMatch(/no extractable text/i);
    const corrupt = await upload(
      key,
      base.id,
      { sourceType: 'file', sourceName: 'Broken' },
      { name: 'broken.docx', type: 'application/octet-stream', bytes: Buffer.from('this is not a zip archive') },
    );
    const broken = await settled(api, base.id, corrupt.json().id);
    expect(broken.status).toBe('FAILED');
    expect(broken.error).toMatch(/DOCX/);
  });

  it('indexes a URL, refreshes it to pick up new content, and fails on 4xx, 5xx, unreachable hosts and unsupported types', async () => {
    const { api } = await tenant();
    const base = await newBase(api);
    pages['/faq'] = [200, 'text/html; charset=utf-8', '<html><body><h1>FAQ</h1><p>Our kiosk sells tickets until 21:00.</p></body></html>'];
    const created = await api('POST', `/knowledge-bases/${base.id}/sources`, {
      sourceType: 'url',
      sourceName: 'FAQ',
      url: `${site.url}/faq`,
    });
    expect(created.json()).toMatchObject({ sourceType: 'url', url: `${site.url}/faq`, status: 'PROCESSING' });
    expect(await settled(api, base.id, created.json().id)).toMatchObject({ status: 'READY', chunkCount: 1 });
    expect((await texts(api, base.id, 'When does the kiosk close?')).join()).toContain('until 21:00');

    pages['/faq'] = [200, 'text/html', '<html><body><h1>FAQ</h1><p>The kiosk now sells tickets until 23:00.</p></body></html>'];
    const refreshed = await api('POST', `/knowledge-bases/${base.id}/sources/${created.json().id}/refresh`);
    expect(refreshed.statusCode).toBe(202);
    expect(refreshed.json().status).toBe('PROCESSING');
    expect(await settled(api, base.id, created.json().id)).toMatchObject({ status: 'READY', chunkCount: 1 });
    const now = (await texts(api, base.id, 'When does the kiosk close?')).join();
    expect(now).toContain('until 23:00');
    expect(now).not.toContain('21:00');

    // The fixture documents themselves, served as a web site serves them.
    pages['/help.html'] = [200, 'text/html; charset=utf-8', fixture('page.html')];
    pages['/handbook.pdf'] = [200, 'application/pdf', fixture('handbook.pdf')];
    pages['/handbook.docx'] = [200, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', fixture('handbook.docx')];
    for (const [path, phrase, question] of [
      ['/help.html', 'Our helpline answers within two minutes', 'How fast does the helpline answer?'],
      ['/handbook.pdf', 'free parking behind the building', 'Is there parking at the clinic?'],
      ['/handbook.docx', 'Bring your insurance card to every visit', 'What should I bring to my visit?'],
    ] as const) {
      const source = (
        await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'url', sourceName: path, url: `${site.url}${path}` })
      ).json();
      expect(await settled(api, base.id, source.id), path).toMatchObject({ status: 'READY' });
      expect((await texts(api, base.id, question, 3)).join('\n'), path).toContain(phrase);
    }

    pages['/gone'] = [404, 'text/html', 'missing'];
    pages['/broken'] = [500, 'text/html', 'oops'];
    pages['/logo'] = [200, 'image/png', Buffer.from([137, 80, 78, 71])];
    const closedPort = await freeLoopbackPort();
    const failures: [string, RegExp][] = [
      [`${site.url}/gone`, /answered HTTP 404/],
      [`${site.url}/broken`, /answered HTTP 500/],
      [`http://127.0.0.1:${closedPort}/faq`, /Could not reach/],
      [`${site.url}/logo`, /image\/png/],
    ];
    for (const [url, reason] of failures) {
      const source = (await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'url', sourceName: url, url })).json();
      const failed = await settled(api, base.id, source.id);
      expect(failed.status, url).toBe('FAILED');
      expect(failed.error, url).toMatch(reason);
    }
  });

  it('deletes a source with its chunks', async () => {
    const { api } = await tenant();
    const base = await newBase(api);
    const kept = await addText(api, base.id, 'Kept', 'Gift cards never expire.');
    const dropped = await addText(api, base.id, 'Dropped', 'Lockers cost two euros per day.');
    await settled(api, base.id, kept.id);
    await settled(api, base.id, dropped.id);
    expect((await texts(api, base.id, 'lockers')).join()).toContain('Lockers');
    expect((await api('DELETE', `/knowledge-bases/${base.id}/sources/${dropped.id}`)).statusCode).toBe(204);
    expect((await api('GET', `/knowledge-bases/${base.id}/sources/${dropped.id}`)).statusCode).toBe(404);
    expect((await texts(api, base.id, 'lockers')).join()).not.toContain('Lockers');
    expect((await api('GET', `/knowledge-bases/${base.id}`)).json()).toMatchObject({ sourceCount: 1, chunkCount: 1 });
  });
});

describe('tenancy and agents', () => {
  it("answers 404 on every route for another tenant's base and source", async () => {
    const owner = await tenant();
    const stranger = await tenant();
    const base = await newBase(owner.api);
    const source = await addText(owner.api, base.id, 'Secret', 'The vault code is 4711.');
    await settled(owner.api, base.id, source.id);
    const routes: [Parameters<Api>[0], string, object?][] = [
      ['GET', `/knowledge-bases/${base.id}`],
      ['PATCH', `/knowledge-bases/${base.id}`, { name: 'Mine now' }],
      ['DELETE', `/knowledge-bases/${base.id}`],
      ['GET', `/knowledge-bases/${base.id}/sources`],
      ['POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'x', rawText: 'x' }],
      ['GET', `/knowledge-bases/${base.id}/sources/${source.id}`],
      ['DELETE', `/knowledge-bases/${base.id}/sources/${source.id}`],
      ['POST', `/knowledge-bases/${base.id}/sources/${source.id}/refresh`],
      ['POST', `/knowledge-bases/${base.id}/query`, { query: 'vault code' }],
    ];
    for (const [method, url, body] of routes) {
      const response = await stranger.api(method, url, body);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await stranger.api('GET', '/knowledge-bases')).json().total).toBe(0);
    // The owner's base is untouched and still answers.
    expect((await texts(owner.api, base.id, 'vault code')).join()).toContain('4711');
  });

  it("lets agents name only the tenant's own bases, and keeps a base an agent searches", async () => {
    const owner = await tenant();
    const stranger = await tenant();
    const base = await newBase(owner.api);
    const foreign = await newBase(stranger.api);
    const refused = await owner.api('POST', '/agents', { name: 'Helper', knowledgeBaseIds: [base.id, foreign.id] });
    expect(refused.statusCode).toBe(404);
    expect(refused.json()).toMatchObject({
      code: 'NOT_FOUND',
      message: `Knowledge base ${foreign.id} not found; create it first or remove it from knowledgeBaseIds.`,
      details: [{ path: '/knowledgeBaseIds/1' }],
    });
    const agent = await owner.api('POST', '/agents', { name: 'Helper', knowledgeBaseIds: [base.id] });
    expect(agent.statusCode).toBe(201);
    const inUse = await owner.api('DELETE', `/knowledge-bases/${base.id}`);
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().message).toContain('"Helper"');
    expect((await owner.api('PATCH', `/agents/${agent.json().id}`, { knowledgeBaseIds: [foreign.id] })).statusCode).toBe(404);
    await owner.api('PATCH', `/agents/${agent.json().id}`, { knowledgeBaseIds: [] });
    expect((await owner.api('DELETE', `/knowledge-bases/${base.id}`)).statusCode).toBe(204);
  });
});

describe('the address rule on knowledge URLs', () => {
  let guarded: TestApp;
  beforeAll(async () => {
    guarded = await startTestApp();
    await guarded.runtime.jobs.work(jobDefinitions(guarded.runtime));
  });
  afterAll(() => guarded?.close());

  it('refuses URL sources on loopback, private, link-local and metadata addresses when they are saved, naming the field and the reason', async () => {
    const api = apiAs(guarded.app, (await createKey(guarded.app, (await signUp(guarded.app)).token)).key);
    const base = (await api('POST', '/knowledge-bases', { name: 'Guarded' })).json();
    const refused: [string, string][] = [
      ['http://127.0.0.1/admin', '127.0.0.1 is a loopback address'],
      ['http://[::1]/admin', '::1 is a loopback address'],
      ['http://[::127.0.0.1]/admin', '::7f00:1 is a loopback address (IPv4-compatible 127.0.0.1)'],
      ['http://0x7f.1/admin', '127.0.0.1 is a loopback address'],
      ['http://10.0.0.1/intranet', '10.0.0.1 is a private address'],
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a cloud metadata address'],
      ['http://localhost:8080/', 'localhost is this machine (a loopback address)'],
    ];
    for (const [url, reason] of refused) {
      const response = await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'url', sourceName: url, url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json(), url).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: `Field 'url' cannot be fetched by this service: ${reason}. Give an address on the public internet (to reach this machine or a private network while testing, start the service with ALLOW_PRIVATE_URLS=1).`,
        details: [{ path: '/url', message: reason }],
      });
    }
  });

  it('checks the address again when a source is fetched (one saved while the rule was lifted fails)', async () => {
    const owner = await signUp(guarded.app);
    const lifted = { ...tenantCtx(guarded.runtime, owner.tenantId), config: { ...guarded.runtime.config, allowPrivateUrls: true } };
    const base = await createBase(lifted, { name: 'Saved earlier' });
    const url = 'http://169.254.169.254/latest/';
    const source = await addJsonSource(lifted, base.id, { sourceType: 'url', sourceName: 'metadata', url });
    const api = apiAs(guarded.app, (await createKey(guarded.app, owner.token)).key);
    const failed = await settled(api, base.id, source.id);
    expect(failed).toMatchObject({ status: 'FAILED', error: expect.stringContaining('169.254.169.254 is a cloud metadata address') });
  });
});
