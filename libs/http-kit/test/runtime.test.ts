import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const LIB_DIR = resolve(__dirname, '..');

/** Runs the fixture in its own Node process with a 1 MiB semi-space, so a batch fits the young generation. */
async function youngGrowth(mode: 'default' | 'served'): Promise<number> {
  const { stdout } = await run(
    process.execPath,
    [
      '--expose-gc',
      '--max-semi-space-size=1',
      '--import',
      'tsx',
      '--conditions=@platform/source',
      'test/fixtures/pretenuring.ts',
      mode,
    ],
    { cwd: LIB_DIR, env: { ...process.env, NODE_OPTIONS: '' }, timeout: 60_000 },
  );
  return (JSON.parse(stdout.trim().split('\n').pop()!) as { newSpaceGrewBytes: number }).newSpaceGrewBytes;
}

describe('the runtime a service runs with', () => {
  it('does not pretenure: a site whose objects always survived still allocates young', async () => {
    const [pretenured, served] = await Promise.all([youngGrowth('default'), youngGrowth('served')]);
    // A batch of 1,000 rows (an object, a string and an array each) is ~160 KB. By default V8 puts
    // the trained site's objects and arrays in the old generation: only the strings are young.
    expect(served).toBeGreaterThan(120_000);
    expect(pretenured).toBeLessThan(served / 2);
  });
});
