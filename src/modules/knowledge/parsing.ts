/**
 * Untrusted documents are parsed off the service's event loop and out of its memory: each in a
 * child process of its own, started for it and ended after, with a heap limit and a wall-clock
 * limit; the child also refuses PDFs with too many pages and DOCX archives that unpack to too much
 * (extract.ts). Whatever goes wrong there, running out of memory included, ends as an
 * ExtractionError with a sentence saying which limit the document crossed: the service goes on.
 */
import { setPriority } from 'node:os';
import { forkTypeScript } from '../../platform/worker.ts';
import { counted, ExtractionError, type DocumentFormat, type DocumentLimits } from './extract.ts';

export interface ParseLimits extends DocumentLimits {
  /** Old-generation heap of the parsing process, in MB. */
  heapMb: number;
  /** Time from the process' start to its answer. */
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

/** Documents being parsed for this process now. */
export const documentsBeingParsed = () => parsing;

/** A nice value: the kernel gives the parser the CPU the service leaves. */
const BACKGROUND_PRIORITY = 10;
const SPLIT_ADVICE = 'Split the document into smaller files and upload them one by one.';
const seconds = (ms: number) => `${counted(ms / 1000)} second${ms === 1000 ? '' : 's'}`;

/** The document's text, extracted and chunked in a child process within `limits`. */
export function parseDocument(format: DocumentFormat, bytes: Buffer, limits: ParseLimits): Promise<string[]> {
  const { child, stderr } = forkTypeScript(new URL('./parse-process.ts', import.meta.url), { maxOldSpaceMb: limits.heapMb });
  // Parsing is background work: on a machine with few cores, the API's requests go first.
  try {
    if (child.pid !== undefined) setPriority(child.pid, BACKGROUND_PRIORITY);
  } catch {
    // Not allowed here: the document is parsed at the usual priority.
  }
  parsing++;
  return new Promise<string[]>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      parsing--;
      clearTimeout(timer);
      child.kill('SIGKILL');
      outcome();
    };
    const refuse = (message: string) => settle(() => reject(new ExtractionError(message)));
    const timer = setTimeout(
      () => refuse(`Extracting the text took longer than ${seconds(limits.timeoutMs)}, the limit. ${SPLIT_ADVICE}`),
      limits.timeoutMs,
    );
    child.on('message', (reply: ParseReply) => {
      if (reply.type === 'chunks') settle(() => resolve(reply.pieces));
      else if (reply.type === 'refused') refuse(reply.message);
      else settle(() => reject(new Error(reply.message)));
    });
    child.on('error', (error) =>
      settle(() => reject(new Error(`The document parser could not start: ${error.message}`, { cause: error }))),
    );
    // stderr is read to its end before 'close' (unlike 'exit'), so it tells why the process ended.
    child.on('close', (code, signal) =>
      refuse(
        /heap out of memory/i.test(stderr())
          ? `Extracting the text needed more than ${counted(limits.heapMb)} MB of memory, the limit. ${SPLIT_ADVICE}`
          : `Extracting the text stopped unexpectedly (its process ended with ${signal ?? `code ${code}`}). Save the document again in its format, or paste the text.`,
      ),
    );
    child.send({ format, bytes, limits: { pdfPages: limits.pdfPages, unpackedBytes: limits.unpackedBytes } } satisfies ParseRequest);
  });
}
