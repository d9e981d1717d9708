import { withoutStatementTimeout, type Db } from './db.ts';
import type { Logger } from './logger.ts';

/** One process at a time analyzes; the others skip the round (ANALYZE of a table waits for another). */
export const ANALYZE_LOCK = 0x63665f61; // 'cf_a'

/**
 * Without planner statistics a query is planned for an empty table: a page of a 100,000-contact
 * list was planned as "fetch every row of the list, then sort" (about 60 ms instead of under
 * 1 ms), and a statement prepared while `calls` was empty kept updating calls through the wrong
 * index, so the dialer slowed as the table grew. Autovacuum analyzes changed tables; PGlite has no
 * autovacuum and a server may run with it off. This does the analyze half of autovacuum with its
 * default thresholds: a table is analyzed once 50 rows + 10% of it changed since the last time.
 * Returns the tables analyzed ([] when another process holds the round).
 */
export async function analyzeChangedTables(db: Db): Promise<string[]> {
  // A backend's counts reach the shared views when it flushes them, after its transaction; on the
  // embedded engine's one backend this makes the read below current.
  await db.query('SELECT pg_stat_force_next_flush()');
  return db.transaction(async (tx) => {
    const { rows: lock } = await tx.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [ANALYZE_LOCK]);
    if (!lock[0]!.ok) return [];
    await withoutStatementTimeout(tx); // ANALYZE of a big table may take longer than a request may
    const { rows } = await tx.query<{ name: string }>(
      `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables
       WHERE n_mod_since_analyze > 50 + 0.1 * n_live_tup ORDER BY n_mod_since_analyze DESC`,
    );
    for (const { name } of rows) await tx.query(`ANALYZE ${name}`);
    return rows.map((row) => row.name);
  });
}

/**
 * The vacuum half of autovacuum, with its default threshold: a table is vacuumed once 50 rows + 20%
 * of it are dead. Without it nothing takes dead rows out of the indexes: the job queue's fetch,
 * which reads its queue's index of waiting jobs, also read the entry of every job completed since
 * the start, and took 3-5 ms instead of 0.1 while the dialer ran (two workers dialled 451
 * attempts/s instead of 640-696). A table another process is vacuuming is skipped. Returns the
 * tables vacuumed.
 */
export async function vacuumDeadTables(db: Db): Promise<string[]> {
  await db.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await db.query<{ name: string }>(
    `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables
     WHERE n_dead_tup > 50 + 0.2 * n_live_tup ORDER BY n_dead_tup DESC`,
  );
  if (rows.length === 0) return [];
  const tables = rows.map((row) => row.name);
  await db.maintain(`VACUUM (SKIP_LOCKED) ${tables.join(', ')}`);
  return tables;
}

/** Whether this database needs us to keep its statistics and vacuum it: PGlite always, a server with autovacuum off. */
export async function needsOwnUpkeep(db: Db): Promise<boolean> {
  if (db.engine === 'pglite') return true;
  const { rows } = await db.query<{ autovacuum: string }>('SHOW autovacuum');
  return rows[0]?.autovacuum !== 'on';
}

/** Every `intervalSeconds`: analyze the changed tables, then vacuum those with many dead rows. */
export function startTableUpkeep(db: Db, intervalSeconds: number, log: Logger): () => void {
  let running = false;
  const upkeep = async () => {
    const analyzed = await analyzeChangedTables(db);
    if (analyzed.length > 0) log.debug({ tables: analyzed }, 'analyzed changed tables');
    const vacuumed = await vacuumDeadTables(db);
    if (vacuumed.length > 0) log.debug({ tables: vacuumed }, 'vacuumed tables');
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    upkeep()
      .catch((error: unknown) => log.warn({ err: error }, 'analyze or vacuum of changed tables failed'))
      .finally(() => (running = false));
  }, intervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
