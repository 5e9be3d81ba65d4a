import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import { judge } from './breaking';
import { clientTypesPath, renderClientTypes, versionMismatch } from './client-types';
import { buildDocument, documentPath, renderDocument, type OpenApiDocument } from './document';
import { baseDocument } from './git-base';

const USAGE = `usage: openapi <command> <dir> [document]
  write <service dir>                  write <service dir>/openapi.json from the service's buildApp
  check <service dir>                  fail when openapi.json is not what the service describes now
  breaking <service dir>               fail when openapi.json breaks clients of its earlier version
                                       (OPENAPI_BASE, else the merge base with origin/main, else the
                                       version before the current one) unless info.version's major moved
  client-write <client dir> <document> write <client dir>/src/schema.d.ts with openapi-typescript
  client-check <client dir> <document> fail when schema.d.ts is stale or the client's version is not
                                       the document's info.version`;

/** A unified diff of two files, at most `lines` lines of it. */
function diffOf(expected: string, actual: string, lines = 60): string {
  let out = '';
  try {
    execFileSync('git', ['diff', '--no-index', '--no-color', '-U2', expected, actual], { encoding: 'utf8' });
  } catch (error) {
    out = String((error as { stdout?: string }).stdout ?? '');
  }
  const all = out.split('\n');
  return (
    all.slice(0, lines).join('\n') + (all.length > lines ? `\n… (${all.length - lines} more lines)` : '')
  );
}

/** Writes `text` to a temporary file, and gives its path and a way to remove it. */
function temporary(name: string, text: string): { file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
  const file = join(dir, name);
  writeFileSync(file, text);
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Fails (exit 1) when `file` differs from `fresh`, showing the difference and how to regenerate. */
function compare(file: string, fresh: string, regenerate: string): boolean {
  let committed: string | undefined;
  try {
    committed = readFileSync(file, 'utf8');
  } catch {
    committed = undefined;
  }
  if (committed === fresh) {
    console.log(`${relative(process.cwd(), file) || file} is current`);
    return true;
  }
  const tmp = temporary(basename(file), fresh);
  try {
    console.error(
      committed === undefined
        ? `${file} is missing`
        : `${file} is stale (- committed, + what the source makes now):\n${diffOf(file, tmp.file)}`,
    );
  } finally {
    tmp.remove();
  }
  console.error(`regenerate it: ${regenerate}`);
  return false;
}

const readDocument = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as OpenApiDocument;

async function main(argv: string[]): Promise<boolean> {
  const [command, dir, document] = argv;
  if (!command || !dir) {
    console.error(USAGE);
    return false;
  }
  const name = basename(resolve(dir));
  switch (command) {
    case 'write': {
      writeFileSync(documentPath(dir), renderDocument(await buildDocument(dir)));
      console.log(`wrote ${documentPath(dir)}`);
      return true;
    }
    case 'check':
      return compare(documentPath(dir), renderDocument(await buildDocument(dir)), `nx run ${name}:openapi`);
    case 'breaking': {
      const file = documentPath(dir);
      const current = readFileSync(file, 'utf8');
      const root = execFileSync('git', ['rev-parse', '--show-toplevel'], {
        cwd: dir,
        encoding: 'utf8',
      }).trim();
      const base = baseDocument(root, relative(root, file), current, process.env.OPENAPI_BASE || undefined);
      if ('skip' in base) {
        console.log(`${name}: no breaking-change check: ${base.skip}`);
        return true;
      }
      const before = JSON.parse(base.text) as OpenApiDocument;
      const after = JSON.parse(current) as OpenApiDocument;
      const verdict = judge(before, after);
      const versions = `info.version ${before.info.version} → ${after.info.version}`;
      if (!verdict.breaking.length) {
        console.log(`${name}: nothing breaks clients of ${base.from} (${versions})`);
        return true;
      }
      const list = verdict.breaking.map((change) => `  - ${change.description}\n    at ${change.path}`);
      if (verdict.ok) {
        console.log(
          `${name}: breaking changes since ${base.from}, announced by the major version (${versions}):`,
        );
        console.log(list.join('\n'));
        return true;
      }
      console.error(
        `${name}: ${verdict.breaking.length} breaking change(s) since ${base.from} (${versions}):`,
      );
      console.error(list.join('\n'));
      console.error(`keep them compatible, or move info.version to a new major version`);
      return false;
    }
    case 'client-write': {
      if (!document) break;
      writeFileSync(clientTypesPath(dir), await renderClientTypes(dir, document));
      console.log(`wrote ${clientTypesPath(dir)}`);
      const mismatch = versionMismatch(dir, readDocument(document));
      if (mismatch) console.error(mismatch);
      return !mismatch;
    }
    case 'client-check': {
      if (!document) break;
      const current = compare(
        clientTypesPath(dir),
        await renderClientTypes(dir, document),
        `nx run ${JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name}:openapi`,
      );
      const mismatch = versionMismatch(dir, readDocument(document));
      if (mismatch) console.error(mismatch);
      return current && !mismatch;
    }
  }
  console.error(USAGE);
  return false;
}

main(process.argv.slice(2)).then(
  // Exits at once: the app closed, but a retry timer of a driver must not keep the process waiting.
  (ok) => process.exit(ok ? 0 : 1),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
