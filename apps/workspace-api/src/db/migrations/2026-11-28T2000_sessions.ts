import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/** A session's states; `stopped` and `failed` are final, the others live. */
const STATES = ['requested', 'starting', 'running', 'stopping', 'stopped', 'failed'];
const live = sql<boolean>`state in ('requested', 'starting', 'running', 'stopping')`;

export async function up(db: Kysely<any>): Promise<void> {
  const list = sql.join(STATES.map((s) => sql.lit(s)));
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    // A user's sessions go with the user: delete_user refuses a user with live sessions unless
    // `force`, which removes their containers (history rows go too).
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    // Deleting a workspace from the catalogue leaves its running sessions running (their containers
    // no longer need the entry): the row keeps the image's reference in `image_name`.
    .addColumn('image_id', 'uuid', (c) => c.references('images.id').onDelete('set null'))
    .addColumn('image_name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c
        .notNull()
        .defaultTo('requested')
        .check(sql`state in (${list})`),
    )
    // Where it runs: the engine (`docker`, `memory`…), its host and the workspace's port in the container.
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text', (c) => c.notNull())
    .addColumn('web_port', 'integer', (c) => c.notNull().check(sql`web_port between 1 and 65535`))
    .addColumn('container_id', 'text')
    // Why it failed or stopped, in the engine's words.
    .addColumn('reason', 'text')
    .addColumn('progress', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`progress between 0 and 100`),
    )
    .addColumn('message', 'text')
    // The request's environment (the image's run_config environment is merged in at start).
    .addColumn('environment', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started', 'timestamptz')
    .addColumn('keepalive', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expiration', 'timestamptz', (c) => c.notNull())
    .addColumn('stopped', 'timestamptz')
    // The connect page's one-time token: only its SHA-256 is stored, each get_kasm_status replaces it.
    .addColumn('connect_token_hash', 'text')
    .addColumn('connect_token_expires', 'timestamptz')
    .addCheckConstraint('sessions_running_container', sql`state <> 'running' or container_id is not null`)
    .addCheckConstraint(
      'sessions_stopped_when_final',
      sql`(state in ('stopped', 'failed')) = (stopped is not null)`,
    )
    .addCheckConstraint('sessions_failed_reason', sql`state <> 'failed' or reason is not null`)
    .addCheckConstraint(
      'sessions_token_pair',
      sql`(connect_token_hash is null) = (connect_token_expires is null)`,
    )
    .execute();

  // The foreign keys' own lookups (a user's or an image's deletion).
  await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute();
  await db.schema.createIndex('sessions_image_idx').on('sessions').column('image_id').execute();
  // Live sessions, a small part of the table: counted per user (the maximum), listed (get_kasms,
  // the reconciler) and swept by expiration.
  await db.schema
    .createIndex('sessions_live_user_idx')
    .on('sessions')
    .column('user_id')
    .where(live)
    .execute();
  await db.schema
    .createIndex('sessions_live_created_idx')
    .on('sessions')
    .columns(['created', 'id'])
    .where(live)
    .execute();
  await db.schema
    .createIndex('sessions_live_expiration_idx')
    .on('sessions')
    .column('expiration')
    .where(live)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sessions').execute();
}
