import { createHash } from 'node:crypto';
import pg from 'pg';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';

/**
 * One code path on two engines: PostgreSQL through `pg`, or PGlite in-process.
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
  close(): Promise<void>;
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

// Both engines hand back the same JS types: int8 as number (counts), numeric as exact string.
const parseInt8 = (value: string) => Number(value);

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
    types: typeParsers as pg.CustomTypesConfig,
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
  });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on next use.
  });

  const statementName = (text: string) => 'cf_' + createHash('sha1').update(text).digest('hex').slice(0, 20);

  const clientQueryable = (client: pg.PoolClient): Queryable => ({
    async query<R>(text: string, params: unknown[] = []) {
      const result = await client.query({ name: statementName(text), text, values: params });
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    },
    async execScript(sql: string) {
      await client.query(sql);
    },
    transaction: (fn) => fn(clientQueryable(client)),
  });

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
      try {
        await client.query('BEGIN');
        const result = await fn(clientQueryable(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
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
    close: () => pool.end(),
  };
}

// PGlite reports affectedRows 0 for a SELECT; pg's rowCount counts the rows returned.
const liteResult = <R>(result: { rows: R[]; affectedRows?: number }): QueryResult<R> => ({
  rows: result.rows,
  rowCount: result.rows.length > 0 ? result.rows.length : (result.affectedRows ?? 0),
});

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

// PGlite's status of a PostgreSQL error (ereport's longjmp), which PostgreSQL recovers from itself.
const POSTGRES_LONGJMP = 100;
type LoopModule = { _PostgresMainLoopOnce: () => void };

/**
 * PGlite runs PostgreSQL's C code on the Node thread's stack and catches every exception thrown out
 * of it, but recovers only PostgreSQL's own errors: any other (V8's "Maximum call stack size
 * exceeded" from a recursion thousands of levels deep, an out-of-memory abort) it swallows, leaving
 * PostgreSQL half-way through the statement, its memory contexts torn. The statement then answers
 * no rows as if it had succeeded, and a later one can spin forever in `MemoryContextDelete` with the
 * thread at 100%. This sees such an exception as it goes by; from then on no statement enters the
 * engine again: each fails with `EmbeddedDatabaseFailure`, and `onFailure` is told once.
 */
function guardEngine(lite: PGlite, onFailure: (failure: EmbeddedDatabaseFailure) => void) {
  const engine = (lite as unknown as { mod?: LoopModule }).mod;
  let failure: EmbeddedDatabaseFailure | undefined;
  if (engine) {
    const loopOnce = engine._PostgresMainLoopOnce.bind(engine);
    engine._PostgresMainLoopOnce = () => {
      try {
        loopOnce();
      } catch (error) {
        if ((error as { status?: number })?.status !== POSTGRES_LONGJMP && !failure) {
          failure = new EmbeddedDatabaseFailure(error);
          onFailure(failure);
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

export async function openPglite(
  dataDir: string | undefined,
  onFailure: (failure: EmbeddedDatabaseFailure) => void = () => undefined,
): Promise<Db> {
  // pgvector is offered, not installed: CREATE EXTENSION decides (src/modules/knowledge/vector-index.ts).
  const lite = await PGlite.create(dataDir ?? 'memory://', {
    extensions: { vector },
    parsers: { [INT8_OID]: parseInt8, [NUMERIC_OID]: (value: string) => value },
  });
  const guard = guardEngine(lite, onFailure);

  const runExec = async (target: PGlite | Transaction, text: string) => {
    const results = await guard.run(() => target.exec(text));
    const last = results[results.length - 1];
    return last ? liteResult(last) : { rows: [], rowCount: 0 };
  };

  const txQueryable = (tx: Transaction): Queryable => ({
    async query<R>(text: string, params: unknown[] = []) {
      return liteResult(await guard.run(() => tx.query<R>(text, params)));
    },
    async execScript(sql: string) {
      await guard.run(() => tx.exec(sql));
    },
    transaction: (fn) => fn(txQueryable(tx)),
  });

  return {
    engine: 'pglite',
    async query<R>(text: string, params: unknown[] = []) {
      return liteResult(await guard.run(() => lite.query<R>(text, params)));
    },
    async execScript(sql: string) {
      await guard.run(() => lite.exec(sql));
    },
    transaction: (fn) => guard.run(() => lite.transaction((tx) => fn(txQueryable(tx)))),
    async listen(channel, onPayload) {
      const unlisten = await lite.listen(channel, onPayload);
      return async () => unlisten();
    },
    jobsAdapter(tx) {
      return {
        async executeSql(text, values) {
          // pg-boss sends its schema as one multi-statement script without parameters.
          if (!values || values.length === 0) {
            return tx ? tx.query(text) : runExec(lite, text);
          }
          return tx ? tx.query(text, values) : guard.run(() => lite.query(text, values));
        },
      };
    },
    // A failed engine is not entered again, not even to shut down: its memory goes with the process.
    close: async () => {
      if (!guard.failed()) await lite.close();
    },
  };
}

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
