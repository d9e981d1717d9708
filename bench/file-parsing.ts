/**
 * Parsing untrusted files while the API serves: GET /api/v1/knowledge-bases under autocannon load,
 * first with nothing else going on (the baseline), then while sources are uploaded and parsed one
 * after the other: a 20,000-page PDF (refused at the page limit after pdf.js opens it), a DOCX zip
 * bomb (refused at the unpacked-size limit after its entries are inflated with a cap) and a
 * 2,000-page PDF within the limits (text extracted, chunked and embedded by the offline model).
 * Prints both p99s and their ratio, and what the parses did meanwhile. See bench/README.md.
 */
import { docxOfParagraphs, manyPagesPdf } from '../test/knowledge-fixtures.ts';
import {
  checkClean,
  CONNECTIONS,
  createKey,
  DURATION,
  errorMessage,
  fixed,
  forEachEngine,
  getJson,
  measure,
  runBench,
  startServer,
  table,
  type Measurement,
} from './harness.ts';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const DOCUMENTS = [
  { name: 'huge.pdf', type: 'application/pdf', bytes: manyPagesPdf(20_000) },
  { name: 'bomb.docx', type: DOCX, bytes: docxOfParagraphs(2_000_000) },
  { name: 'long.pdf', type: 'application/pdf', bytes: manyPagesPdf(2000) },
];

interface Result {
  engine: string;
  baseline: Measurement;
  parsing: Measurement;
  /** Outcome of each source parsed during the measurement: status and error. */
  parsed: string[];
}

async function run(engine: { name: string; serverEnv: Record<string, string> }): Promise<Result> {
  const server = await startServer(engine.name, engine.serverEnv);
  try {
    const key = await createKey(server.base);
    const auth = { authorization: `Bearer ${key}` };
    const base = await fetch(`${server.base}/api/v1/knowledge-bases`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Handbooks' }),
    }).then((response) => response.json() as Promise<{ id: string }>);
    const path = '/api/v1/knowledge-bases?limit=10';
    process.stdout.write(`\n[${engine.name}] baseline: GET ${path}, ${CONNECTIONS} connections, ${DURATION} s…\n`);
    const baseline = await measure(server.base, path, auth);

    // Sources one after the other, each awaited to its end, for as long as the load runs.
    let loading = true;
    const parsed: string[] = [];
    const parses = (async () => {
      // A service that stops answering ends the loop (fetch gives up after 300 s): it is printed with the figures.
      for (let i = 0; loading; i++) {
        const document = DOCUMENTS[i % DOCUMENTS.length]!;
        const form = new FormData();
        form.set('sourceType', 'file');
        form.set('sourceName', document.name);
        form.set('file', new Blob([document.bytes], { type: document.type }), document.name);
        const created = await fetch(`${server.base}/api/v1/knowledge-bases/${base.id}/sources`, {
          method: 'POST',
          headers: auth,
          body: form,
        });
        const source = (await created.json()) as { id: string; status: string };
        if (created.status !== 201) throw new Error(`upload answered ${created.status}: ${JSON.stringify(source)}`);
        for (let current = source; ;) {
          if (current.status !== 'PROCESSING') {
            parsed.push(`${document.name}: ${current.status}${'error' in current && current.error ? ` (${String(current.error)})` : ''}`);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 200));
          current = (await getJson(`${server.base}/api/v1/knowledge-bases/${base.id}/sources/${source.id}`, auth)) as typeof source;
        }
      }
    })().catch((error: unknown) => parsed.push(`the service stopped answering: ${errorMessage(error)}`));
    process.stdout.write(`[${engine.name}] while parsing: the same load, sources uploaded and parsed one after the other…\n`);
    const parsing = await measure(server.base, path, auth);
    loading = false;
    await parses;
    return { engine: engine.name, baseline, parsing, parsed };
  } finally {
    await server.stop();
  }
}

function report(result: Result): boolean {
  const rows = [
    ['', 'req/s', 'p99 ms'],
    ['baseline (nothing parsed)', fixed(result.baseline.reqPerSec, 0), fixed(result.baseline.p99, 1)],
    ['while parsing', fixed(result.parsing.reqPerSec, 0), fixed(result.parsing.p99, 1)],
  ];
  process.stdout.write(`\n${result.engine}\n${table(rows, (column) => column > 0)}\n`);
  process.stdout.write(`p99 while parsing / baseline: ${fixed(result.parsing.p99 / Math.max(result.baseline.p99, 0.001), 2)}\n`);
  process.stdout.write(
    `sources parsed during the measurement (${result.parsed.length}):\n${result.parsed.map((line) => `  ${line}\n`).join('')}`,
  );
  return checkClean(result.baseline) && checkClean(result.parsing) && result.parsed.length > 0;
}

await runBench(async () => {
  const { failed } = await forEachEngine(run, report);
  return failed ? 1 : 0;
});
