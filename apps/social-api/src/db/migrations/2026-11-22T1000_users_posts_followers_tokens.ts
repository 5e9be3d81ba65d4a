import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

export async function up(db: Kysely<any>): Promise<void> {
  const now = (c: any) => c.notNull().defaultTo(sql`now()`);

  await db.schema
    .createTable('users')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('username', sql`varchar(64) collate "C"`, (c) => c.notNull())
    .addColumn('email', 'varchar(120)', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('about_me', 'varchar(140)')
    .addColumn('first_seen', sql`timestamptz(3)`, now)
    .addColumn('last_seen', sql`timestamptz(3)`, now)
    .execute();
  // Follower lists are ordered and paged by username; logins look names and addresses up.
  await db.schema.createIndex('users_username_key').unique().on('users').column('username').execute();
  // Addresses are unique whatever their case (logins by address ignore case too).
  await db.schema
    .createIndex('users_email_key')
    .unique()
    .on('users')
    .expression(sql`lower(email)`)
    .execute();

  await db.schema
    .createTable('posts')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('text', 'varchar(280)', (c) => c.notNull())
    .addColumn('timestamp', sql`timestamptz(3)`, now)
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .execute();
  // Newest-first pages of all posts, of one author, and of the feed (one author set, merged).
  await db.schema
    .createIndex('posts_timestamp_idx')
    .on('posts')
    .columns(['timestamp desc', 'id desc'])
    .execute();
  await db.schema
    .createIndex('posts_user_timestamp_idx')
    .on('posts')
    .columns(['user_id', 'timestamp desc', 'id desc'])
    .execute();

  await db.schema
    .createTable('followers')
    .addColumn('follower_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('followed_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('followers_pkey', ['follower_id', 'followed_id'])
    .execute();
  // The primary key serves "whom X follows" (and the feed); this serves "who follows X".
  await db.schema
    .createIndex('followers_followed_idx')
    .on('followers')
    .columns(['followed_id', 'follower_id'])
    .execute();

  await db.schema
    .createTable('tokens')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('access_token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('access_expiration', 'timestamptz', (c) => c.notNull())
    .addColumn('refresh_token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('refresh_expiration', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tokens_user_idx').on('tokens').column('user_id').execute();
  await db.schema
    .createIndex('tokens_refresh_expiration_idx')
    .on('tokens')
    .column('refresh_expiration')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['tokens', 'followers', 'posts', 'users']) await db.schema.dropTable(table).execute();
}
