import { PGlite } from '@electric-sql/pglite';
const lite = await PGlite.create('memory://');
await lite.exec(`SET statement_timeout = '500ms'`);
console.log((await lite.query("SELECT current_setting('statement_timeout') s")).rows);
for (const sql of ['SELECT pg_sleep(2)', 'SELECT count(*) FROM generate_series(1, 30000000)']) {
  const t0 = Date.now();
  try { await lite.query(sql); console.log(sql, 'finished', Date.now() - t0, 'ms'); } catch (e) { console.log(sql, 'ERR', (e as Error).message, Date.now() - t0, 'ms'); }
}
