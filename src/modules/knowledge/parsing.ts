/**
 * Untrusted documents are parsed off the event loop: each in a worker thread of its own, started
 * for it and terminated after, with a heap limit and a wall-clock limit; the worker also refuses
 * PDFs with too many pages and DOCX archives that unpack to too much (extract.ts). Whatever goes
 * wrong in the worker, running out of memory included, ends as an ExtractionError with a sentence
 * saying which limit the document crossed: the service goes on.
 */
import { startTypeScriptWorker } from '../../platform/worker.ts';
import { counted, ExtractionError, type DocumentFormat, type DocumentLimits } from './extract.ts';

export interface ParseLimits extends DocumentLimits {
  /** Old-generation heap of the parsing worker, in MB. */
  heapMb: number;
  /** Time from the worker's start to its answer. */
  timeoutMs: number;
}

export interface ParseRequest {
  format: DocumentFormat;
  bytes: Uint8Array;
  limits: DocumentLimits;
}

/** `refused`: the document cannot be indexed, for the reason given; `error`: an unforeseen failure (the job tries again). */
export type ParseReply = { type: 'chunks'; pieces: string[] } | { type: 'refused'; message: string } | { type: 'error'; message: string };

let parsing = 0;

/** Documents being parsed in this process now. */
export const documentsBeingParsed = () => parsing;

const SPLIT_ADVICE = 'Split the document into smaller files and upload them one by one.';

/** The document's text, extracted and chunked in a worker thread within `limits`. */
export function parseDocument(format: DocumentFormat, bytes: Buffer, limits: ParseLimits): Promise<string[]> {
  const worker = startTypeScriptWorker(new URL('./parse-worker.ts', import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
  });
  parsing++;
  return new Promise<string[]>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      parsing--;
      clearTimeout(timer);
      void worker.terminate();
      outcome();
    };
    const refuse = (message: string) => settle(() => reject(new ExtractionError(message)));
    const timer = setTimeout(
      () => refuse(`Extracting the text took longer than ${counted(limits.timeoutMs / 1000)} seconds, the limit. ${SPLIT_ADVICE}`),
      limits.timeoutMs,
    );
    worker.on('message', (reply: ParseReply) => {
      if (reply.type === 'chunks') settle(() => resolve(reply.pieces));
      else if (reply.type === 'refused') refuse(reply.message);
      else settle(() => reject(new Error(reply.message)));
    });
    worker.on('error', (error: Error & { code?: string }) =>
      refuse(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `Extracting the text needed more than ${counted(limits.heapMb)} MB of memory, the limit. ${SPLIT_ADVICE}`
          : `Extracting the text failed (${error.message}). Save the document again in its format, or paste the text.`,
      ),
    );
    worker.on('exit', (code) =>
      refuse(`Extracting the text stopped unexpectedly (its worker exited with code ${code}). Save the document again, or paste the text.`),
    );
    const copy = new Uint8Array(bytes);
    worker.postMessage({ format, bytes: copy, limits: { pdfPages: limits.pdfPages, unpackedBytes: limits.unpackedBytes } } satisfies ParseRequest, [
      copy.buffer,
    ]);
  });
}
