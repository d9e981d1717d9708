import { PGlite } from '@electric-sql/pglite';
const lite = await PGlite.create('memory://');
console.log((await lite.query("SELECT current_setting('max_stack_depth') s")).rows);
const msd = process.argv[2]; if (msd) await lite.exec(`SET max_stack_depth = '${msd}'`);
console.log((await lite.query("SELECT current_setting('max_stack_depth') s")).rows);
for (const d of [5000, 10000, 20000, 100000]) {
  const t0 = Date.now();
  try { const r = await lite.query('SELECT jsonb_typeof($1::jsonb) AS j', ['['.repeat(d) + ']'.repeat(d)]); console.log(d, 'ok', r.rows.length, JSON.stringify(r.rows), Date.now() - t0); }
  catch (e) { console.log(d, 'ERR', (e as Error).message, Date.now() - t0); }
  try { const r = await lite.query('SELECT $1::int + 1 AS n', [1]); console.log('after', JSON.stringify(r.rows)); }
  catch (e) { console.log('after', 'ERR', (e as Error).message.slice(0, 150)); }
}
