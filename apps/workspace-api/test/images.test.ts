import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registryCommand } from '../src/images/cli';
import { toKasmId } from '../src/wire/kasm';
import { openForTheseTests } from '@platform/testing';
import { buildTestApp } from './support/app';
import { dashed, HEX32, KASM_DATE, UNKNOWN } from './support/kasm';
import { OPERATIONS_BY_TAG } from './support/operations';
import { registryDocument, workspaceEntry as entry } from './support/registry';

const MISSING = 'Invalid Request: Missing required parameters';

describe('workspaces (images) and group allow-lists', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);

  const error = async (op: string, body: Record<string, unknown>) => {
    const r = await t().call(op, body);
    return { status: r.statusCode, message: r.json().error_message as string };
  };
  /** Each body answered by `op` with a 400 and its message, one after the other. */
  const refusals = async (op: string, cases: [Record<string, unknown>, string][]) => {
    for (const [body, message] of cases) expect(await error(op, body)).toEqual({ status: 400, message });
  };
  const ok = async (op: string, body: Record<string, unknown> = {}) => {
    const r = await t().call(op, body);
    expect({ op, status: r.statusCode, body: r.json() }).toMatchObject({ op, status: 200 });
    return r.json();
  };
  const install = async (overrides: Record<string, unknown> = {}) =>
    (await ok('install_workspace', { workspace: entry(overrides) })).image;
  const allImageNames = async () =>
    ((await ok('get_images')).images as { name: string }[]).map((i) => i.name);

  /** Groups and users are created directly in the database: their operations belong to other features. */
  const createGroup = async (name: string) => {
    const row = await t()
      .database.db.insertInto('groups')
      .values({ name, priority: 100, description: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    return toKasmId(row.id);
  };
  const createUser = async (username: string, groupIds: string[]) => {
    const row = await t()
      .database.db.insertInto('users')
      .values({
        username,
        password_hash: null,
        first_name: null,
        last_name: null,
        organization: null,
        phone: null,
        notes: null,
        last_session: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    if (groupIds.length)
      await t()
        .database.db.insertInto('user_groups')
        .values(groupIds.map((g) => ({ user_id: row.id, group_id: dashed(g) })))
        .execute();
    return toKasmId(row.id);
  };

  describe('install_workspace: entry validation', () => {
    const REQUIRED = [
      'friendly_name',
      'name',
      'description',
      'image_src',
      'architecture',
      'compatibility',
      'uncompressed_size_mb',
    ];

    test.each(REQUIRED)('a missing or null %s answers 400 naming it', async (field) => {
      const missing = entry();
      delete missing[field];
      expect(await error('install_workspace', { workspace: missing })).toEqual({
        status: 400,
        message: `Invalid workspace: ${field} is required`,
      });
      expect(await error('install_workspace', { workspace: entry({ [field]: null }) })).toEqual({
        status: 400,
        message: `Invalid workspace: ${field} is required`,
      });
    });

    const ARCH = 'architecture must be a non-empty list of amd64, arm64';
    const COMPAT = 'compatibility must be a list of versions like 1.13.x';
    const NAME = 'name must be an image reference <repository>:<tag>, e.g. kasmweb/desktop:1.16.0';
    const SIZE = 'uncompressed_size_mb must be an integer from 0 to 2147483647';
    const INVALID: [string, unknown, string][] = [
      ['friendly_name', 42, 'friendly_name must be a non-empty string'],
      ['friendly_name', '  ', 'friendly_name must be a non-empty string'],
      ['name', 'kasmweb/chrome', NAME],
      ['name', 'kasmweb/chrome:', NAME],
      ['name', 'Kasmweb/Chrome:1.16.0', NAME],
      ['name', 'registry.example.com:5000/team/desktop', NAME],
      ['name', 'kasmweb/chrome:1.16.0:extra', NAME],
      ['name', 'kasm web/chrome:1', NAME],
      ['name', 123, NAME],
      ['description', 5, 'description must be a string'],
      ['image_src', '', 'image_src must be a non-empty string (the icon file name)'],
      ['architecture', [], ARCH],
      ['architecture', ['x86'], ARCH],
      ['architecture', 'amd64', ARCH],
      ['compatibility', [], COMPAT],
      ['compatibility', ['1.13'], COMPAT],
      ['compatibility', ['1.13.0'], COMPAT],
      ['compatibility', '1.13.x', COMPAT],
      ['compatibility', [{ version: '1.17.x', image: 'kasmweb/chrome:1.17.0' }], COMPAT],
      ['uncompressed_size_mb', '10000', SIZE],
      ['uncompressed_size_mb', 1.5, SIZE],
      ['uncompressed_size_mb', -1, SIZE],
      ['uncompressed_size_mb', 2147483648, SIZE],
      ['categories', 'Browser', 'categories must be a list of strings'],
      ['categories', ['Browser', 3], 'categories must be a list of strings'],
      [
        'docker_registry',
        'index.docker.io',
        'docker_registry must be an http(s) URL, e.g. https://index.docker.io/v1/',
      ],
      [
        'docker_registry',
        'ftp://index.docker.io/',
        'docker_registry must be an http(s) URL, e.g. https://index.docker.io/v1/',
      ],
      ['run_config', 'hostname=kasm', 'run_config must be an object, e.g. {"hostname": "kasm"}'],
      ['run_config', [{ hostname: 'kasm' }], 'run_config must be an object, e.g. {"hostname": "kasm"}'],
      [
        'exec_config',
        'bash',
        'exec_config must be an object with optional go, assign and first_launch, each {"cmd": "..."}',
      ],
      ['exec_config', { go: 'bash -c x' }, 'exec_config.go must be an object like {"cmd": "..."}'],
      ['exec_config', { assign: { cmd: 5 } }, 'exec_config.assign.cmd must be a string'],
      ['exec_config', { first_launch: {} }, 'exec_config.first_launch.cmd must be a string'],
      ['notes', 5, 'notes must be a string'],
      ['cores', '2', 'cores must be a number >= 0'],
      ['cores', -1, 'cores must be a number >= 0'],
      ['memory', '2768', 'memory must be an integer (MB) from 0 to 2147483647'],
      ['memory', 2768.5, 'memory must be an integer (MB) from 0 to 2147483647'],
      ['gpu_count', true, 'gpu_count must be an integer from 0 to 2147483647'],
      ['gpu_count', 0.5, 'gpu_count must be an integer from 0 to 2147483647'],
    ];
    test.each(INVALID)('%s = %j answers 400: %s', async (field, value, rule) => {
      expect(await error('install_workspace', { workspace: entry({ [field]: value }) })).toEqual({
        status: 400,
        message: `Invalid workspace: ${rule}`,
      });
    });

    test('every failing field is named, in the contract\u2019s order', async () => {
      expect(
        await error('install_workspace', {
          workspace: entry({ compatibility: ['1.13'], name: 'chrome', cores: '1' }),
        }),
      ).toEqual({
        status: 400,
        message: `Invalid workspace: ${NAME}; ${COMPAT}; cores must be a number >= 0`,
      });
    });

    test('no workspace (absent or null) answers Missing required parameters; a non-object is named', async () => {
      const missing = { status: 400, message: 'Invalid Request: Missing required parameters' };
      expect(await error('install_workspace', {})).toEqual(missing);
      expect(await error('install_workspace', { workspace: null })).toEqual(missing);
      for (const workspace of ['kasmweb/chrome:1.16.0', 7, [entry()]]) {
        expect(await error('install_workspace', { workspace })).toEqual({
          status: 400,
          message: 'Invalid workspace: workspace must be an object',
        });
      }
    });

    test('rejected entries install nothing', async () => {
      expect(await allImageNames()).toEqual([]);
    });

    test.each([
      'registry.example.com:5000/team/desktop:1.2',
      'localhost:5000/desktop:dev',
      'ubuntu:22.04',
      'ghcr.io/org/sub_team/my-image:v1.0-rc_1',
      'nighthawkcoders/kasm_workspaces:latest',
    ])('the image reference %s is accepted', async (name) => {
      expect((await install({ name })).name).toBe(name);
    });
  });

  describe('install_workspace, get_images, delete_image', () => {
    test('an installed image is the entry plus image_id, enabled and created; unknown fields are dropped', async () => {
      const full = entry({
        categories: ['Browser'],
        docker_registry: 'https://index.docker.io/v1/',
        run_config: { hostname: 'kasm', environment: { LANG: 'en_US.UTF-8' } },
        exec_config: { go: { cmd: 'bash -c go' }, first_launch: { cmd: 'bash -c first', user: 'root' } },
        notes: 'Needs libseccomp',
        cores: 1.5,
        memory: 2768,
        gpu_count: 0,
        sha: 'a4c7b1f0',
        require_gpu: false,
        image_type: 'Container',
        cpu_allocation_method: 'Inherit',
      });
      const image = (await ok('install_workspace', { workspace: full })).image;
      const { sha: _sha, require_gpu: _gpu, image_type: _type, cpu_allocation_method: _cpu, ...known } = full;
      expect(image).toEqual({
        ...known,
        image_id: expect.stringMatching(HEX32),
        enabled: true,
        created: expect.stringMatching(KASM_DATE),
      });
      // memory stays in MB
      expect(image.memory).toBe(2768);

      const listed = (await ok('get_images')).images.find(
        (i: { image_id: string }) => i.image_id === image.image_id,
      );
      expect(listed).toEqual(image);
    });

    test('absent and null optional fields come back as null (categories as [])', async () => {
      const image = await install({ notes: null, cores: null, run_config: null });
      expect(image).toMatchObject({
        categories: [],
        docker_registry: null,
        run_config: null,
        exec_config: null,
        notes: null,
        cores: null,
        memory: null,
        gpu_count: null,
      });
      expect(
        await ok('install_workspace', { workspace: entry({ architecture: ['arm64', 'arm64'] }) }),
      ).toMatchObject({ image: { architecture: ['arm64'] } });
    });

    test('get_images lists images in installation order', async () => {
      const first = await install();
      const second = await install();
      const names = await allImageNames();
      expect(names.indexOf(first.name)).toBeLessThan(names.indexOf(second.name));
      expect(names.indexOf(first.name)).toBeGreaterThanOrEqual(0);
    });

    test('the same name cannot be installed twice', async () => {
      const image = await install();
      expect(
        await error('install_workspace', { workspace: entry({ name: image.name, friendly_name: 'Other' }) }),
      ).toEqual({
        status: 400,
        message: `Image (${image.name}) already exists`,
      });
    });

    test('ten concurrent installs of one name: one 200, nine `already exists`, never a 500', async () => {
      const workspace = entry();
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => t().call('install_workspace', { workspace })),
      );
      const statuses = responses.map((r) => r.statusCode).sort();
      expect(statuses).toEqual([200, ...Array(9).fill(400)]);
      for (const r of responses.filter((x) => x.statusCode === 400))
        expect(r.json()).toEqual({ error_message: `Image (${workspace.name}) already exists` });
      expect((await allImageNames()).filter((n) => n === workspace.name)).toHaveLength(1);
    });

    test('delete_image removes the image; the name can be installed again (with a new id)', async () => {
      const image = await install();
      expect(await ok('delete_image', { target_image: { image_id: image.image_id } })).toEqual({});
      expect(await allImageNames()).not.toContain(image.name);
      expect(await error('delete_image', { target_image: { image_id: image.image_id } })).toEqual({
        status: 400,
        message: `Invalid Image ID (${image.image_id})`,
      });

      const again = await install({ name: image.name });
      expect(again.image_id).not.toBe(image.image_id);
      // dashed ids are accepted
      expect(await ok('delete_image', { target_image: { image_id: dashed(again.image_id) } })).toEqual({});
    });

    test('delete_image errors: missing id, malformed id, unknown id', async () => {
      await refusals('delete_image', [
        [{}, MISSING],
        [{ target_image: {} }, MISSING],
        [{ target_image: { image_id: null } }, MISSING],
        [{ target_image: { image_id: 'not-an-id' } }, 'Invalid Image ID (not-an-id)'],
        [{ target_image: { image_id: UNKNOWN } }, `Invalid Image ID (${UNKNOWN})`],
      ]);
    });

    test('types are strict: an id or target of the wrong type is a 400, not coerced', async () => {
      for (const [op, body] of [
        ['delete_image', { target_image: { image_id: 12 } }],
        ['delete_image', { target_image: 'x' }],
        ['add_images_group', { target_group: { group_id: 1 }, target_image: { image_id: UNKNOWN } }],
        ['get_images_group', { target_group: { group_id: true } }],
        ['get_user_images', { target_user: ['x'] }],
      ] as const) {
        const r = await error(op, body);
        expect(r.status).toBe(400);
        expect(r.message).toMatch(
          /^target_(image|group|user)(\.(image|group|user)_id)? must be (a string|an object)/,
        );
      }
    });
  });

  describe('group allow-lists', () => {
    test('add_images_group allows an image; adding again is a no-op answered {}', async () => {
      const group = await createGroup('allow once');
      const image = await install();
      const body = { target_group: { group_id: group }, target_image: { image_id: image.image_id } };
      expect(await ok('add_images_group', body)).toEqual({});
      expect(
        await ok('add_images_group', {
          target_group: { group_id: dashed(group) },
          target_image: { image_id: dashed(image.image_id) },
        }),
      ).toEqual({});
      expect(await ok('get_images_group', { target_group: { group_id: group } })).toEqual({
        images: [image],
      });
    });

    test('remove_images_group takes it off; removing a pair that is not allowed is a no-op answered {}', async () => {
      const group = await createGroup('remove');
      const [kept, removed] = [await install(), await install()];
      for (const image of [kept, removed])
        await ok('add_images_group', {
          target_group: { group_id: group },
          target_image: { image_id: image.image_id },
        });
      // allowed, then no longer allowed: both answer {}
      for (let round = 0; round < 2; round++) {
        expect(
          await ok('remove_images_group', {
            target_group: { group_id: group },
            target_image: { image_id: removed.image_id },
          }),
        ).toEqual({});
        expect(await ok('get_images_group', { target_group: { group_id: group } })).toEqual({
          images: [kept],
        });
      }
    });

    test.each(['add_images_group', 'remove_images_group'])(
      '%s: missing ids, malformed or unknown group or image',
      async (op) => {
        const group = await createGroup(`errors ${op}`);
        const image = await install();
        const missing = { status: 400, message: 'Invalid request, missing group or image id' };
        const absent = { status: 400, message: 'Group or image does not exist' };
        expect(await error(op, {})).toEqual(missing);
        expect(await error(op, { target_group: { group_id: group } })).toEqual(missing);
        expect(await error(op, { target_image: { image_id: image.image_id } })).toEqual(missing);
        expect(await error(op, { target_group: { group_id: group }, target_image: {} })).toEqual(missing);
        expect(await error(op, { target_group: null, target_image: { image_id: image.image_id } })).toEqual(
          missing,
        );
        expect(
          await error(op, {
            target_group: { group_id: UNKNOWN },
            target_image: { image_id: image.image_id },
          }),
        ).toEqual(absent);
        expect(
          await error(op, { target_group: { group_id: group }, target_image: { image_id: UNKNOWN } }),
        ).toEqual(absent);
        expect(
          await error(op, {
            target_group: { group_id: 'group-1' },
            target_image: { image_id: image.image_id },
          }),
        ).toEqual(absent);
        expect(
          await error(op, { target_group: { group_id: group }, target_image: { image_id: 'image-1' } }),
        ).toEqual(absent);
        expect(await ok('get_images_group', { target_group: { group_id: group } })).toEqual({ images: [] });
      },
    );

    test('get_images_group errors: missing id, malformed and unknown ids as given', async () => {
      await refusals('get_images_group', [
        [{}, MISSING],
        [{ target_group: { group_id: 'abc' } }, 'Invalid Group ID (abc)'],
        [{ target_group: { group_id: dashed(UNKNOWN) } }, `Invalid Group ID (${dashed(UNKNOWN)})`],
      ]);
    });

    test('get_user_images is the union of the user\u2019s groups\u2019 images, each once', async () => {
      const [a, b, other] = [
        await createGroup('union a'),
        await createGroup('union b'),
        await createGroup('union other'),
      ];
      const [onlyA, shared, onlyB, elsewhere] = [
        await install(),
        await install(),
        await install(),
        await install(),
      ];
      const allow = (group: string, image: { image_id: string }) =>
        ok('add_images_group', {
          target_group: { group_id: group },
          target_image: { image_id: image.image_id },
        });
      await allow(a, onlyA);
      await allow(a, shared);
      await allow(b, shared);
      await allow(b, onlyB);
      await allow(other, elsewhere);
      const user = await createUser('union-user', [a, b]);
      const { images } = await ok('get_user_images', { target_user: { user_id: user } });
      expect(images).toEqual([onlyA, shared, onlyB]);

      const loner = await createUser('no-groups', []);
      expect(await ok('get_user_images', { target_user: { user_id: dashed(loner) } })).toEqual({
        images: [],
      });
    });

    test('get_user_images errors: missing id, malformed and unknown users', async () => {
      await refusals('get_user_images', [
        [{}, MISSING],
        [{ target_user: { user_id: 'bob' } }, 'Unknown User'],
        [{ target_user: { user_id: UNKNOWN } }, 'Unknown User'],
      ]);
    });

    test('deleting an image removes it from every group and from its users\u2019 lists', async () => {
      const [a, b] = [await createGroup('delete a'), await createGroup('delete b')];
      const [doomed, kept] = [await install(), await install()];
      for (const group of [a, b]) {
        for (const image of [doomed, kept])
          await ok('add_images_group', {
            target_group: { group_id: group },
            target_image: { image_id: image.image_id },
          });
      }
      const user = await createUser('delete-user', [a, b]);
      await ok('delete_image', { target_image: { image_id: doomed.image_id } });

      for (const group of [a, b])
        expect(await ok('get_images_group', { target_group: { group_id: group } })).toEqual({
          images: [kept],
        });
      expect(await ok('get_user_images', { target_user: { user_id: user } })).toEqual({ images: [kept] });
      const rows = await t()
        .database.db.selectFrom('group_images')
        .select('group_id')
        .where('image_id', '=', dashed(doomed.image_id))
        .execute();
      expect(rows).toEqual([]);
      // Re-installed under the same name it is a new image that no group allows yet.
      const again = await install({ name: doomed.name });
      expect(await ok('get_user_images', { target_user: { user_id: user } })).toEqual({ images: [kept] });
      expect(again.name).toBe(doomed.name);
    });
  });

  describe('registry import (in process; the command line itself is tested in cli.test.ts)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-import-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const importFile = async (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, content);
      const lines: string[] = [];
      const code = await registryCommand(t().database.db, 'import', [path], (line) => lines.push(line));
      return { code, lines, path };
    };
    const document = (workspaces: unknown) => JSON.stringify(registryDocument(workspaces));

    test('installs valid entries, skips installed names (also repeated ones), rejects invalid entries naming the field', async () => {
      const existing = await install();
      const fresh = entry({ friendly_name: 'Fresh' });
      const { code, lines } = await importFile(
        'mixed.json',
        document([
          fresh,
          entry({ name: existing.name }),
          entry({ friendly_name: 'Broken', compatibility: [{ version: '1.17.x' }] }),
          { name: 'kasmweb/nameless:1.0' },
          entry({ name: fresh.name, friendly_name: 'Fresh again' }),
          'not an entry',
        ]),
      );
      expect(code).toBe(0);
      expect(lines).toEqual([
        `installed ${fresh.name}`,
        `skipped ${existing.name}: already installed`,
        'rejected Broken: compatibility must be a list of versions like 1.13.x',
        'rejected workspaces[3]: friendly_name is required; description is required; image_src is required; architecture is required; ' +
          'compatibility is required; uncompressed_size_mb is required',
        `skipped ${fresh.name}: already installed`,
        'rejected workspaces[5]: workspace must be an object',
        'Mixed: 6 workspaces, 1 installed, 2 skipped, 3 rejected',
      ]);
      expect((await allImageNames()).filter((n) => n === fresh.name)).toHaveLength(1);
    });

    test('an unreadable file, bad JSON or a document of the wrong shape is an error naming the file', async () => {
      const missing = join(dir, 'missing.json');
      await expect(registryCommand(t().database.db, 'import', [missing], () => undefined)).rejects.toThrow(
        `cannot read ${missing}`,
      );
      await expect(importFile('bad.json', '{"name": ')).rejects.toThrow(/bad\.json is not valid JSON/);
      await expect(importFile('array.json', '[]')).rejects.toThrow(
        /is not a registry document \(schema 1\.0 list\.json\): the document must be a JSON object$/,
      );
      await expect(
        importFile(
          'url.json',
          JSON.stringify({ name: 'x', description: 'y', icon: 'z', list_url: 'registry', workspaces: [] }),
        ),
      ).rejects.toThrow(/: list_url must be an http\(s\) URL$/);
      await expect(registryCommand(t().database.db, 'export', ['x'], () => undefined)).rejects.toThrow(
        /usage:\n {2}registry import LIST_JSON/,
      );
    });
  });

  test('the documentation describes every images operation with the Image schema', async () => {
    const doc = (await t().app.inject({ method: 'GET', url: '/docs/json' })).json();
    for (const op of OPERATIONS_BY_TAG.images) {
      expect(doc.paths[`/api/public/${op}`]?.post?.tags).toEqual(['images']);
    }
    const image =
      doc.paths['/api/public/install_workspace'].post.responses['200'].content['application/json'].schema
        .properties.image;
    // The named component, referred to by every operation that answers images.
    expect(image).toEqual({ $ref: '#/components/schemas/Image' });
    for (const op of ['get_images', 'get_images_group', 'get_user_images'])
      expect(
        doc.paths[`/api/public/${op}`].post.responses['200'].content['application/json'].schema.properties
          .images.items,
      ).toEqual({ $ref: '#/components/schemas/Image' });
    expect(Object.keys(doc.components.schemas.Image.properties)).toEqual(
      expect.arrayContaining(['image_id', 'name', 'compatibility', 'memory', 'enabled', 'created']),
    );
  });
});
