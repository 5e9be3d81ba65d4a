import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('posts')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('content', 'text', (c) => c.notNull().check(sql`char_length(content) between 1 and 280`))
    .addColumn('quest_topic', 'text', (c) =>
      c
        .notNull()
        .check(
          sql`quest_topic in ('digital_footprint', 'online_safety', 'digital_literacy', 'cyberbullying', 'privacy_security', 'digital_ethics')`,
        ),
    )
    .addColumn('student_name', 'text', (c) =>
      c.notNull().check(sql`char_length(student_name) between 1 and 50`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('reply_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('like_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('love_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('celebrate_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('insightful_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('support_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Newest-first pages filtered by topic walk this index; unfiltered pages walk the primary key.
  await db.schema.createIndex('posts_topic_id_idx').on('posts').columns(['quest_topic', 'id desc']).execute();

  await db.schema
    .createTable('replies')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('post_id', 'integer', (c) => c.notNull().references('posts.id').onDelete('cascade'))
    .addColumn('content', 'text', (c) => c.notNull().check(sql`char_length(content) between 1 and 280`))
    .addColumn('student_name', 'text', (c) => c.check(sql`char_length(student_name) between 1 and 50`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // The first 100 replies of each listed post come from this index, oldest first.
  await db.schema.createIndex('replies_post_id_id_idx').on('replies').columns(['post_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('replies').execute();
  await db.schema.dropTable('posts').execute();
}
