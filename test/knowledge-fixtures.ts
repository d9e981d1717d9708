import { crc32, deflateRawSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { bearer, until } from './harness.ts';
import type { apiAs } from './voice-fixtures.ts';

export interface UploadedFile {
  name: string;
  type: string;
  bytes: Buffer;
}

/** Adds a source by multipart/form-data, as a browser does. */
export function uploadSource(app: FastifyInstance, key: string, baseId: string, fields: Record<string, string>, file?: UploadedFile) {
  const boundary = '----callforge-test-boundary';
  const parts: Buffer[] = Object.entries(fields).map(([name, value]) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  );
  if (file) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`,
      ),
      file.bytes,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return app.inject({
    method: 'POST',
    url: `/api/v1/knowledge-bases/${baseId}/sources`,
    headers: { ...bearer(key), 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: Buffer.concat(parts),
  });
}

/** Polls a source until it leaves PROCESSING and answers its final record. */
export async function settled(api: ReturnType<typeof apiAs>, baseId: string, sourceId: string) {
  return until(
    `source ${sourceId} to settle`,
    async () => {
      const current = (await api('GET', `/knowledge-bases/${baseId}/sources/${sourceId}`)).json();
      return current.status !== 'PROCESSING' && current;
    },
    60_000,
  );
}

// ---------------------------------------------------------------------------------------------
// Documents made to hurt a parser, built here rather than stored: a valid PDF with any number of
// pages, and zip archives (a DOCX is one) whose parts unpack to far more than they weigh.

/** A valid PDF of `pages` pages, each with one line of text ("Page 7"), written object by object. */
export function manyPagesPdf(pages: number): Buffer {
  const objects: string[] = ['', '<< /Type /Catalog /Pages 2 0 R >>', '', '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  const kids: string[] = [];
  for (let page = 1; page <= pages; page++) {
    const stream = `BT /F1 12 Tf 72 720 Td (Page ${page} of the handbook) Tj ET`;
    kids.push(`${objects.length} 0 R`);
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${objects.length + 1} 0 R >>`,
      `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    );
  }
  objects[2] = `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${pages} >>`;
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let n = 1; n < objects.length; n++) {
    offsets.push(pdf.length);
    pdf += `${n} 0 obj\n${objects[n]}\nendobj\n`;
  }
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

interface Part {
  name: string;
  content: Buffer;
  /** The size the central directory declares, when it should lie. */
  declaredSize?: number;
}

/** A buffer of `length` zero bytes with little-endian integers written at their offsets: [offset, value, bytes]. */
function littleEndian(length: number, fields: [number, number, 2 | 4][]): Buffer {
  const buffer = Buffer.alloc(length);
  for (const [at, value, bytes] of fields) {
    if (bytes === 2) buffer.writeUInt16LE(value, at);
    else buffer.writeUInt32LE(value, at);
  }
  return buffer;
}

/** A zip archive of deflated parts, with its local headers and central directory. */
export function zipArchive(parts: Part[]): Buffer {
  const locals: Buffer[] = [];
  const directory: Buffer[] = [];
  let offset = 0;
  for (const part of parts) {
    const name = Buffer.from(part.name, 'utf8');
    const data = deflateRawSync(part.content, { level: 9 });
    const size = part.declaredSize ?? part.content.length;
    const crc = crc32(part.content);
    // Checksum, sizes and name length: at these offsets in the local header, 2 bytes further in the directory's.
    const shared: [number, number, 2 | 4][] = [
      [14, crc, 4],
      [18, data.length, 4],
      [22, size, 4],
      [26, name.length, 2],
    ];
    const local = littleEndian(30, [[0, 0x04034b50, 4], [4, 20, 2], [8, 8, 2], ...shared]);
    const central = littleEndian(46, [
      [0, 0x02014b50, 4],
      [4, 20, 2],
      [6, 20, 2],
      [10, 8, 2],
      ...shared.map(([at, value, bytes]): [number, number, 2 | 4] => [at + 2, value, bytes]),
      [42, offset, 4],
    ]);
    locals.push(local, name, data);
    directory.push(central, name);
    offset += local.length + name.length + data.length;
  }
  const directorySize = directory.reduce((sum, buffer) => sum + buffer.length, 0);
  const end = littleEndian(22, [
    [0, 0x06054b50, 4],
    [8, parts.length, 2],
    [10, parts.length, 2],
    [12, directorySize, 4],
    [16, offset, 4],
  ]);
  return Buffer.concat([...locals, ...directory, end]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const RELATIONSHIPS =
  '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';

/**
 * A DOCX whose document is `paragraphs` copies of one paragraph: a few hundred kilobytes that
 * unpack to as many megabytes as asked. `declaredSize` makes the directory understate the document.
 */
export function docxOfParagraphs(paragraphs: number, options: { declaredSize?: number } = {}): Buffer {
  const paragraph = Buffer.from('<w:p><w:r><w:t>Bring your insurance card to every visit.</w:t></w:r></w:p>');
  const body = Buffer.alloc(paragraphs * paragraph.length);
  for (let i = 0; i < paragraphs; i++) paragraph.copy(body, i * paragraph.length);
  const document = Buffer.concat([
    Buffer.from(
      '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>',
    ),
    body,
    Buffer.from('</w:body></w:document>'),
  ]);
  return zipArchive([
    { name: '[Content_Types].xml', content: Buffer.from(CONTENT_TYPES) },
    { name: '_rels/.rels', content: Buffer.from(RELATIONSHIPS) },
    { name: 'word/document.xml', content: document, declaredSize: options.declaredSize },
  ]);
}
