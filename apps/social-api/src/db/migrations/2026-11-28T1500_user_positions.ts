import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Positions of users in the list of all users (by id), as post_buckets are for posts: the number of
 * users whose id falls in each range of 1,024 ids (`lo` = the id rounded down to a multiple of 1,024),
 * kept by a statement-level trigger in the writing transaction. An id never moves and a range never
 * holds more than 1,024 users, so buckets are never cut: concurrent writers only add to counts (row
 * locks in `lo` order), and a position is a running sum over the buckets plus a walk of at most one
 * range in users_pkey. `social-api repair-positions` rebuilds them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('user_buckets')
    .addColumn('lo', 'integer', (c) => c.primaryKey())
    .addColumn('n', 'integer', (c) => c.notNull().check(sql`n >= 0`))
    .execute();

  await sql`
    create function position_users() returns trigger language plpgsql set search_path from current as $$
    declare
      added int[] := '{}';
      removed int[] := '{}';
    begin
      if tg_op = 'TRUNCATE' then
        delete from user_buckets;
        return null;
      end if;
      if tg_op = 'INSERT' then
        select coalesce(array_agg(id), '{}') into added from new_rows;
      elsif tg_op = 'DELETE' then
        select coalesce(array_agg(id), '{}') into removed from old_rows;
      elsif old.id is not distinct from new.id then
        return null;
      else
        added := array[new.id];
        removed := array[old.id];
      end if;
      -- Counts added in lo order (row locks in one order), then those taken away.
      insert into user_buckets (lo, n)
      select (id >> 10) << 10 as lo, count(*) from unnest(added) id group by 1 order by 1
      on conflict (lo) do update set n = user_buckets.n + excluded.n;
      update user_buckets b set n = b.n - gone.n
      from (select (id >> 10) << 10 as lo, count(*)::int as n from unnest(removed) id group by 1 order by 1) gone
      where b.lo = gone.lo;
      delete from user_buckets where n = 0 and lo in (select (id >> 10) << 10 from unnest(removed) id);
      return null;
    end $$`.execute(db);
  await sql`create trigger position_users_insert after insert on users
    referencing new table as new_rows for each statement execute function position_users()`.execute(db);
  // An id changed by hand (never by the API): a row trigger on that column only, so the frequent
  // updates of users (counters, last_seen) run no trigger.
  await sql`create trigger position_users_update after update of id on users
    for each row execute function position_users()`.execute(db);
  await sql`create trigger position_users_delete after delete on users
    referencing old table as old_rows for each statement execute function position_users()`.execute(db);
  await sql`create trigger position_users_truncate after truncate on users
    for each statement execute function position_users()`.execute(db);

  await sql`insert into user_buckets (lo, n) select (id >> 10) << 10, count(*) from users group by 1`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'update', 'delete', 'truncate'])
    await sql`drop trigger if exists ${sql.raw(`position_users_${event}`)} on users`.execute(db);
  await sql`drop function position_users()`.execute(db);
  await db.schema.dropTable('user_buckets').execute();
}
