// Runs in a child process (see parsing.ts), one document at a time: pdf.js, mammoth and the HTML and
// Markdown parsers compute synchronously for seconds on a big file, and a hostile one can take
// hundreds of megabytes, so they run here, with a heap limit of their own, never in the service.
import { chunkText } from './chunking.ts';
import { ExtractionError } from './document-formats.ts';
import { extractText } from './extract.ts';
import type { ParseReply, ParseRequest } from './parsing.ts';

process.on('message', (request: ParseRequest) => {
  const bytes = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength);
  extractText(request.format, bytes, request.limits).then(
    (text) => reply({ type: 'chunks', pieces: chunkText(text) }),
    (error: unknown) =>
      reply(
        error instanceof ExtractionError
          ? { type: 'refused', message: error.message }
          : { type: 'error', message: error instanceof Error ? error.message : String(error) },
      ),
  );
});

// The service went away: so does its parser.
process.on('disconnect', () => process.exit(0));

function reply(message: ParseReply): void {
  process.send!(message);
}
