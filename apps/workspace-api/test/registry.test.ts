import { checkRegistryDocument, checkWorkspaceEntry } from '../src/images/registry';
import { registryDocument, workspaceEntry } from './support/registry';

/** The registry schemas' own rules, without a database (the operations are tested in images.test.ts). */
describe('registry entry and document checks', () => {
  const entry = workspaceEntry();

  test('problems follow the contract\u2019s field order, missing fields included', () => {
    const { description: _dropped, ...withoutDescription } = entry;
    expect(checkWorkspaceEntry({ ...withoutDescription, name: 'chrome', gpu_count: -1 })).toEqual({
      ok: false,
      problems: [
        'name must be an image reference <repository>:<tag>, e.g. kasmweb/desktop:1.16.0',
        'description is required',
        'gpu_count must be an integer from 0 to 2147483647',
      ],
    });
  });

  test('a null exec_config hook counts as absent and is kept as given; other members are kept', () => {
    const exec_config = { go: null, assign: { cmd: 'x', user: 'root' }, custom: 1 };
    const checked = checkWorkspaceEntry({ ...entry, exec_config });
    expect(checked).toMatchObject({ ok: true, value: { exec_config } });
  });

  test('each failing hook is named once, a null cmd is not a string', () => {
    expect(checkWorkspaceEntry({ ...entry, exec_config: { go: { cmd: null }, assign: [] } })).toEqual({
      ok: false,
      problems: [
        'exec_config.go.cmd must be a string',
        'exec_config.assign must be an object like {"cmd": "..."}',
      ],
    });
  });

  test('an installed entry drops unknown fields and duplicate architectures; absent fields are null', () => {
    const checked = checkWorkspaceEntry({ ...entry, architecture: ['arm64', 'arm64'], extra: 'dropped' });
    if (!checked.ok) throw new Error(checked.problems.join('; '));
    expect(checked.value).not.toHaveProperty('extra');
    expect(checked.value).toMatchObject({ architecture: ['arm64'], categories: [], gpu_count: null });
  });

  test('an image reference\u2019s repository is at most 255 characters', () => {
    expect(checkWorkspaceEntry({ ...entry, name: `${'a'.repeat(255)}:t` }).ok).toBe(true);
    expect(checkWorkspaceEntry({ ...entry, name: `${'a'.repeat(256)}:t` }).ok).toBe(false);
  });

  test('a document keeps only its known fields', () => {
    const document = registryDocument([], { description: '', list_url: 'http://example.org/' });
    expect(checkRegistryDocument({ ...document, extra: true })).toEqual({ ok: true, value: document });
    expect(checkRegistryDocument({ ...document, name: ' ', list_url: 'http://' })).toEqual({
      ok: false,
      problems: ['name must be a non-empty string', 'list_url must be an http(s) URL'],
    });
  });
});
