/**
 * Untrusted documents are parsed off the service's event loop and out of its memory: in a child
 * process with a heap limit, one document at a time, under a wall-clock limit; the child also
 * refuses PDFs with too many pages and DOCX archives that unpack to too much (extract.ts).
 * Whatever goes wrong there, running out of memory included, ends as an ExtractionError with a
 * sentence saying which limit the document crossed, and that child is killed: the service goes on.
 * A child that answered is kept for the next document (starting one takes a second or more).
 */
import { setPriority } from 'node:os';
import { forkTypeScript } from '../../platform/worker.ts';
import { counted, ExtractionError, type DocumentFormat, type DocumentLimits } from './document-formats.ts';

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

type Parser = ReturnType<typeof forkTypeScript> & { heapMb: number };

/** A child that answered its last document and waits for the next, unreferenced meanwhile. */
let idle: Parser | undefined;

function parser(heapMb: number): Parser {
  const kept = idle;
  idle = undefined;
  if (kept && kept.heapMb === heapMb && kept.child.connected) {
    referenced(kept, true);
    return kept;
  }
  kept?.child.kill('SIGKILL');
  const started = { ...forkTypeScript(new URL('./parse-process.ts', import.meta.url), { maxOldSpaceMb: heapMb }), heapMb };
  // Failures while a document is parsed are handled there; one while idle only means a new child next time.
  started.child.on('error', () => {});
  try {
    if (started.child.pid !== undefined) setPriority(started.child.pid, BACKGROUND_PRIORITY);
  } catch {
    // Not allowed here: documents are parsed at the usual priority.
  }
  return started;
}

function keep(parser: Parser): void {
  if (idle || !parser.child.connected) return void parser.child.kill('SIGKILL');
  referenced(parser, false);
  idle = parser;
}

/** Whether the child, its IPC channel and its stderr pipe keep the service's process alive: only while parsing. */
function referenced({ child }: Parser, yes: boolean): void {
  const handles = [child, child.channel, child.stderr as unknown as { ref(): void; unref(): void } | null];
  for (const handle of handles) {
    if (yes) handle?.ref();
    else handle?.unref();
  }
}

/** The document's text, extracted and chunked in a child process within `limits`. */
export function parseDocument(format: DocumentFormat, bytes: Buffer, limits: ParseLimits): Promise<string[]> {
  const current = parser(limits.heapMb);
  const { child, stderr } = current;
  parsing++;
  return new Promise<string[]>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void, reusable = false) => {
      if (settled) return;
      settled = true;
      parsing--;
      clearTimeout(timer);
      child.off('message', onMessage).off('error', onError).off('close', onClose);
      if (reusable) keep(current);
      else child.kill('SIGKILL');
      outcome();
    };
    const refuse = (message: string) => settle(() => reject(new ExtractionError(message)));
    const timer = setTimeout(
      () => refuse(`Extracting the text took longer than ${seconds(limits.timeoutMs)}, the limit. ${SPLIT_ADVICE}`),
      limits.timeoutMs,
    );
    const onMessage = (reply: ParseReply) => {
      if (reply.type === 'chunks') settle(() => resolve(reply.pieces), true);
      else if (reply.type === 'refused') settle(() => reject(new ExtractionError(reply.message)), true);
      else settle(() => reject(new Error(reply.message)));
    };
    const onError = (error: Error) => settle(() => reject(new Error(`The document parser failed: ${error.message}`, { cause: error })));
    // stderr is read to its end before 'close' (unlike 'exit'), so it tells why the process ended.
    const onClose = (code: number | null, signal: NodeJS.Signals | null) =>
      refuse(
        /heap out of memory/i.test(stderr())
          ? `Extracting the text needed more than ${counted(limits.heapMb)} MB of memory, the limit. ${SPLIT_ADVICE}`
          : `Extracting the text stopped unexpectedly (its process ended with ${signal ?? `code ${code}`}). Save the document again in its format, or paste the text.`,
      );
    child.on('message', onMessage).on('error', onError).on('close', onClose);
    child.send({ format, bytes, limits: { pdfPages: limits.pdfPages, unpackedBytes: limits.unpackedBytes } } satisfies ParseRequest);
  });
}
