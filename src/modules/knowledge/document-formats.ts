/**
 * The document formats a knowledge base takes, told by file name or media type, and what the
 * extraction may refuse. Apart from the extractors (extract.ts), whose parsers are heavy to load
 * and run only in the parsing process.
 */
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

/** What a document may hold before its text is extracted: checked first, so a hostile file is refused cheaply. */
export interface DocumentLimits {
  /** Pages of a PDF. */
  pdfPages: number;
  /** Bytes a DOCX (a zip archive) unpacks to, all its entries together. */
  unpackedBytes: number;
}

/** A count as people write it: 20,000. */
export const counted = (n: number) => n.toLocaleString('en-US');
