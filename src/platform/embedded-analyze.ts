import type { Db } from './db.ts';
import type { Logger } from './logger.ts';

/**
 * PGlite runs no autovacuum daemon, so without this its planner never gets statistics: a page of
 * a 100,000-contact list was planned as "fetch every row of the list, then sort" (about 60 ms)
 * instead of walking the page index (under 1 ms). This does the analyze half of autovacuum with
 * its default thresholds: a table is analyzed once 50 rows + 10% of it changed since the last time.
 */
export async function analyzeChangedTables(db: Db): Promise<string[]> {
  // Statistics reach the shared views when the backend flushes them; make the next read current.
  await db.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await db.query<{ name: string }>(
    `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables
     WHERE n_mod_since_analyze > 50 + 0.1 * n_live_tup ORDER BY n_mod_since_analyze DESC`,
  );
  for (const { name } of rows) await db.query(`ANALYZE ${name}`);
  return rows.map((row) => row.name);
}

export function startEmbeddedAnalyze(db: Db, intervalSeconds: number, log: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    analyzeChangedTables(db)
      .then((tables) => tables.length > 0 && log.debug({ tables }, 'analyzed changed tables'))
      .catch((error: unknown) => log.warn({ err: error }, 'embedded analyze failed'))
      .finally(() => (running = false));
  }, intervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
