import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { withoutStatementTimeout, type Db } from './db.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
// Any fixed number shared by every process: concurrent starters apply migrations one at a time.
const MIGRATION_LOCK = 7_140_531;

export interface MigrationResult {
  applied: string[];
}

/** Applies numbered SQL files (`001_name.sql`) not yet recorded, each in its own transaction. */
export async function migrate(db: Db): Promise<MigrationResult> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{3}_[\w-]+\.sql$/.test(f)).sort();
  const applied: string[] = [];
  // Under the lock too: two processes running CREATE TABLE IF NOT EXISTS at once can both try to
  // create it, and the loser fails on the catalog's unique index.
  await db.transaction(async (tx) => {
    await withoutStatementTimeout(tx);
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.execScript(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
  for (const file of files) {
    const version = Number(file.slice(0, 3));
    const sql = await readFile(MIGRATIONS_DIR + file, 'utf8');
    await db.transaction(async (tx) => {
      // A migration (or the wait for another process' one) may take longer than any request may.
      await withoutStatementTimeout(tx);
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const done = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [version]);
      if (done.rowCount > 0) return;
      await tx.execScript(sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [version, file]);
      applied.push(file);
    });
  }
  return { applied };
}
