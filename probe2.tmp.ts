import { PGlite } from '@electric-sql/pglite';
const lite = await PGlite.create('memory://');
await lite.exec(`CREATE TABLE t (id serial primary key, name text, meta jsonb); INSERT INTO t(name, meta) SELECT 'n'||g, '{}' FROM generate_series(1,100) g;`);
const depth = Number(process.argv[2] ?? 5000);
for (const d of [100, 1000, 2000, 3000, depth]) {
  try { const r = await lite.query('SELECT jsonb_typeof($1::jsonb) AS t', ['['.repeat(d) + ']'.repeat(d)]); console.log(d, 'ok', JSON.stringify(r.rows)); }
  catch (e) { console.log(d, 'ERR', (e as Error).message.slice(0, 150)); }
}
for (let i = 0; i < 5; i++) {
  const t0 = Date.now();
  try { const r = await lite.query('SELECT count(*) AS n FROM t WHERE id > $1', [i]); console.log('after', i, JSON.stringify(r.rows), Date.now() - t0, 'ms'); }
  catch (e) { console.log('after', i, 'ERR', (e as Error).message.slice(0, 150)); }
}
const t0 = Date.now();
try { await lite.transaction(async (tx) => { await tx.query('INSERT INTO t(name) VALUES ($1)', ['x']); }); console.log('tx ok', Date.now() - t0); } catch (e) { console.log('tx ERR', (e as Error).message); }
