import { createHash } from 'node:crypto';
import pg from 'pg';
import { readFile } from 'node:fs/promises';
import type { EmbeddedArtifacts, EmbeddedReply, EmbeddedRequest, WireError } from './embedded-db-thread.ts';
import { INT8_OID, parseInt8 } from './db-types.ts';
import { startTypeScriptWorker } from './worker.ts';

/**
 * One code path on two engines: PostgreSQL through `pg`, or PGlite in-process (on a thread of its own).
 * Repos only see `Queryable`; services open transactions through `transaction`.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<R>>;
  /** Runs a multi-statement script without parameters (migrations). */
  execScript(sql: string): Promise<void>;
  /** Runs `fn` in a transaction; inside a transaction it joins the open one. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
}

export type Engine = 'pglite' | 'postgres';

export interface Db extends Queryable {
  readonly engine: Engine;
  /** Subscribes to NOTIFY on a channel; `onLost` fires when delivery can no longer be trusted. */
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    options?: { onLost?: () => void; applicationName?: string },
  ): Promise<() => Promise<void>>;
  /** pg-boss' database interface, optionally bound to an open transaction. */
  jobsAdapter(tx?: Queryable): { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> };
  /** Runs one statement outside any transaction and without the statement timeout (VACUUM). */
  maintain(sql: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Settings of every connection the service opens to a server, sent when it connects. JIT off: the
 * service's statements each read a page, a row or a batch, and PostgreSQL compiles a statement with
 * its JIT (570 ms measured, again at every execution, prepared or not) when the planner's estimate
 * passes `jit_above_cost`. A page's LIMIT and OFFSET taken from a parameter, as a batch of pages
 * takes them, are estimated at a tenth of the list each, so the estimate of a page grows with its
 * list while the work stays a page. docs/decisions/0047-no-jit.md.
 * An `options` parameter in DATABASE_URL takes the place of this one.
 */
export const SESSION_OPTIONS = '-c jit=off';

/**
 * `statementTimeoutMs` bounds every statement of the pool (0: unbounded): PostgreSQL cancels one that
 * runs longer, and it fails with `isStatementTimeout`. pg-boss keeps its own pool, unbounded; a
 * long maintenance statement lifts the bound inside its transaction (`withoutStatementTimeout`).
 */
export function openPostgres(connectionString: string, poolSize: number, statementTimeoutMs = 0): Db {
  const typeParsers = {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === INT8_OID) return parseInt8;
      return pg.types.getTypeParser(oid, format as 'text');
    },
  };
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    options: SESSION_OPTIONS,
    types: typeParsers as pg.CustomTypesConfig,
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
  });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on next use.
  });

  const statementName = (text: string) => 'cf_' + createHash('sha1').update(text).digest('hex').slice(0, 20);

  /**
   * A transaction's connection: its statements go one after another, in the order they were asked,
   * also when a caller asks several at once (Promise.all). The driver used to queue those itself;
   * that queue is deprecated and goes in pg 9.
   */
  const transactionOn = (client: pg.PoolClient) => {
    let previous: Promise<unknown> = Promise.resolve();
    const inTurn = <T>(run: () => Promise<T>): Promise<T> => {
      const result = previous.then(run, run);
      previous = result.catch(() => undefined);
      return result;
    };
    const raw = (sql: string) => inTurn(() => client.query(sql));
    const tx: Queryable = {
      query: <R>(text: string, params: unknown[] = []) =>
        inTurn(async () => {
          const result = await client.query({ name: statementName(text), text, values: params });
          return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
        }),
      execScript: async (sql: string) => void (await raw(sql)),
      transaction: (fn) => fn(tx),
    };
    return { tx, raw };
  };

  return {
    engine: 'postgres',
    async query<R>(text: string, params: unknown[] = []) {
      // Named statements are prepared once per connection and reused.
      const result = await pool.query({ name: statementName(text), text, values: params });
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    },
    async execScript(sql: string) {
      await pool.query(sql);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      const { tx, raw } = transactionOn(client);
      try {
        await raw('BEGIN');
        const result = await fn(tx);
        await raw('COMMIT');
        return result;
      } catch (error) {
        await raw('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async listen(channel, onPayload, options = {}) {
      const { onLost, applicationName } = options;
      const client = new pg.Client({ connectionString, ...(applicationName ? { application_name: applicationName } : {}) });
      client.on('notification', (message) => {
        if (message.channel === channel && message.payload !== undefined) onPayload(message.payload);
      });
      client.on('error', () => onLost?.());
      client.on('end', () => onLost?.());
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return async () => {
        client.removeAllListeners('end');
        await client.end().catch(() => undefined);
      };
    },
    jobsAdapter(tx) {
      if (tx) return { executeSql: (text, values) => tx.query(text, values ?? []) };
      return { executeSql: (text, values) => pool.query(text, values as unknown[]) };
    },
    async maintain(sql) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('SET statement_timeout = 0');
        await client.query(sql);
        await client.query('RESET statement_timeout');
      } catch (error) {
        // The connection may still be without its timeout: it is closed, not returned to the pool.
        broken = error as Error;
        throw error;
      } finally {
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}

/** The embedded database stopped in the middle of a statement; only a restart of the process recovers it. */
export class EmbeddedDatabaseFailure extends Error {
  constructor(cause: unknown) {
    super(
      `The embedded database failed inside a statement (${cause instanceof Error ? cause.message : String(cause)}); restart the service.`,
      {
        cause,
      },
    );
    this.name = 'EmbeddedDatabaseFailure';
  }
}

/** An error of the database thread as the service sees it: PostgreSQL's fields (code, constraint, …) on an Error. */
function errorOf(wire: WireError): Error {
  const { name, ...fields } = wire.fields;
  const error = Object.assign(new Error(wire.message), fields);
  if (typeof name === 'string') error.name = name;
  return error;
}

/**
 * PGlite on its own thread (embedded-db-thread.ts), one message per statement: the service's
 * thread never runs PostgreSQL itself, so a statement does not hold up requests or media frames.
 * Statements still run one at a time, as PGlite does. When the engine fails inside a statement
 * (see the thread's guard), no statement is sent again: each fails with `EmbeddedDatabaseFailure`,
 * and `onFailure` is told once.
 */
export async function openPglite(
  dataDir: string | undefined,
  onFailure: (failure: EmbeddedDatabaseFailure) => void = () => undefined,
): Promise<Db> {
  const thread = startTypeScriptWorker(new URL('./embedded-db-thread.ts', import.meta.url), { dataDir, ...(await pgliteArtifacts()) });
  const waiting = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  const listeners = new Map<number, (payload: string) => void>();
  let nextId = 1;
  let failure: EmbeddedDatabaseFailure | undefined;
  /** From started to close: a failure then is the running service's, to be told. */
  let serving = false;

  const fail = (cause: Error) => {
    if (!failure) {
      failure = new EmbeddedDatabaseFailure(cause);
      if (serving) onFailure(failure);
    }
    return failure;
  };
  thread.on('message', (reply: EmbeddedReply) => {
    if ('listener' in reply) return listeners.get(reply.listener)?.(reply.payload);
    const waiter = waiting.get(reply.id);
    if (!waiter) return;
    waiting.delete(reply.id);
    if (!('error' in reply)) return waiter.resolve(reply.result);
    waiter.reject(reply.error.engineFailed ? fail(new Error(reply.error.message)) : errorOf(reply.error));
  });
  // The thread itself ended (an abort the engine could not catch, or close): no statement can run.
  const ended = (cause: Error) => {
    const error = fail(cause);
    for (const { reject } of waiting.values()) reject(error);
    waiting.clear();
  };
  thread.on('error', ended);
  thread.on('exit', (code) => ended(new Error(`the database thread stopped with code ${code}`)));

  const ask = <T>(request: DistributiveOmit<EmbeddedRequest, 'id'>): Promise<T> => {
    if (failure) return Promise.reject(failure);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (result: unknown) => void, reject });
      thread.postMessage({ ...request, id });
    });
  };

  await new Promise<void>((resolve, reject) => {
    waiting.set(0, { resolve: () => resolve(), reject });
  }).catch(async (error: unknown) => {
    await thread.terminate();
    throw error;
  });
  serving = true;

  const queryableIn = (tx: number | undefined): Queryable => ({
    query: <R>(text: string, params: unknown[] = []) => ask<QueryResult<R>>({ op: 'query', text, params, tx }),
    async execScript(sql: string) {
      await ask({ op: 'exec', text: sql, tx });
    },
    transaction: tx === undefined ? transaction : (fn) => fn(queryableIn(tx)),
  });

  async function transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const tx = await ask<number>({ op: 'begin' });
    let result: T;
    try {
      result = await fn(queryableIn(tx));
    } catch (error) {
      await ask({ op: 'end', tx, commit: false }).catch(() => undefined);
      throw error;
    }
    await ask({ op: 'end', tx, commit: true });
    return result;
  }

  let nextListener = 1;
  const alone = queryableIn(undefined);
  return {
    engine: 'pglite',
    ...alone,
    async listen(channel, onPayload) {
      const listener = nextListener++;
      listeners.set(listener, onPayload);
      await ask({ op: 'listen', channel, listener });
      return async () => {
        listeners.delete(listener);
        await ask({ op: 'unlisten', listener }).catch(() => undefined);
      };
    },
    jobsAdapter(tx) {
      // pg-boss sends its schema as one multi-statement script without parameters.
      const on = tx ?? alone;
      return {
        executeSql: (text, values) =>
          values && values.length > 0 ? on.query(text, values) : tx ? tx.query(text) : ask({ op: 'exec', text }),
      };
    },
    // The embedded engine has no statement timeout to lift.
    maintain: (sql) => alone.execScript(sql),
    async close() {
      await ask({ op: 'close' }).catch(() => undefined);
      serving = false;
      await thread.terminate();
    },
  };
}

/**
 * PGlite's WebAssembly, compiled once per process, and its file-system bundle, read once: each
 * database thread gets them instead of compiling 9 MB of WebAssembly of its own (seconds per opening).
 */
let artifacts: Promise<EmbeddedArtifacts> | undefined;
const pgliteArtifacts = (): Promise<EmbeddedArtifacts> => (artifacts ??= loadPgliteArtifacts());

async function loadPgliteArtifacts(): Promise<EmbeddedArtifacts> {
  const dist = (file: string) => new URL(file, import.meta.resolve('@electric-sql/pglite'));
  // Node's types declare WebAssembly's types but not its functions.
  const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WebAssembly.Module> } }).WebAssembly;
  const [pgliteWasmModule, initdbWasmModule, fsBundle] = await Promise.all([
    readFile(dist('./pglite.wasm')).then((bytes) => wasm.compile(bytes)),
    readFile(dist('./initdb.wasm')).then((bytes) => wasm.compile(bytes)),
    readFile(dist('./pglite.data')),
  ]);
  return { pgliteWasmModule, initdbWasmModule, fsBundle };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const QUERY_CANCELED = '57014';

/** Whether a statement was cancelled: on PostgreSQL, by the statement timeout. */
export function isStatementTimeout(error: unknown): boolean {
  return (error as { code?: string })?.code === QUERY_CANCELED;
}

/**
 * Lifts the statement timeout for the rest of the transaction `tx` (migrations, ANALYZE, index
 * builds). PGlite has no statement timeout to lift: it cannot interrupt a statement at all.
 */
export async function withoutStatementTimeout(tx: Queryable): Promise<void> {
  await tx.execScript('SET LOCAL statement_timeout = 0');
}

/** Whether a statement failed on a unique constraint: any, or the one named. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const failure = error as { code?: string; constraint?: string };
  return failure?.code === UNIQUE_VIOLATION && (constraint === undefined || failure.constraint === constraint);
}

/** Whether a statement failed on a foreign key: what it refers to does not exist (or no longer). */
export function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === FOREIGN_KEY_VIOLATION;
}

/**
 * Awaits a write whose duplicate is the caller's mistake, not ours: a unique violation (of
 * `constraint` when named) becomes `refusal`, the catalogue's 409; any other failure goes through.
 */
export async function onUniqueViolation<T>(write: Promise<T>, refusal: () => Error | Promise<Error>, constraint?: string): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (isUniqueViolation(error, constraint)) throw await refusal();
    throw error;
  }
}

/**
 * The SET list of a partial update: `column = $n` for each value given (undefined leaves the column
 * as it is, null clears it), numbered after the statement's own first `offset` parameters, then
 * `updated_at = now()`. Column names come from the repo's code, never from a request.
 */
export function updateSet(values: Record<string, unknown>, offset: number): { set: string; params: unknown[] } {
  const given = Object.entries(values).filter(([, value]) => value !== undefined);
  const set = [...given.map(([column], i) => `${column} = $${offset + i + 1}`), 'updated_at = now()'].join(', ');
  return { set, params: given.map(([, value]) => value) };
}

/** The column and value lists of an INSERT of the values given (undefined ones are left to their defaults). */
export function insertValues(values: Record<string, unknown>): { columns: string; placeholders: string; params: unknown[] } {
  const given = Object.entries(values).filter(([, value]) => value !== undefined);
  return {
    columns: given.map(([column]) => column).join(', '),
    placeholders: given.map((_, i) => `$${i + 1}`).join(', '),
    params: given.map(([, value]) => value),
  };
}
