import { Type } from '@sinclair/typebox';
import { annotate, Nullable, SafeInteger } from '@platform/schema';
import { BadPaging } from '../errors';
import { given } from './fields';

/** Kasm's paging of user lists (get_users, get_users_group): `page_size` 1..1000, 100 when `page` comes without it. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/*
 * The paging fields of a request body. Kasm (Python) takes integers of any size; ours go through
 * JavaScript numbers, so beyond ±(2^53 - 1) (where they are no longer exact) the schema refuses them
 * with a 400. Within that range `pageOf` answers Kasm's own `BadPaging`, and a page past the end
 * (however large) is empty without a query: neither number reaches SQL unchecked.
 */
const optional = (description: string) => Type.Optional(Nullable(annotate(SafeInteger(), { description })));
export const PageField = optional('1-based; without it every item is returned');
export const PageSizeField = optional(
  `Items per page, 1..${MAX_PAGE_SIZE} (${DEFAULT_PAGE_SIZE} when \`page\` is given without it); only used with \`page\``,
);

export interface Page {
  offset: number;
  limit: number;
}

/**
 * The page a request asks for; undefined (every row) without `page`, which is 1-based. A `page_size`
 * out of range is refused even without `page`.
 */
export function pageOf(request: { page?: number | null; page_size?: number | null }): Page | undefined {
  const page = given(request.page);
  const pageSize = given(request.page_size);
  if (pageSize !== undefined && (pageSize < 1 || pageSize > MAX_PAGE_SIZE)) throw new BadPaging();
  if (page === undefined) return undefined;
  if (page < 1) throw new BadPaging();
  const limit = pageSize ?? DEFAULT_PAGE_SIZE;
  return { offset: (page - 1) * limit, limit };
}

/** One page of a list and the list's total, counted first. */
export async function paged<T>(
  page: Page | undefined,
  count: () => Promise<number>,
  list: (page?: Page) => Promise<T[]>,
): Promise<{ rows: T[]; total: number }> {
  const total = await count();
  // A page past the end (however large the number) needs no query.
  const rows = page && page.offset >= total ? [] : await list(page);
  return { rows, total };
}
