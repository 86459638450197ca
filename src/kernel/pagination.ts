import { type SelectQueryBuilder, sql } from 'kysely';
import { literalLimit } from './db/limit.js';
import { type TSchema, Type } from 'typebox';
import { apiError } from './errors.js';

// Cursor pagination with the reference's list envelope: {data, hasMore, nextCursor?,
// totalCount}. Lists are newest first (oldest first with sortOrder=asc where offered); ids are UUID v7, so ordering by id is ordering by
// creation time, and the cursor is the last id returned (opaque, base64url).

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: `Maximum number of results (default ${DEFAULT_LIMIT}, max ${MAX_LIMIT})` })),
  cursor: Type.Optional(Type.String({ description: 'Cursor from a previous page (nextCursor)' })),
};

export function ListOf<T extends TSchema>(item: T, what: string) {
  return Type.Object({
    data: Type.Array(item, { description: `List of ${what}` }),
    hasMore: Type.Boolean({ description: 'Whether more results exist beyond this page' }),
    nextCursor: Type.Optional(Type.String({ description: 'Cursor for the next page; present only when hasMore is true' })),
    totalCount: Type.Integer({ description: `Total number of ${what} matching the filters` }),
  });
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

export function encodeCursor(id: string): string {
  return Buffer.from(JSON.stringify({ id }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { id?: unknown };
    if (typeof v.id === 'string' && v.id.length > 0) return v.id;
  } catch {
    /* fall through */
  }
  throw apiError(400, 'INVALID_INPUT', 'cursor is not a cursor this service returned', {
    errors: [{ field: 'cursor', message: 'is not a valid cursor' }],
  });
}

/** The order of a list: `desc` newest first (the default), `asc` oldest first. */
export type SortOrder = 'asc' | 'desc';

/** The `sortOrder` query parameter of the lists that take one. */
export const SortOrderQuery = Type.Optional(
  Type.Enum(['asc', 'desc'], { default: 'desc', description: 'Order to sort results in: desc (default) newest first, asc oldest first' }),
);

/**
 * Run a filtered query as one page (newest first unless `order` is asc). The cursor is the
 * last id of the page, so it continues the list in the order it was read in. `base` carries the table and filters (no select);
 * `idColumn` is the id column the order and cursor use; `toItem` maps a row.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function paginate<Row, Item>(
  base: SelectQueryBuilder<any, any, object>,
  idColumn: string,
  opts: { limit?: number | undefined; cursor?: string | undefined; order?: SortOrder | undefined },
  toItem: (row: Row) => Item,
  /** The totalCount when the caller has it without counting (a kept count, kernel/db/list-counts.ts); else count(*) of `base`. */
  totalCount?: () => Promise<number>,
): Promise<Page<Item>> {
  const limit = opts.limit ?? DEFAULT_LIMIT;
  const order = opts.order ?? 'desc';
  const countRow = totalCount
    ? { n: await totalCount() }
    : ((await base.select(sql<number>`count(*)`.as('n')).executeTakeFirst()) as { n: number | string } | undefined);
  let q = base.selectAll();
  if (opts.cursor !== undefined) q = q.where(idColumn, order === 'desc' ? '<' : '>', decodeCursor(opts.cursor));
  const rows = (await q.orderBy(idColumn, order).limit(literalLimit(limit + 1)).execute()) as Row[];
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const page: Page<Item> = { data: pageRows.map(toItem), hasMore, totalCount: Number(countRow?.n ?? 0) };
  if (hasMore) page.nextCursor = encodeCursor((pageRows[pageRows.length - 1] as Record<string, string>)[idColumn.split('.').pop()!]!);
  return page;
}

/** The created/updated range filters lists share (query parameters, ISO 8601). */
export const TimeRangeQuery = {
  createdAfter: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after (inclusive)' })),
  createdBefore: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or before (inclusive)' })),
  updatedAfter: Type.Optional(Type.String({ format: 'date-time', description: 'Updated at or after (inclusive)' })),
  updatedBefore: Type.Optional(Type.String({ format: 'date-time', description: 'Updated at or before (inclusive)' })),
};

export interface TimeRange {
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  updatedAfter?: string | undefined;
  updatedBefore?: string | undefined;
}

/** Normalise the range to the stored form (ISO 8601 UTC with milliseconds), so text comparison is time comparison. */
export function timeRangeOf(q: TimeRange): TimeRange {
  const norm = (s: string | undefined) => (s === undefined ? undefined : new Date(Date.parse(s)).toISOString());
  return { createdAfter: norm(q.createdAfter), createdBefore: norm(q.createdBefore), updatedAfter: norm(q.updatedAfter), updatedBefore: norm(q.updatedBefore) };
}

/** Apply a time range to a query over a table with created_at / updated_at columns. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function whereTimeRange<Q extends SelectQueryBuilder<any, any, any>>(q: Q, r: TimeRange): Q {
  let out = q;
  if (r.createdAfter !== undefined) out = out.where('created_at', '>=', r.createdAfter) as Q;
  if (r.createdBefore !== undefined) out = out.where('created_at', '<=', r.createdBefore) as Q;
  if (r.updatedAfter !== undefined) out = out.where('updated_at', '>=', r.updatedAfter) as Q;
  if (r.updatedBefore !== undefined) out = out.where('updated_at', '<=', r.updatedBefore) as Q;
  return out;
}
