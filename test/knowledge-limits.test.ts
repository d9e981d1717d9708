import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { documentsBeingParsed, parseDocument } from '../src/modules/knowledge/parsing.ts';
import { createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';
import { docxOfParagraphs, manyPagesPdf, settled, uploadSource, type UploadedFile } from './knowledge-fixtures.ts';
import { apiAs } from './voice-fixtures.ts';

// Untrusted documents are parsed in a child process with limits on pages, unpacked bytes, memory
// and time; a document over one fails with a sentence naming the limit, and the API answers meanwhile.
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const MB = 1024 * 1024;
// Each document is parsed by a process of its own, which takes a few seconds to start on a loaded machine.
const SLOW = { timeout: 120_000 };

/** The default limits (config.ts): 2,000 pages, 50 MB unpacked, 512 MB of heap, 60 s. */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
}, 120_000);
afterAll(async () => {
  await t?.close();
});

/** The parse's error message, or undefined when it succeeded. */
const parseError = (...args: Parameters<typeof parseDocument>) =>
  parseDocument(...args).then(
    () => undefined,
    (reason: unknown) => (reason as Error).message,
  );

async function addFile(file: UploadedFile) {
  const key = (await createKey(t.app, (await signUp(t.app)).token)).key;
  const api = apiAs(t.app, key);
  const base = (await api('POST', '/knowledge-bases', { name: 'Handbooks' })).json();
  const created = await uploadSource(t.app, key, base.id, { sourceType: 'file', sourceName: file.name }, file);
  expect(created.statusCode, created.body).toBe(201);
  return { api, baseId: base.id as string, sourceId: created.json().id as string };
}

async function outcome(file: UploadedFile) {
  const { api, baseId, sourceId } = await addFile(file);
  return settled(api, baseId, sourceId);
}

describe('limits on parsing untrusted documents', () => {
  it('fails a 20,000-page PDF before extracting its text, naming the page limit', SLOW, async () => {
    const failed = await outcome({ name: 'huge.pdf', type: 'application/pdf', bytes: manyPagesPdf(20_000) });
    expect(failed).toMatchObject({ status: 'FAILED', chunkCount: 0 });
    expect(failed.error).toBe(
      'The PDF has 20,000 pages; the limit is 2,000 pages. Split it into smaller files and upload them one by one.',
    );
  });

  it('fails a DOCX zip bomb before unpacking it, whether its directory tells the size or understates it', SLOW, async () => {
    // 2 million paragraphs: 142 MB of XML in half a megabyte.
    const declared = await outcome({ name: 'bomb.docx', type: DOCX, bytes: docxOfParagraphs(2_000_000) });
    expect(declared).toMatchObject({ status: 'FAILED', chunkCount: 0 });
    expect(declared.error).toBe(
      'The DOCX document unpacks to 142 MB; the limit is 50 MB. Remove large images or split it into smaller documents.',
    );
    const understated = await outcome({ name: 'liar.docx', type: DOCX, bytes: docxOfParagraphs(2_000_000, { declaredSize: 1000 }) });
    expect(understated).toMatchObject({ status: 'FAILED', chunkCount: 0 });
    expect(understated.error).toBe(
      'The DOCX document unpacks to more than 50 MB; the limit is 50 MB. Remove large images or split it into smaller documents.',
    );
    // Under the limit, the same kind of document is indexed.
    expect(await outcome({ name: 'fine.docx', type: DOCX, bytes: docxOfParagraphs(3) })).toMatchObject({
      status: 'READY',
      chunkCount: 1,
    });
  });

  it('answers API requests while a 1,000-page PDF is being parsed', SLOW, async () => {
    const { api, baseId, sourceId } = await addFile({ name: 'long.pdf', type: 'application/pdf', bytes: manyPagesPdf(1000) });
    await until('the PDF to be parsing', () => documentsBeingParsed() === 1, 60_000);
    for (let i = 0; i < 3; i++) {
      expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await api('GET', `/knowledge-bases/${baseId}/sources`)).json().data[0]).toMatchObject({ id: sourceId, status: 'PROCESSING' });
    }
    // Every answer came while the document was still being parsed.
    expect(documentsBeingParsed()).toBe(1);
    expect(await settled(api, baseId, sourceId)).toMatchObject({ status: 'READY' });
  });

  it('fails a document that needs more memory than the limit, and the service goes on', SLOW, async () => {
    // Limits lifted but for a heap of 32 MB: 28 MB of XML that mammoth cannot hold in it. In a worker
    // thread of this process, running out of that heap aborted the whole process (the test runner).
    const limits = { pdfPages: 2000, unpackedBytes: 4096 * MB, heapMb: 32, timeoutMs: 60_000 };
    expect(await parseError('docx', docxOfParagraphs(400_000), limits)).toBe(
      'Extracting the text needed more than 32 MB of memory, the limit. Split the document into smaller files and upload them one by one.',
    );
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect(await parseError('docx', docxOfParagraphs(3), limits)).toBeUndefined();
  });

  it('stops a parse that takes longer than the time limit', SLOW, async () => {
    // 20,000 pages with the page limit lifted: far more than a second of work (starting the process alone takes longer).
    const limits = { pdfPages: 1_000_000, unpackedBytes: 50 * MB, heapMb: 512, timeoutMs: 1000 };
    expect(await parseError('pdf', manyPagesPdf(20_000), limits)).toBe(
      'Extracting the text took longer than 1 second, the limit. Split the document into smaller files and upload them one by one.',
    );
    expect(documentsBeingParsed()).toBe(0);
  });
});
