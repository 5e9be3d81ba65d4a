/**
 * Input no client should send but anyone can: each is a 400 in Kasm's `{"error_message"}` naming the
 * field, never a 500 from the database or the runtime, and nothing is stored.
 */
import type { LightMyRequestResponse } from 'fastify';
import { openForTheseTests } from '@platform/testing';
import { MAX_CONFIG_DEPTH } from '../src/images/registry';
import { buildTestApp } from './support/app';
import { workspaceEntry as entry } from './support/registry';

describe('hostile input', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);

  const rowCounts = async () => {
    const count = async (table: 'images' | 'users' | 'groups') =>
      Number(
        (
          await t()
            .database.db.selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    return { images: await count('images'), users: await count('users'), groups: await count('groups') };
  };

  /** `send()` answers 400 in Kasm's error shape, its message contains `field`, and no row was added. */
  const expectRefused = async (send: () => Promise<LightMyRequestResponse>, field: string) => {
    const before = await rowCounts();
    const r = await send();
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(r.json())).toEqual(['error_message']);
    expect(r.json().error_message).toContain(field);
    expect(await rowCounts()).toEqual(before);
    return r.json().error_message as string;
  };

  /** `install_workspace` with the JSON text `json` as the entry (raw, to send what JSON.stringify cannot). */
  const installRaw = (json: string) =>
    t().app.inject({
      method: 'POST',
      url: '/api/public/install_workspace',
      headers: { 'content-type': 'application/json' },
      payload: `{"api_key":"${t().admin.api_key}","api_key_secret":"${t().admin.api_key_secret}","workspace":${json}}`,
    });
  /** An entry whose `field` is `configJson` (JSON text). */
  const entryWith = (field: string, configJson: string) => {
    const text = JSON.stringify(entry());
    return `${text.slice(0, -1)},"${field}":${configJson}}`;
  };
  /** `{"a":{"a":...{"a":leaf}}}`, `depth` objects deep. */
  const nested = (depth: number, leaf = '1') => `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;

  describe.each(['run_config', 'exec_config'])('install_workspace %s', (field) => {
    test(`nested ${MAX_CONFIG_DEPTH} objects deep is installed as given`, async () => {
      const r = await installRaw(entryWith(field, nested(MAX_CONFIG_DEPTH, '"deep"')));
      expect(r.statusCode).toBe(200);
      expect(r.json().image[field]).toEqual(JSON.parse(nested(MAX_CONFIG_DEPTH, '"deep"')));
    });

    test('nested one level deeper is a 400', async () => {
      const message = await expectRefused(
        () => installRaw(entryWith(field, nested(MAX_CONFIG_DEPTH + 1))),
        field,
      );
      expect(message).toBe(
        `Invalid workspace: ${field} must be JSON nested at most ${MAX_CONFIG_DEPTH} levels deep`,
      );
    });

    test('nested 10,000 deep is a 400, not a stack overflow', async () => {
      await expectRefused(() => installRaw(entryWith(field, nested(10_000))), field);
    });

    test('an array nested 10,000 deep is a 400', async () => {
      await expectRefused(
        () => installRaw(entryWith(field, `{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`)),
        field,
      );
    });

    test('a NUL character deeper than the platform looks is a 400', async () => {
      // The platform's NUL check stops at 32 levels; the depth bound and the field's own check cover the rest.
      await expectRefused(() => installRaw(entryWith(field, nested(40, '"nul\\u0000"'))), field);
      await expectRefused(() => installRaw(entryWith(field, nested(3, '"nul\\u0000"'))), field);
    });

    test.each([
      ['a lone high surrogate in a value', '{"a":"x\\ud800"}'],
      ['a lone low surrogate in a value', '{"a":["\\udc00y"]}'],
      ['a lone surrogate in a key', '{"\\ud800":1}'],
    ])('%s is a 400', async (_name, config) => {
      const message = await expectRefused(() => installRaw(entryWith(field, config)), field);
      expect(message).toBe(`Invalid workspace: ${field} must not contain lone surrogates (invalid Unicode)`);
    });

    test('a well-formed surrogate pair is kept', async () => {
      const r = await installRaw(entryWith(field, '{"emoji":"\\ud83d\\ude00"}'));
      expect(r.statusCode).toBe(200);
      expect(r.json().image[field]).toEqual({ emoji: '\u{1F600}' });
    });

    test.each(['1e309', '-1e309', '[1e400]'])(
      'a number out of range (%s) is a 400, not stored as null',
      async (n) => {
        const message = await expectRefused(() => installRaw(entryWith(field, `{"a":${n}}`)), field);
        expect(message).toBe(`Invalid workspace: ${field} must contain only finite numbers`);
      },
    );
  });

  describe('names longer than any index row', () => {
    const HUGE = 'n'.repeat(900_000);

    test('create_user with a 900 KB username is a 400', async () => {
      const message = await expectRefused(
        () => t().call('create_user', { target_user: { username: HUGE } }),
        'username',
      );
      expect(message).toBe('target_user.username must be at most 255 characters');
    });

    test('create_user with a 255-character username works', async () => {
      const r = await t().call('create_user', { target_user: { username: 'u'.repeat(255) } });
      expect(r.statusCode).toBe(200);
    });

    test('update_user to a 900 KB username is a 400 and changes nothing', async () => {
      const created = await t().call('create_user', { target_user: { username: 'renamed-huge' } });
      const userId = created.json().user.user_id;
      await expectRefused(
        () => t().call('update_user', { target_user: { user_id: userId, username: HUGE } }),
        'username',
      );
      const after = await t().call('get_user', { target_user: { user_id: userId } });
      expect(after.json().user.username).toBe('renamed-huge');
    });

    test('create_group with a 900 KB name is a 400', async () => {
      const message = await expectRefused(
        () => t().call('create_group', { target_group: { name: HUGE, priority: 10 } }),
        'name',
      );
      expect(message).toBe('target_group.name must be at most 255 characters');
    });

    test('create_group with a 255-character name works', async () => {
      const r = await t().call('create_group', { target_group: { name: 'g'.repeat(255), priority: 10 } });
      expect(r.statusCode).toBe(200);
    });

    test('update_group to a 900 KB name is a 400 and changes nothing', async () => {
      const created = await t().call('create_group', {
        target_group: { name: 'renamed-huge', priority: 11 },
      });
      const groupId = created.json().group.group_id;
      await expectRefused(
        () => t().call('update_group', { target_group: { group_id: groupId, name: HUGE } }),
        'name',
      );
      const groups = (await t().call('get_groups')).json().groups as { group_id: string; name: string }[];
      expect(groups.find((g) => g.group_id === groupId)?.name).toBe('renamed-huge');
    });
  });
});
