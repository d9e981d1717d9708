// Runs in a worker thread (see parsing.ts), one per document: pdf.js, mammoth and the HTML and
// Markdown parsers compute synchronously for seconds on a big file, and a hostile one can take
// hundreds of megabytes, so they run here, on a bounded heap, and never on the service's event loop.
import { parentPort } from 'node:worker_threads';
import { chunkText } from './chunking.ts';
import { ExtractionError, extractText } from './extract.ts';
import type { ParseReply, ParseRequest } from './parsing.ts';

const port = parentPort!;

port.once('message', (request: ParseRequest) => {
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

function reply(message: ParseReply): void {
  port.postMessage(message);
}
