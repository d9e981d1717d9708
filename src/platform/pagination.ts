import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import type { Queryable } from './db.ts';

/** The highest page a list serves: beyond any real list, and low enough that the row offset stays exact. */
export const MAX_PAGE = 1_000_000_000;
export const MAX_LIMIT = 200;

/** `page` and `limit` as every list takes them; `defaults: false` for a list whose "neither given" means "all". */
export const pageParams = ({ defaults = true, limitDescription = `Items per page, 1 to ${MAX_LIMIT}.` } = {}) => ({
  page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_PAGE, ...(defaults ? { default: 1 } : {}), description: '1-based page number.' }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_LIMIT, ...(defaults ? { default: 25 } : {}), description: limitDescription }),
  ),
});

/** The one pagination of every list endpoint: `?page=1&limit=25` answered as `{data, total, page, limit}`. */
export const PageQuery = Type.Object(pageParams());
export type PageQuery = Static<typeof PageQuery>;

export interface Page {
  page: number;
  limit: number;
  offset: number;
}

export const toPage = (query: PageQuery): Page => {
  const page = query.page ?? 1;
  const limit = query.limit ?? 25;
  return { page, limit, offset: (page - 1) * limit };
};

export const PageOf = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() });
/** A list endpoint's answer with items of type T: `PageOf<Agent>` is the static type of `PageOf(Agent)`. */
export type PageOf<T> = Static<ReturnType<typeof PageOf<TUnsafe<T>>>>;

export const pageOf = <T>(data: T[], total: number, page: Page) => ({ data, total, page: page.page, limit: page.limit });

/** A list's page as one SELECT: its rows and the count of the whole list, sharing their parameters. */
export interface PagedSelect {
  /** The list's rows, ending with the ORDER BY that sorts them: LIMIT and OFFSET come after it, as the next two parameters. */
  rows: string;
  /** One row of one column, the list's size over every page: `SELECT count(*)::int AS n FROM … WHERE …`. */
  total: string;
  /** The $1, $2, … of both. */
  params: unknown[];
}

/**
 * A page of a list and the list's total, read in one statement and so from one snapshot. As two
 * statements side by side they ran on two of the pool's connections on PostgreSQL, and a write
 * committed between them gave a page whose rows and total disagreed (CI once read a total of 2 with
 * no rows). One statement is also one round trip instead of two.
 *
 * The total's one row is joined to each row of the page. For an empty page the LEFT JOIN still gives
 * that row once, with the page's columns null; `page_row`, each page row's place in the rows
 * query's order (numbered as the LIMIT hands them on), tells them apart and orders the result, so
 * the order does not rest on how the planner runs the join. Each row comes back with the rows
 * query's columns only, the helper's two taken off: a list's own columns must not be named
 * `page_total` or `page_row`.
 */
export async function selectPage<R>(
  db: Queryable,
  select: PagedSelect,
  page: Pick<Page, 'limit' | 'offset'>,
): Promise<{ rows: R[]; total: number }> {
  // LIMIT and OFFSET are the two parameters after the list's own.
  const limitAt = select.params.length + 1;
  const { rows } = await db.query<R & PageColumns>(
    `SELECT t.page_total, p.*
     FROM (${select.total}) AS t (page_total)
     LEFT JOIN LATERAL (SELECT (row_number() OVER ())::int AS page_row, r.* FROM (${select.rows} LIMIT $${limitAt} OFFSET $${limitAt + 1}) AS r) AS p ON true
     ORDER BY p.page_row`,
    [...select.params, page.limit, page.offset],
  );
  return {
    rows: rows.filter((row) => row.page_row !== null).map(({ page_total: _total, page_row: _row, ...row }) => row as unknown as R),
    total: rows[0]!.page_total,
  };
}

/** The columns `selectPage`'s statement adds to each row, and takes off again. */
interface PageColumns {
  page_total: number;
  page_row: number | null;
}
