import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { nativeJson, rejectNonFinite, RequestValidationError } from '@platform/http-kit';
import { Int32 } from '@platform/schema';
import { BadRequest, NotFound } from '../errors';
import type { FastifyReply } from 'fastify';
import { errors } from './http';

export const MAX_LIMIT = 25;

/** Query of every collection. Unknown parameters are ignored, as the Flask backend ignores them. */
/*
 * `limit` and `offset` are PostgreSQL integers (int4): beyond that range a validation error, never a
 * value the database refuses (a 500). Within it, the Flask backend's rules below apply (a negative
 * offset or a limit of 0 or less is a plain 400, a larger limit is clamped); no collection of rows
 * keyed by integer ids holds more than 2^31 - 1 items, so a larger offset is past the end anyway.
 */
export const PageQuery = Type.Object({
  limit: Type.Optional(
    Int32({
      description: `Page size; default and maximum ${MAX_LIMIT} (larger values are clamped and the clamped value reported)`,
    }),
  ),
  offset: Type.Optional(Int32({ description: 'Items to skip (default 0); not with `after`' })),
  after: Type.Optional(
    Type.String({
      description:
        'Start strictly after this sort key: a timestamp on posts, a username on follower lists; not with `offset`',
    }),
  ),
});
export type PageQuery = Static<typeof PageQuery>;

export const Pagination = Type.Object(
  {
    limit: Type.Integer({ description: 'The page size used (after clamping)' }),
    offset: Type.Integer({
      description: 'Items before this page; in `after` mode, the items at or before the cursor',
    }),
    count: Type.Integer({ description: 'Items in `data`' }),
    total: Type.Integer({ description: 'Items in the whole collection' }),
  },
  { $id: 'Pagination' },
);
export type Pagination = Static<typeof Pagination>;

export const Paginated = <T extends TSchema>(item: T, id: string) =>
  Type.Object(
    { pagination: Pagination, data: Type.Array(item) },
    { $id: id, description: 'One page of a collection' },
  );

export type PageRequest<C> = { limit: number } & (
  { mode: 'after'; after: C } | { mode: 'offset'; offset: number }
);

/** One page of a collection, read with the collection's size. */
export interface Page<T> {
  total: number;
  /** After a cursor: how many items sort at or before it (0 in offset mode). */
  atOrBefore: number;
  items: T[];
}

/** What a collection's repository answers for one page. */
export interface PageSource<T, C> {
  /**
   * The page and the collection's size in one statement (the size from a counter, never a count of
   * the collection); undefined when the collection's owner does not exist.
   */
  read(request: PageRequest<C>): Promise<Page<T> | undefined>;
  /**
   * Whether the collection's owner exists, for a collection that has one: asked only when the query
   * is refused, so that a missing owner stays a 404 whatever the query.
   */
  exists?(): Promise<boolean>;
}

/** The sizes every row of a page statement carries (bigint counts arrive as strings). */
interface PageSizes {
  total: string | number | null;
  at_or_before: string | number | null;
}

/**
 * A page from the rows of a statement that reads the sizes and LEFT JOINs the page LATERAL: one row
 * per item, or one row without an item when the page is empty. A null total: no such owner.
 */
export function pageFromRows<R extends PageSizes, T>(
  rows: R[],
  item: (row: R) => T | undefined,
): Page<T> | undefined {
  const sizes = rows[0];
  if (!sizes || sizes.total === null) return undefined;
  const items: T[] = [];
  for (const row of rows) {
    const value = item(row);
    if (value !== undefined) items.push(value);
  }
  return { total: Number(sizes.total), atOrBefore: Number(sizes.at_or_before ?? 0), items };
}

const schemaError = (message: string) =>
  new RequestValidationError([{ field: '_schema', message }], 'querystring');

/**
 * The Flask backend's pagination rules: `offset` and `after` exclude each other (a validation
 * error on `_schema`); `limit` is clamped to 25; a negative offset, a limit of 0 or less, or an
 * offset at or past a non-empty collection's end is a plain 400. `parseCursor` turns `after`
 * into the collection's sort key (absent: the collection takes no cursor, a plain 400).
 */
function pageRequest<C>(query: PageQuery, parseCursor?: (after: string) => C): PageRequest<C> {
  // marshmallow's int() refuses Infinity and `1e309`, and our serializer could not write them.
  rejectNonFinite(query, ['limit', 'offset'], () => 'Not a valid integer.');
  if (query.offset !== undefined && query.after !== undefined)
    throw schemaError('Cannot specify both offset and after');
  const limit = Math.min(query.limit ?? MAX_LIMIT, MAX_LIMIT);
  if (limit <= 0) throw new BadRequest();
  if (query.after !== undefined) {
    if (!parseCursor) throw new BadRequest();
    return { mode: 'after', limit, after: parseCursor(query.after) };
  }
  const offset = query.offset ?? 0;
  if (offset < 0) throw new BadRequest();
  return { mode: 'offset', limit, offset };
}

async function paginate<T, R, C>(
  query: PageQuery,
  parseCursor: ((after: string) => C) | undefined,
  source: PageSource<T, C>,
  serialize: (item: T) => R,
) {
  let request: PageRequest<C>;
  try {
    request = pageRequest(query, parseCursor);
  } catch (error) {
    if (source.exists && !(await source.exists())) throw new NotFound();
    throw error;
  }
  const page = await source.read(request);
  if (!page) throw new NotFound();
  const { total, atOrBefore, items } = page;
  if (request.mode === 'offset' && total > 0 && request.offset >= total) throw new BadRequest();
  return {
    // The schema's order: the native serialiser answers it (see `nativeJson`).
    pagination: {
      limit: request.limit,
      offset: request.mode === 'offset' ? request.offset : atOrBefore,
      count: items.length,
      total,
    },
    data: items.map(serialize),
  };
}

/**
 * A collection's routes: what their schemas say about paging, and how they answer (one page as the
 * query asks for it, the items in their wire form). `page` is the `Paginated` schema of the items;
 * `parseCursor` reads `after` (absent: the collection takes no cursor, `after` is a 400).
 */
export function collection<P extends TSchema, T, R, C = never>(
  page: P,
  serialize: (item: T) => R,
  parseCursor?: (after: string) => C,
) {
  return {
    /** The route schema's query and responses: a page, the query's 400, and `statuses`. */
    schema: (...statuses: number[]) => ({
      querystring: PageQuery,
      response: { 200: page, ...errors(400, ...statuses) },
    }),
    answer: async (query: PageQuery, source: PageSource<T, C>, reply: FastifyReply) =>
      nativeJson(reply, await paginate(query, parseCursor, source, serialize)),
  };
}

const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$/i;

/** An `after` timestamp: ISO 8601 (a timestamp the API emitted, exactly); no zone means UTC. */
export function parseTimestampCursor(after: string): Date {
  const text = after.trim();
  const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`;
  const time = ISO_DATETIME.test(text) ? Date.parse(zoned) : NaN;
  if (Number.isNaN(time))
    throw new RequestValidationError([{ field: 'after', message: 'Not a valid datetime.' }], 'querystring');
  return new Date(time);
}

/** An `after` username: any text (names sort bytewise, collation "C") but a NUL, which PostgreSQL text cannot hold. */
export function parseUsernameCursor(after: string): string {
  if (after.includes('\u0000'))
    throw new RequestValidationError(
      [{ field: 'after', message: 'after must not contain NUL characters' }],
      'querystring',
    );
  return after;
}
