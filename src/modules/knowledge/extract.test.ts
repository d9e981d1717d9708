import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExtractionError, FETCHABLE_MEDIA_TYPES, formatOfFile, formatOfMediaType, type DocumentFormat } from './document-formats.ts';
import { extractText } from './extract.ts';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/knowledge/${name}`, import.meta.url));
// The service's default limits (config.ts).
const LIMITS = { pdfPages: 2000, unpackedBytes: 50 * 1024 * 1024 };
const lines = (text: string) => text.split('\n');
// Deterministic bytes that are neither a PDF nor a ZIP archive.
const garbage = Buffer.from(Array.from({ length: 2048 }, (_, index) => (index * 73 + 41) % 256));

async function extractionError(format: DocumentFormat, bytes: Buffer): Promise<ExtractionError> {
  const error = await extractText(format, bytes, LIMITS).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ExtractionError);
  return error as ExtractionError;
}

describe('formatOfFile', () => {
  it.each([
    ['Handbook.PDF', undefined, 'pdf'],
    ['handbook.docx', undefined, 'docx'],
    ['notes.txt', undefined, 'txt'],
    ['notes.md', undefined, 'markdown'],
    ['notes.markdown', undefined, 'markdown'],
    ['page.html', undefined, 'html'],
    ['page.htm', undefined, 'html'],
    ['notes.md', 'text/plain', 'markdown'],
    ['page.html', 'application/octet-stream', 'html'],
    ['upload', 'application/pdf', 'pdf'],
    ['upload', 'text/html; charset=utf-8', 'html'],
    ['setup.exe', undefined, null],
    ['setup.exe', 'application/octet-stream', null],
    ['photo.png', 'image/png', null],
    ['upload', undefined, null],
  ] as const)('%s (%s) is %s', (fileName, mediaType, expected) => {
    expect(formatOfFile(fileName, mediaType)).toBe(expected);
  });
});

describe('formatOfMediaType', () => {
  it.each([
    ['text/html', 'html'],
    ['application/xhtml+xml', 'html'],
    ['text/plain', 'txt'],
    ['text/markdown', 'markdown'],
    ['application/pdf', 'pdf'],
    ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
    ['Text/HTML; charset=UTF-8', 'html'],
    ['image/png', null],
    ['application/msword', null],
    ['', null],
  ] as const)('%s is %s', (mediaType, expected) => {
    expect(formatOfMediaType(mediaType)).toBe(expected);
  });

  it('lists exactly the fetchable media types', () => {
    expect([...FETCHABLE_MEDIA_TYPES].sort()).toEqual([
      'application/pdf',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/xhtml+xml',
      'text/html',
      'text/markdown',
      'text/plain',
    ]);
  });
});

describe('extractText', () => {
  it('reads the text of every page of a PDF', async () => {
    const text = await extractText('pdf', fixture('handbook.pdf'), LIMITS);
    expect(text).toContain('Monday to Friday, 8:00 to 18:00');
    expect(text).toContain('€25');
    expect(text).toContain('free parking behind the building');
    expect(text).not.toMatch(/^#/m);
  });

  it('turns DOCX headings into # lines by level', async () => {
    const text = await extractText('docx', fixture('handbook.docx'), LIMITS);
    expect(lines(text)).toEqual(
      expect.arrayContaining(['# Northwind Clinic', '## Before your visit', '## Opening hours', '# Cancellations']),
    );
    expect(text).toContain('Bring your insurance card to every visit.');
    expect(text).toContain('\n\n## Before your visit\n\nBring your insurance card');
    expect(text).not.toContain('<');
  });

  it('keeps the content of an HTML page and skips scripts, styles, navigation, footer, images and link addresses', async () => {
    const text = await extractText('html', fixture('page.html'), LIMITS);
    expect(text).toBe(
      [
        '# Contact Northwind Clinic',
        '',
        'Call us on 01 234 5678. Our helpline answers within two minutes during opening hours.',
        '',
        '## Other ways to reach us',
        '',
        'Write to the front desk or visit in person.',
        '',
        '- Email replies within one working day',
        '- Letters are answered within a week',
      ].join('\n'),
    );
    for (const skipped of [
      'tracking-snippet',
      'changed by script',
      'font-family',
      'Menu link services',
      'Copyright footer',
      'mailto:',
      'map.png',
      'Map to the clinic',
    ]) {
      expect(text).not.toContain(skipped);
    }
  });

  it('renders Markdown as plain text with # headings, list lines and no markup or link addresses', async () => {
    const text = await extractText('markdown', fixture('notes.md'), LIMITS);
    expect(text).toBe(
      [
        '# Billing notes',
        '',
        'Invoices are sent on the first working day of the month. Payment is due within 14 days.',
        '',
        '## Payment methods',
        '',
        '- Bank transfer',
        '- Card payment at reception',
        '- Direct debit, see the billing page',
        '',
        '## Questions',
        '',
        'Ask the billing team at reception.',
      ].join('\n'),
    );
  });

  it('decodes text as UTF-8 without its byte order mark, unifies line endings and collapses whitespace', async () => {
    const bytes = Buffer.from('\uFEFF  Café   opens\tat 8.\r\n\r\n\r\n\r\nClosed on   Sundays.  \r\nSee you!\r', 'utf8');
    expect(await extractText('txt', bytes, LIMITS)).toBe('Café opens at 8.\n\nClosed on Sundays.\nSee you!');
  });

  it('reads a heading at the very start of Markdown saved with a byte order mark', async () => {
    expect(await extractText('markdown', Buffer.from('\uFEFF# Billing\nMonthly.', 'utf8'), LIMITS)).toBe('# Billing\n\nMonthly.');
  });

  it.each(['pdf', 'docx', 'txt', 'markdown', 'html'] as const)('rejects an empty %s file', async (format) => {
    expect((await extractionError(format, Buffer.alloc(0))).message).toBe('The file is empty.');
  });

  it('rejects a PDF without text as probably scanned', async () => {
    expect((await extractionError('pdf', fixture('blank.pdf'))).message).toMatch(
      /^The PDF has no extractable text \(it may be a scanned image\)/,
    );
  });

  it('rejects bytes that are not a PDF', async () => {
    expect((await extractionError('pdf', garbage)).message).toMatch(/^The file is not a valid PDF document/);
  });

  it.each([
    ['random bytes', garbage],
    ['a PDF', fixture('handbook.pdf')],
  ])('rejects %s given as DOCX', async (_, bytes) => {
    expect((await extractionError('docx', bytes)).message).toMatch(/^The file is not a valid DOCX document/);
  });

  it.each([
    ['txt', ' \r\n\t \n', /^The text file contains only whitespace/],
    ['markdown', '<!-- nothing -->\n\n---\n', /^The Markdown file has no text/],
    ['html', '<html><body><nav>Home</nav><script>run()</script><footer>© 2024</footer></body></html>', /^The HTML page has no text/],
  ] as const)('rejects %s that has no text', async (format, content, message) => {
    expect((await extractionError(format, Buffer.from(content))).message).toMatch(message);
  });
});
