import { PGlite } from '@electric-sql/pglite';
const lite = await PGlite.create('memory://');
const mod = (lite as unknown as { mod: Record<string, (...a: unknown[]) => unknown> }).mod;
const original = mod._PostgresMainLoopOnce!;
let failure: unknown;
mod._PostgresMainLoopOnce = (...args: unknown[]) => {
  try { return original(...args); }
  catch (e) { if ((e as { status?: number }).status !== 100) { failure ??= e; console.log('caught', (e as Error).constructor.name, (e as Error).message); } throw e; }
};
const d = Number(process.argv[2] ?? 8000);
const text = '['.repeat(d) + '1' + ']'.repeat(d);
try { const r = await lite.query('SELECT jsonb_typeof($1::jsonb) AS t', [text]); console.log('rows', r.rows.length, 'failure?', Boolean(failure)); } catch (e) { console.log('ERR', (e as Error).message); }
try { const r = await lite.query('SELECT 1 AS one'); console.log('after', r.rows); } catch (e) { console.log('after ERR', (e as Error).message); }
