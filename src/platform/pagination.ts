import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

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
