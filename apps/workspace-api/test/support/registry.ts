let serial = 0;

/** A valid schema-1.0 registry entry with a name no other entry uses; `overrides` replace fields. */
export const workspaceEntry = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  friendly_name: 'Chrome',
  name: `kasmweb/test-${++serial}:1.16.0`,
  description: 'Chrome is a cross-platform web browser developed by Google.',
  image_src: 'chrome.png',
  architecture: ['amd64', 'arm64'],
  compatibility: ['1.15.x', '1.16.x'],
  uncompressed_size_mb: 2390,
  ...overrides,
});

/** A valid registry document (schema 1.0 `list.json`) listing `workspaces`; `overrides` replace fields. */
export const registryDocument = (workspaces: unknown, overrides: Record<string, unknown> = {}) => ({
  name: 'Mixed',
  description: 'Test registry',
  icon: 'icon.png',
  list_url: 'https://example.org/registry/',
  workspaces,
  ...overrides,
});
