import { compile, type FormatCallback, type SelectorDefinition } from 'html-to-text';
import mammoth from 'mammoth';
import { marked } from 'marked';
import { extractText as extractPdfText, getDocumentProxy } from 'unpdf';

export type DocumentFormat = 'pdf' | 'docx' | 'txt' | 'markdown' | 'html';

const FORMAT_BY_EXTENSION: Record<string, DocumentFormat> = {
  pdf: 'pdf',
  docx: 'docx',
  txt: 'txt',
  md: 'markdown',
  markdown: 'markdown',
  html: 'html',
  htm: 'html',
};

const FORMAT_BY_MEDIA_TYPE: Record<string, DocumentFormat> = {
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/plain': 'txt',
  'text/markdown': 'markdown',
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
};

export const FETCHABLE_MEDIA_TYPES: readonly string[] = Object.keys(FORMAT_BY_MEDIA_TYPE);

/** The format of a fetched URL body by its Content-Type media type; null when unsupported. */
export function formatOfMediaType(mediaType: string): DocumentFormat | null {
  const essence = mediaType.split(';')[0]!.trim().toLowerCase();
  return FORMAT_BY_MEDIA_TYPE[essence] ?? null;
}

/** The format of an uploaded file, by its extension first, then by media type; null when unsupported. */
export function formatOfFile(fileName: string, mediaType: string | undefined): DocumentFormat | null {
  const extension = /\.([^./\\]+)$/.exec(fileName)?.[1]?.toLowerCase();
  const byExtension = extension === undefined ? undefined : FORMAT_BY_EXTENSION[extension];
  return byExtension ?? (mediaType ? formatOfMediaType(mediaType) : null);
}

/** A document that yields no usable text, with a message the person who uploaded it can act on. */
export class ExtractionError extends Error {}

/**
 * The plain text of a document: headings as their own `#`-prefixed lines (by level), paragraphs
 * separated by blank lines, list items one per line, whitespace inside lines collapsed.
 */
export async function extractText(format: DocumentFormat, bytes: Buffer): Promise<string> {
  if (bytes.length === 0) throw new ExtractionError('The file is empty.');
  const text = tidy(await EXTRACTORS[format](bytes));
  if (text === '') throw new ExtractionError(EMPTY_TEXT_MESSAGES[format]);
  return text;
}

const EXTRACTORS: Record<DocumentFormat, (bytes: Buffer) => Promise<string> | string> = {
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

async function pdfText(bytes: Buffer): Promise<string> {
  // pdf.js takes ownership of the array it is given, so it gets a copy rather than the caller's buffer.
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 }).catch((error: unknown) => {
    throw new ExtractionError(
      'The file is not a valid PDF document: it could not be read; export it again as PDF without a password, or paste the text.',
      { cause: error },
    );
  });
  try {
    const { text: pages } = await extractPdfText(document, { mergePages: false });
    return pages.join('\n\n');
  } finally {
    await document.destroy();
  }
}

async function docxText(bytes: Buffer): Promise<string> {
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

/** Unifies line endings, collapses whitespace inside lines and leaves at most one blank line between blocks. */
function tidy(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
