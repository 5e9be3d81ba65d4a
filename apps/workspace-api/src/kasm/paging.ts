import { BadPaging } from '../errors';
import { given } from './fields';

/** Kasm's paging of user lists (get_users, get_users_group): `page_size` 1..1000, 100 when `page` comes without it. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

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
