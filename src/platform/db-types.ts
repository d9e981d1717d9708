/**
 * Both engines hand back the same JS types: int8 as number (counts), numeric as exact string
 * (pg's default for numeric; PGlite is told). One place for the rule, read by `openPostgres`
 * (db.ts) and by the embedded database's thread (embedded-db-thread.ts).
 */
export const INT8_OID = 20;
export const NUMERIC_OID = 1700;
export const parseInt8 = (value: string) => Number(value);
