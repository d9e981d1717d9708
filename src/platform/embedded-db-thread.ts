import { parentPort, workerData } from 'node:worker_threads';
import { parse, PGlite, protocol, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { INT8_OID, NUMERIC_OID, parseInt8 } from './db-types.ts';

/**
 * The embedded PostgreSQL (PGlite) on a thread of its own. PGlite runs every statement to its end
 * on the thread that calls it; here that is not the service's thread, so requests, media frames and
 * timers go on while a statement runs, and the database has a core of its own. The service talks
 * to it through `openPglite` (db.ts), one message per statement.
 */

/** What the service asks of the thread; `tx` names an open transaction, else the statement runs alone. */
export type EmbeddedRequest =
  | { op: 'query'; id: number; text: string; params: unknown[]; tx?: number }
  | { op: 'exec'; id: number; text: string; tx?: number }
  | { op: 'begin'; id: number }
  | { op: 'end'; id: number; tx: number; commit: boolean }
  | { op: 'listen'; id: number; channel: string; listener: number }
  | { op: 'unlisten'; id: number; listener: number }
  | { op: 'close'; id: number };

/** An error as it crosses to the service: its message and PostgreSQL's fields (code, constraint, …). */
export interface WireError {
  message: string;
  fields: Record<string, string | number | boolean>;
  /** The engine failed inside a statement (see guardEngine): no statement runs again. */
  engineFailed?: boolean;
}

/** The thread's answers (`id` 0: started, or failed to start) and the notifications of a listener. */
export type EmbeddedReply = { id: number; result: unknown } | { id: number; error: WireError } | { listener: number; payload: string };

/** What the thread starts with besides its data directory: PGlite's parts, prepared once per process. */
export interface EmbeddedArtifacts {
  pgliteWasmModule: WebAssembly.Module;
  initdbWasmModule: WebAssembly.Module;
  fsBundle: Uint8Array<ArrayBuffer>;
}

// PGlite's status of a PostgreSQL error (ereport's longjmp), which PostgreSQL recovers from itself.
const POSTGRES_LONGJMP = 100;
type LoopModule = { _PostgresMainLoopOnce: () => void };

/** A statement the engine could not finish: no statement enters it again. */
class EngineFailed extends Error {}

/**
 * PGlite runs PostgreSQL's C code on the thread's stack and catches every exception thrown out of
 * it, but recovers only PostgreSQL's own errors: any other (V8's "Maximum call stack size exceeded"
 * from a recursion thousands of levels deep, an out-of-memory abort) it swallows, leaving
 * PostgreSQL half-way through the statement, its memory contexts torn. The statement then answers
 * no rows as if it had succeeded, and a later one can spin forever in `MemoryContextDelete` with the
 * thread at 100%. This sees such an exception as it goes by; from then on no statement enters the
 * engine again.
 */
function guardEngine(lite: PGlite) {
  const engine = (lite as unknown as { mod?: LoopModule }).mod;
  let failure: EngineFailed | undefined;
  if (engine) {
    const loopOnce = engine._PostgresMainLoopOnce.bind(engine);
    engine._PostgresMainLoopOnce = () => {
      try {
        loopOnce();
      } catch (error) {
        if ((error as { status?: number })?.status !== POSTGRES_LONGJMP && !failure) {
          failure = new EngineFailed(error instanceof Error ? error.message : String(error));
        }
        throw error;
      }
    };
  }
  const check = () => {
    if (failure) throw failure;
  };
  return {
    failed: () => failure !== undefined,
    /** Runs `statement` unless the engine failed, and fails it too when the engine failed during it. */
    async run<T>(statement: () => Promise<T>): Promise<T> {
      check();
      const result = await statement();
      check();
      return result;
    },
  };
}

// PGlite reports affectedRows 0 for a SELECT; pg's rowCount counts the rows returned.
const resultOf = (result: { rows: unknown[]; affectedRows?: number }) => ({
  rows: result.rows,
  rowCount: result.rows.length > 0 ? result.rows.length : (result.affectedRows ?? 0),
});

function wireError(error: unknown): WireError {
  if (error instanceof EngineFailed) return { message: error.message, engineFailed: true, fields: {} };
  if (!(error instanceof Error)) return { message: String(error), fields: {} };
  const fields: Record<string, string | number | boolean> = { name: error.name };
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') fields[key] = value;
  }
  return { message: error.message, fields };
}

/** Statements kept prepared; beyond this many, the least recently used is deallocated. */
const MAX_PREPARED = 1000;

/** PGlite's own parts of a query that its public types leave out. */
interface PgliteInternals {
  serializers: Record<number, (value: unknown) => string>;
  parsers: Parameters<typeof parse.parseResults>[1];
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Statements prepared once and executed by name, as `pg` does on the server. PGlite's `query`
 * parses and plans every statement again: two thirds of a typical statement's time here (measured
 * with EXPLAIN ANALYZE: planning 0.6–1.0 ms, execution 0.3–0.4 ms). This runs PGlite's extended
 * protocol itself, step for step as `query` does, with a name on the statement: parse and describe
 * once; then bind, describe the portal, execute and sync. The statement's locks are PGlite's own:
 * a statement alone waits for any open transaction, one inside a transaction runs in it.
 */
function preparedStatements(lite: PGlite) {
  const internals = lite as unknown as PgliteInternals;
  const named = new Map<string, { name: string; parameterTypes: number[] }>();
  let prepared = 0;
  const step = (message: Uint8Array) => lite.execProtocolStream(message, { syncToFs: false });

  async function prepare(text: string) {
    const known = named.get(text);
    if (known) {
      // Most recently used last, so the least recently used goes first when there are too many.
      named.delete(text);
      named.set(text, known);
      return known;
    }
    if (named.size >= MAX_PREPARED) await forget(named.keys().next().value!);
    const name = `cf_${++prepared}`;
    try {
      await step(protocol.serialize.parse({ name, text }));
      const parameterTypes = parse.parseDescribeStatementResults(await step(protocol.serialize.describe({ type: 'S', name })));
      const statement = { name, parameterTypes };
      named.set(text, statement);
      return statement;
    } finally {
      await step(protocol.serialize.sync());
    }
  }

  /** Deallocates a statement: texts made per call (a list of n placeholders) must not pile up. */
  async function forget(text: string) {
    const { name } = named.get(text)!;
    named.delete(text);
    try {
      await step(protocol.serialize.close({ type: 'S', name }));
    } finally {
      await step(protocol.serialize.sync());
    }
  }

  async function execute(text: string, params: unknown[]) {
    const { name, parameterTypes } = await prepare(text);
    const values = params.map((value, index) => {
      if (value === null || value === undefined) return null;
      const serializer = internals.serializers[parameterTypes[index]!];
      return serializer ? serializer(value) : String(value);
    });
    const messages = [];
    try {
      messages.push(...(await step(protocol.serialize.bind({ statement: name, values }))));
      messages.push(...(await step(protocol.serialize.describe({ type: 'P' }))));
      messages.push(...(await step(protocol.serialize.execute({}))));
    } finally {
      messages.push(...(await step(protocol.serialize.sync())));
    }
    return parse.parseResults(messages, internals.parsers)[0]!;
  }

  return {
    /** Runs a statement alone (waiting for an open transaction) or, `inTransaction`, in the open one. */
    run(text: string, params: unknown[], inTransaction: boolean) {
      if (inTransaction) return lite.runExclusive(() => execute(text, params));
      return internals._runExclusiveTransaction(() =>
        lite.runExclusive(async () => {
          const result = await execute(text, params);
          await lite.syncToFs();
          return result;
        }),
      );
    },
  };
}

const port = parentPort!;
const { dataDir, pgliteWasmModule, initdbWasmModule, fsBundle } = workerData as EmbeddedArtifacts & { dataDir: string | undefined };
const send = (reply: EmbeddedReply) => port.postMessage(reply);

async function main() {
  // pgvector is offered, not installed: CREATE EXTENSION decides (src/modules/knowledge/vector-index.ts).
  const lite = await PGlite.create(dataDir ?? 'memory://', {
    pgliteWasmModule,
    initdbWasmModule,
    fsBundle: new Blob([fsBundle]),
    extensions: { vector },
    parsers: { [INT8_OID]: parseInt8, [NUMERIC_OID]: (value: string) => value },
  });
  const guard = guardEngine(lite);
  const statements = preparedStatements(lite);
  const transactions = new Map<number, Transaction>();
  /** Open transactions waiting to be told how to end: commit (true) or roll back (false). */
  const endings = new Map<number, (ending: { id: number; commit: boolean }) => void>();
  const listening = new Map<number, () => Promise<void>>();
  let nextTransaction = 1;

  const target = (tx: number | undefined): PGlite | Transaction => {
    if (tx === undefined) return lite;
    const open = transactions.get(tx);
    if (!open) throw new Error('The transaction has already ended.');
    return open;
  };

  const answer = (id: number, work: () => Promise<unknown>) =>
    work().then(
      (result) => send({ id, result }),
      (error: unknown) => send({ id, error: wireError(error) }),
    );

  function begin(id: number) {
    const tx = nextTransaction++;
    let endId = id;
    guard
      .run(() =>
        lite.transaction(async (open) => {
          transactions.set(tx, open);
          send({ id, result: tx });
          const ending = await new Promise<{ id: number; commit: boolean }>((resolve) => endings.set(tx, resolve));
          endId = ending.id;
          transactions.delete(tx);
          if (!ending.commit) await open.rollback();
        }),
      )
      .then(
        () => send({ id: endId, result: null }),
        (error: unknown) => {
          transactions.delete(tx);
          endings.delete(tx);
          send({ id: endId, error: wireError(error) });
        },
      );
  }

  port.on('message', (request: EmbeddedRequest) => {
    switch (request.op) {
      case 'query':
        return answer(request.id, async () => {
          if (request.tx !== undefined) target(request.tx); // still open
          return resultOf(await guard.run(() => statements.run(request.text, request.params, request.tx !== undefined)));
        });
      case 'exec':
        return answer(request.id, async () => {
          const results = await guard.run(() => target(request.tx).exec(request.text));
          const last = results[results.length - 1];
          return last ? resultOf(last) : { rows: [], rowCount: 0 };
        });
      case 'begin':
        return begin(request.id);
      case 'end': {
        const end = endings.get(request.tx);
        endings.delete(request.tx);
        if (end) return end({ id: request.id, commit: request.commit });
        return send({ id: request.id, error: { message: 'The transaction has already ended.', fields: {} } });
      }
      case 'listen':
        return answer(request.id, async () => {
          const unlisten = await lite.listen(request.channel, (payload) => send({ listener: request.listener, payload }));
          listening.set(request.listener, unlisten);
          return null;
        });
      case 'unlisten':
        return answer(request.id, async () => {
          await listening.get(request.listener)?.();
          listening.delete(request.listener);
          return null;
        });
      case 'close':
        // A failed engine is not entered again, not even to shut down: its memory goes with the thread.
        return answer(request.id, async () => {
          if (!guard.failed()) await lite.close();
          return null;
        });
    }
  });
  send({ id: 0, result: 'ready' });
}

main().catch((error: unknown) => send({ id: 0, error: wireError(error) }));
