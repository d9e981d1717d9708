import { PGlite } from '@electric-sql/pglite';
const [shape, depth, msd] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const lite = await PGlite.create('memory://');
if (msd) await lite.exec(`SET max_stack_depth = '${msd}'`);
const text = shape === 'array' ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"k":'.repeat(depth) + '1' + '}'.repeat(depth);
try { const r = await lite.query('SELECT jsonb_typeof($1::jsonb) AS t', [text]); console.log(r.rows.length === 1 ? 'OK' : 'BROKEN'); } catch (e) { console.log('ERR ' + (e as Error).message); }
const r2 = await lite.query('SELECT 1 AS one'); console.log('after', r2.rows.length);
