import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

export async function up(db: Kysely<any>): Promise<void> {
  const id = (c: any) => c.primaryKey().defaultTo(sql`gen_random_uuid()`);
  const created = (c: any) => c.notNull().defaultTo(sql`now()`);

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', id)
    .addColumn('api_key', 'text', (c) => c.notNull().unique())
    .addColumn('secret_salt', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('read_only', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('expires', 'timestamptz')
    .addColumn('permissions', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('created', 'timestamptz', created)
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'uuid', id)
    .addColumn('username', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('organization', 'text')
    .addColumn('phone', 'text')
    .addColumn('notes', 'text')
    .addColumn('locked', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('disabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('realm', 'text', (c) => c.notNull().defaultTo('local'))
    .addColumn('last_session', 'timestamptz')
    .addColumn('created', 'timestamptz', created)
    .execute();
  // get_users pages in creation order.
  await db.schema.createIndex('users_created_id_idx').on('users').columns(['created', 'id']).execute();

  await db.schema
    .createTable('groups')
    .addColumn('id', 'uuid', id)
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text')
    .addColumn('priority', 'integer', (c) => c.notNull().check(sql`priority between 1 and 4095`))
    .addColumn('is_system', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created', 'timestamptz', created)
    .execute();

  await db.schema
    .createTable('user_groups')
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('group_id', 'uuid', (c) => c.notNull().references('groups.id').onDelete('cascade'))
    .addColumn('created', 'timestamptz', created)
    .addPrimaryKeyConstraint('user_groups_pkey', ['user_id', 'group_id'])
    .execute();
  await db.schema
    .createIndex('user_groups_group_idx')
    .on('user_groups')
    .columns(['group_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('images')
    .addColumn('id', 'uuid', id)
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('friendly_name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('image_src', 'text', (c) => c.notNull())
    .addColumn('architecture', sql`text[]`, (c) => c.notNull())
    .addColumn('compatibility', sql`text[]`, (c) => c.notNull())
    .addColumn('uncompressed_size_mb', 'integer', (c) => c.notNull().check(sql`uncompressed_size_mb >= 0`))
    .addColumn('categories', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('docker_registry', 'text')
    .addColumn('run_config', 'jsonb')
    .addColumn('exec_config', 'jsonb')
    .addColumn('notes', 'text')
    .addColumn('cores', 'double precision')
    .addColumn('memory', 'integer')
    .addColumn('gpu_count', 'integer')
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created', 'timestamptz', created)
    .execute();

  await db.schema
    .createTable('group_images')
    .addColumn('group_id', 'uuid', (c) => c.notNull().references('groups.id').onDelete('cascade'))
    .addColumn('image_id', 'uuid', (c) => c.notNull().references('images.id').onDelete('cascade'))
    .addColumn('created', 'timestamptz', created)
    .addPrimaryKeyConstraint('group_images_pkey', ['group_id', 'image_id'])
    .execute();

  // Kasm's default group, with its fixed id: every user joins it, it cannot be deleted.
  await db
    .insertInto('groups')
    .values({
      id: '68d557ac-4cac-42cc-a9f3-1c7c853de0f3',
      name: 'All Users',
      description: 'Default group for all users',
      priority: 4095,
      is_system: true,
    })
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['group_images', 'images', 'user_groups', 'groups', 'users', 'api_keys'])
    await db.schema.dropTable(table).execute();
}
