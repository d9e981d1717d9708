import { PGlite } from '@electric-sql/pglite';
const [shape, depth] = [process.argv[2], Number(process.argv[3])];
const lite = await PGlite.create('memory://');
const text = shape === 'array' ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"k":'.repeat(depth) + '1' + '}'.repeat(depth);
const r = await lite.query('SELECT jsonb_typeof($1::jsonb) AS t', [text]);
console.log(r.rows.length === 1 ? 'OK' : 'BROKEN');
