import { PGlite } from '@electric-sql/pglite';
const lite = await PGlite.create('memory://');
for (const d of [5000, 10000, 20000, 100000]) {
try { const r = await lite.query('SELECT jsonb_typeof($1::jsonb) AS j', ['['.repeat(d) + ']'.repeat(d)]); console.log(d, 'ok', r.rows.length, JSON.stringify(r.rows)); }
catch (e) { console.log(d, 'ERR', (e as Error).stack?.split('\n').slice(0, 6).join('\n')); }
try { const r = await lite.query('SELECT $1::int + 1 AS n', [1]); console.log('after', JSON.stringify(r.rows)); }
catch (e) { console.log('after', 'ERR', (e as Error).message.slice(0, 150)); }
}
