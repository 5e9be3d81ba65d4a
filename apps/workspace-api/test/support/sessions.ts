import { sql } from 'kysely';
import type { MemoryEngine } from '../../src/sessions/engine/memory';
import { parseId } from '../../src/wire/kasm';
import type { TestApp } from './app';
import { workspaceEntry } from './registry';

/** What request_kasm answers. */
export interface RequestedSession {
  kasm_id: string;
  user_id: string;
  kasm_url: string;
  session_token: string;
}

/**
 * Users allowed an image, and their sessions, made through the API of one app (on the in-process
 * engine), with the database moves tests need (age a session, expire it).
 */
export function sessionKit(t: () => TestApp) {
  let seq = 0;
  const ok = async (op: string, body: Record<string, unknown> = {}) => {
    const r = await t().call(op, body);
    if (r.statusCode !== 200) throw new Error(`${op}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  /** A new user in a new group allowed an image (a new one unless given). */
  const ready = async (imageId?: string) => {
    const user = (await ok('create_user', { target_user: { username: `kit-${++seq}-${Date.now()}` } })).user
      .user_id as string;
    const group = (
      await ok('create_group', { target_group: { name: `kit group ${++seq} ${Date.now()}`, priority: 9 } })
    ).group.group_id;
    const image = imageId ?? (await ok('install_workspace', { workspace: workspaceEntry() })).image.image_id;
    await ok('add_user_group', { target_user: { user_id: user }, target_group: { group_id: group } });
    await ok('add_images_group', { target_group: { group_id: group }, target_image: { image_id: image } });
    return { user, image: image as string };
  };
  const engine = () => t().app.sessions.engine as MemoryEngine;
  const rowOf = (id: string) =>
    t().database.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  /** request_kasm for a new user (or `user`), without waiting for the start. */
  const request = async (more: Record<string, unknown> = {}, user?: { user: string; image: string }) => {
    const who = user ?? (await ready());
    const answer = (await ok('request_kasm', {
      user_id: who.user,
      image_id: who.image,
      ...more,
    })) as RequestedSession;
    return { ...answer, id: parseId(answer.kasm_id)!, image: who.image };
  };
  /** A running session of a new user: its ids (`id` in the database form) and its container. */
  const running = async (more: Record<string, unknown> = {}) => {
    const requested = await request(more);
    await t().app.sessions.settled();
    const row = await rowOf(requested.id);
    if (row.state !== 'running') throw new Error(`not running: ${row.state} ${row.reason}`);
    return { ...requested, user: requested.user_id, containerId: row.container_id! };
  };
  /** Moves a session's creation into the past, as the database's clock sees it. */
  const age = (id: string, seconds: number) =>
    t()
      .database.db.updateTable('sessions')
      .set({ created: sql`now() - ${seconds} * interval '1 second'` })
      .where('id', '=', id)
      .execute();
  /** The session's expiration has just passed. */
  const expire = (id: string) =>
    t()
      .database.db.updateTable('sessions')
      .set({ expiration: sql`now() - interval '1 second'` })
      .where('id', '=', id)
      .execute();
  /** A session row in `state` made straight in the database (no start runs for it). */
  const rowIn = async (state: 'requested' | 'starting', containerId: string | null = null) => {
    const { user, image } = await ready();
    const row = await t()
      .database.db.insertInto('sessions')
      .values({
        user_id: parseId(user)!,
        image_id: parseId(image)!,
        image_name: 'kasmweb/test:1',
        state,
        provider: 'memory',
        hostname: engine().hostname,
        web_port: 6901,
        container_id: containerId,
        expiration: sql<Date>`now() + interval '1 hour'`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return row.id;
  };
  return { ok, ready, engine, rowOf, request, running, age, expire, rowIn };
}
