import { inflateRawSync } from 'node:zlib';
import { compile, type FormatCallback, type SelectorDefinition } from 'html-to-text';
import mammoth from 'mammoth';
import { marked } from 'marked';
import { extractText as extractPdfText, getDocumentProxy } from 'unpdf';
import { storableText } from '../../platform/input.ts';
import { counted, ExtractionError, type DocumentFormat, type DocumentLimits } from './document-formats.ts';

/**
 * The plain text of a document: headings as their own `#`-prefixed lines (by level), paragraphs
 * separated by blank lines, list items one per line, whitespace inside lines collapsed. A document
 * over one of `limits` is refused with an ExtractionError naming the limit.
 */
export async function extractText(format: DocumentFormat, bytes: Buffer, limits: DocumentLimits): Promise<string> {
  if (bytes.length === 0) throw new ExtractionError('The file is empty.');
  const text = tidy(await EXTRACTORS[format](bytes, limits));
  if (text === '') throw new ExtractionError(EMPTY_TEXT_MESSAGES[format]);
  return text;
}

const EXTRACTORS: Record<DocumentFormat, (bytes: Buffer, limits: DocumentLimits) => Promise<string> | string> = {
  pdf: pdfText,
  docx: docxText,
  txt: decodeUtf8,
  markdown: markdownText,
  html: (bytes) => htmlToPlainText(decodeUtf8(bytes)),
};

const EMPTY_TEXT_MESSAGES: Record<DocumentFormat, string> = {
  pdf: 'The PDF has no extractable text (it may be a scanned image); upload a text-based PDF or paste the text.',
  docx: 'The DOCX document has no text; check that it is the right file or paste the text.',
  txt: 'The text file contains only whitespace; upload a file with text in it.',
  markdown: 'The Markdown file has no text once its markup is removed; upload a file with text in it.',
  html: 'The HTML page has no text outside navigation, scripts and forms; use a page whose main content is text.',
};

async function pdfText(bytes: Buffer, limits: DocumentLimits): Promise<string> {
  // pdf.js takes ownership of the array it is given, so it gets a copy rather than the caller's buffer.
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 }).catch((error: unknown) => {
    throw new ExtractionError(
      'The file is not a valid PDF document: it could not be read; export it again as PDF without a password, or paste the text.',
      { cause: error },
    );
  });
  try {
    // pdf.js reads the page count from the page tree's root without visiting the pages.
    if (document.numPages > limits.pdfPages)
      throw new ExtractionError(
        `The PDF has ${counted(document.numPages)} pages; the limit is ${counted(limits.pdfPages)} pages. Split it into smaller files and upload them one by one.`,
      );
    const { text: pages } = await extractPdfText(document, { mergePages: false });
    return pages.join('\n\n');
  } finally {
    await document.destroy();
  }
}

async function docxText(bytes: Buffer, limits: DocumentLimits): Promise<string> {
  checkUnpackedSize(bytes, limits.unpackedBytes);
  const result = await mammoth
    // Images are dropped from the text anyway; not reading them spares base64-encoding every picture.
    .convertToHtml({ buffer: bytes }, { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) })
    .catch((error: unknown) => {
      throw new ExtractionError(
        'The file is not a valid DOCX document: it could not be opened as a Word file; save it again as .docx, or paste the text.',
        { cause: error },
      );
    });
  return htmlToPlainText(result.value);
}

// ---------------------------------------------------------------------------------------------
// A DOCX is a zip archive: before mammoth unpacks it (into memory, every entry it reads), the
// archive's central directory says what each entry unpacks to, and each entry is then inflated
// once with a cap on its output, so a directory that understates the sizes is caught too.

const MB = 1024 * 1024;
const megabytes = (bytes: number) => `${counted(Math.ceil(bytes / MB))} MB`;

interface ZipEntry {
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

/** The entries the archive's central directory lists; undefined when it has none readable (mammoth then says the file is not a DOCX). */
function zipEntries(bytes: Buffer): ZipEntry[] | undefined {
  // The end-of-central-directory record: 22 bytes and a comment of at most 65,535, at the very end.
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 0xffff); at--) {
    if (bytes.readUInt32LE(at) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) return undefined;
  const entries: ZipEntry[] = [];
  let at = bytes.readUInt32LE(end + 16);
  for (let count = bytes.readUInt16LE(end + 10); count > 0; count--) {
    if (at + 46 > bytes.length || bytes.readUInt32LE(at) !== 0x02014b50) return undefined;
    entries.push({
      method: bytes.readUInt16LE(at + 10),
      compressedSize: bytes.readUInt32LE(at + 20),
      uncompressedSize: bytes.readUInt32LE(at + 24),
      localHeaderOffset: bytes.readUInt32LE(at + 42),
    });
    at += 46 + bytes.readUInt16LE(at + 28) + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
  }
  return entries;
}

/** The entry's compressed bytes, behind its local header; undefined when the header is not where the directory says. */
function entryData(bytes: Buffer, entry: ZipEntry): Buffer | undefined {
  const header = entry.localHeaderOffset;
  if (header + 30 > bytes.length || bytes.readUInt32LE(header) !== 0x04034b50) return undefined;
  const start = header + 30 + bytes.readUInt16LE(header + 26) + bytes.readUInt16LE(header + 28);
  return start + entry.compressedSize > bytes.length ? undefined : bytes.subarray(start, start + entry.compressedSize);
}

function checkUnpackedSize(bytes: Buffer, limit: number): void {
  const entries = zipEntries(bytes);
  if (!entries) return;
  const declared = entries.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  const over = (size: string) =>
    new ExtractionError(
      `The DOCX document unpacks to ${size}; the limit is ${megabytes(limit)}. Remove large images or split it into smaller documents.`,
    );
  if (declared > limit) throw over(megabytes(declared));
  let unpacked = 0;
  for (const entry of entries) {
    const data = entryData(bytes, entry);
    if (!data) return;
    // 0: stored as is; 8: deflated; mammoth reads no other method.
    if (entry.method !== 8) {
      unpacked += data.length;
      continue;
    }
    try {
      unpacked += inflateRawSync(data, { maxOutputLength: Math.max(1, limit - unpacked) }).length;
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw over(`more than ${megabytes(limit)}`);
      return;
    }
  }
  if (unpacked > limit) throw over(`more than ${megabytes(limit)}`);
}

// ---------------------------------------------------------------------------------------------

function markdownText(bytes: Buffer): string {
  return htmlToPlainText(marked.parse(decodeUtf8(bytes), { async: false }));
}

function decodeUtf8(bytes: Buffer): string {
  // TextDecoder drops a leading byte order mark; Buffer#toString would keep it.
  return new TextDecoder('utf-8').decode(bytes);
}

const markdownHeading: FormatCallback = (element, walk, builder, options) => {
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addInline(`${'#'.repeat(options.level as number)} `);
  walk(element.children, builder);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

const SKIPPED_ELEMENTS = ['script', 'style', 'nav', 'footer', 'header', 'form', 'noscript', 'img', 'hr'];

const HTML_SELECTORS: SelectorDefinition[] = [
  ...[1, 2, 3, 4, 5, 6].map((level) => ({ selector: `h${level}`, format: 'markdownHeading', options: { level } })),
  { selector: 'a', options: { ignoreHref: true } },
  { selector: 'ul', options: { itemPrefix: '- ' } },
  ...SKIPPED_ELEMENTS.map((selector) => ({ selector, format: 'skip' })),
];

const htmlToPlainText = compile({ wordwrap: false, formatters: { markdownHeading }, selectors: HTML_SELECTORS });

/**
 * Unifies line endings, collapses whitespace inside lines and leaves at most one blank line between
 * blocks; a document's NUL characters (and halves of surrogate pairs alone) become U+FFFD, which its chunks can store.
 */
function tidy(text: string): string {
  return storableText(text)
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
