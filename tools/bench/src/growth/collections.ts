// The collections the growth benchmark reads and the pages of each it measures: the first, and
// pages at 50 % and 90 % of the collection's depth by `offset` and, where the collection has one,
// by its `after` cursor (the sort key of the item just before that depth).
import type { Scenario } from '../lib/load';
import { request } from '../lib/processes';
import type { Page } from '../social-setup';
import type { Cast } from './seed';

/** A collection of social-api, with the field of its items its `after` cursor takes, if it has one. */
export interface Collection {
  name: string;
  /** The route as documented (`/api/users/<star>/followers`). */
  label: string;
  path: string;
  cursor?: 'timestamp' | 'username';
}

/** Every collection, each on the owner that gives it depth. */
export function collectionsOf(cast: Cast, me: number): Collection[] {
  return [
    { name: 'posts', label: '/api/posts', path: '/api/posts', cursor: 'timestamp' },
    {
      name: "star's posts",
      label: '/api/users/<star>/posts',
      path: `/api/users/${cast.star}/posts`,
      cursor: 'timestamp',
    },
    { name: 'feed', label: '/api/feed (bench user)', path: '/api/feed', cursor: 'timestamp' },
    {
      name: 'followers',
      label: '/api/users/<star>/followers',
      path: `/api/users/${cast.star}/followers`,
      cursor: 'username',
    },
    {
      name: 'following',
      label: '/api/users/<bench user>/following',
      path: `/api/users/${me}/following`,
      cursor: 'username',
    },
    { name: 'users', label: '/api/users (offset only)', path: '/api/users' },
  ];
}

/** The depths measured besides the first page, as shares of the collection. */
export const DEPTHS = [0.5, 0.9];

/** One measured page of a collection, as probed once before the load. */
export interface Cell {
  /** `first`, `offset 50%`, `after 90%`, ... */
  cell: string;
  path: string;
  /**
   * The first item's position the page asked for (offset mode) or stands for (after mode): the
   * depth's share of the collection, or less, so that the page is full.
   */
  position: number;
  /** `pagination.offset` of the answer (in after mode, the items at or before the cursor). */
  reportedOffset: number;
  /** `pagination.total` of the answer: the collection's size. */
  total: number;
  items: number;
  bytes: number;
}

/**
 * The cells of `collection`, each fetched once (it must answer 200): the first page, then each
 * depth by offset, then by cursor. Returns them with the collection's size.
 */
export async function probeCells(
  base: string,
  collection: Collection,
  auth: Record<string, string>,
): Promise<{ total: number; cells: Cell[] }> {
  const get = async (path: string) =>
    request<Page<Record<string, unknown>>>(`${base}${path}`, { headers: auth });
  const cell = async (name: string, path: string, position: number): Promise<Cell> => {
    const { json, bytes } = await get(path);
    const { offset, total } = json.pagination;
    return {
      cell: name,
      path,
      position,
      reportedOffset: offset,
      total,
      items: json.data.length,
      bytes: bytes.length,
    };
  };
  const first = await cell('first', collection.path, 0);
  const { total } = first;
  // A full page at every depth (when the collection holds one), so that every page of a collection
  // answers as many items: near the end of a small collection the depth is less than asked.
  const last = Math.max(0, total - first.items);
  const at = DEPTHS.map((depth) => ({
    percent: depth * 100,
    position: Math.max(1, Math.min(Math.floor(total * depth), last)),
  }));
  const cells = [first];
  for (const { percent, position } of at)
    cells.push(await cell(`offset ${percent}%`, `${collection.path}?offset=${position}`, position));
  const { cursor } = collection;
  if (cursor)
    for (const { percent, position } of at) {
      // The sort key of the item before the position: the page after it starts there.
      const before = (await get(`${collection.path}?offset=${position - 1}&limit=1`)).json.data[0];
      const key = String(before[cursor]);
      cells.push(
        await cell(`after ${percent}%`, `${collection.path}?after=${encodeURIComponent(key)}`, position),
      );
    }
  return { total, cells };
}

/** The autocannon scenarios of a collection's cells, on the service `pid` at `base`. */
export const scenariosOf = (
  collection: Collection,
  cells: Cell[],
  { base, pid, auth }: { base: string; pid: number; auth: Record<string, string> },
): Scenario[] =>
  cells.map((c) => ({
    name: `${collection.name} ${c.cell}`,
    label: `GET ${c.path}`,
    url: `${base}${c.path}`,
    headers: auth,
    pid,
    bytes: c.bytes,
    items: c.items,
  }));
