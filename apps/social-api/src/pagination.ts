import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { RequestValidationError } from '@platform/http-kit';
import { BadRequest } from './errors';
import { errors } from './http';

export const MAX_LIMIT = 25;

/** Query of every collection. Unknown parameters are ignored, as the Flask backend ignores them. */
export const PageQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      description: `Page size; default and maximum ${MAX_LIMIT} (larger values are clamped and the clamped value reported)`,
    }),
  ),
  offset: Type.Optional(Type.Integer({ description: 'Items to skip (default 0); not with `after`' })),
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

/** What a collection's repository answers for one page. */
export interface PageSource<T, C> {
  /** The collection's size, and (given a cursor) how many items sort at or before it. */
  count(after: C | undefined): Promise<{ total: number; atOrBefore: number }>;
  page(request: PageRequest<C>): Promise<T[]>;
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
  // Ajv's coercion turns `Infinity` and `1e309` into Infinity and checks nothing after it (not even
  // `maximum`); marshmallow's int() refuses them, and our serializer could not write them.
  const infinite = (['limit', 'offset'] as const).filter(
    (field) => query[field] !== undefined && !Number.isFinite(query[field]),
  );
  if (infinite.length)
    throw new RequestValidationError(
      infinite.map((field) => ({ field, message: 'Not a valid integer.' })),
      'querystring',
    );
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
  request: PageRequest<C>,
  source: PageSource<T, C>,
  serialize: (item: T) => R,
) {
  const { total, atOrBefore } = await source.count(request.mode === 'after' ? request.after : undefined);
  if (request.mode === 'offset' && total > 0 && request.offset >= total) throw new BadRequest();
  const items = total === 0 ? [] : await source.page(request);
  return {
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
    answer: (query: PageQuery, source: PageSource<T, C>) =>
      paginate(pageRequest(query, parseCursor), source, serialize),
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
