/**
 * A client package as its users meet it: built, installed by name in a project of its own (no path
 * mapping, no `@platform/source` condition: the `types` and `default` of its `exports`, i.e. `dist/`),
 * compiled by `tsc` in strict mode and run by Node. The clients' consumer tests compile a small
 * consumer and their README's examples with it, and run those examples against the live service.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';

const REPOSITORY = resolve(__dirname, '..', '..', '..');

/** The ```ts blocks of a README, in order. */
export function readmeExamples(readme: string): string[] {
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

/** What `tsc` said of a consumer's files, one line each (`file:line: TSnnnn message`). */
export interface Compilation {
  errors: string[];
  /** The declaration files of the package the program read (proof that `dist/` was used). */
  packageFiles: string[];
}

export interface ConsumerProject {
  directory: string;
  /** Type-checks `files` (name → text) in strict mode, as a consumer's `tsc --noEmit` would. */
  compile(files: Record<string, string>): Compilation;
  /**
   * Runs `file` (written into the project) with Node and tsx's loader, resolving the package as
   * published; `output` collects its stdout and stderr as they come.
   */
  run(file: string, text: string, env?: Record<string, string>): RunningExample;
  remove(): void;
}

export interface RunningExample {
  output: () => string;
  /** Resolves once `pattern` has been printed (rejects when the program ends first or after `ms`). */
  printed(pattern: RegExp, ms?: number): Promise<string>;
  /** Its exit code (null when killed). */
  exited: Promise<number | null>;
  kill(): void;
}

/** Builds the package (`npm run build` in its directory: its `dist/` and its references'). */
export async function buildPackage(packageDirectory: string): Promise<void> {
  await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: packageDirectory, timeout: 120_000 });
}

/**
 * A project in a temporary directory that depends on the package at `packageDirectory` by its name
 * (a `node_modules` link, as `npm install` makes one).
 */
export function consumerProject(packageDirectory: string): ConsumerProject {
  const manifest = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as {
    name: string;
  };
  const directory = mkdtempSync(join(tmpdir(), 'client-consumer-'));
  const link = join(directory, 'node_modules', manifest.name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(packageDirectory, link, 'dir');
  writeFileSync(
    join(directory, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    typeRoots: [join(REPOSITORY, 'node_modules', '@types')],
    // The package's own declarations are checked too (a broken `.d.ts` is the consumer's error).
    skipLibCheck: false,
  };
  return {
    directory,
    compile(files) {
      const names = Object.entries(files).map(([name, text]) => {
        const path = join(directory, name);
        writeFileSync(path, text);
        return path;
      });
      const program = ts.createProgram(names, options);
      const diagnostics = ts.getPreEmitDiagnostics(program);
      const errors = diagnostics.map((d) => {
        const where =
          d.file && d.start !== undefined
            ? `${d.file.fileName.replace(`${directory}/`, '')}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: `
            : '';
        return `${where}TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
      const packageFiles = program
        .getSourceFiles()
        .map((f) => f.fileName)
        .filter((f) => f.startsWith(`${packageDirectory}/`));
      return { errors, packageFiles };
    },
    run(file, text, env = {}) {
      writeFileSync(join(directory, file), text);
      const loader = join(REPOSITORY, 'node_modules', 'tsx', 'dist', 'loader.mjs');
      const child = spawn(process.execPath, ['--import', loader, file], {
        cwd: directory,
        env: { ...process.env, NODE_OPTIONS: '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const waiting = new Set<() => void>();
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
        for (const check of waiting) check();
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
      return {
        output: () => output,
        exited,
        kill: () => void child.kill('SIGKILL'),
        printed(pattern, ms = 20_000) {
          return new Promise((done, fail) => {
            const timer = setTimeout(
              () => finish(new Error(`not printed in ${ms} ms: ${pattern}\n${output}`)),
              ms,
            );
            const finish = (error?: Error) => {
              clearTimeout(timer);
              waiting.delete(check);
              if (error) fail(error);
              else done(output);
            };
            const check = () => {
              if (pattern.test(output)) finish();
            };
            waiting.add(check);
            void exited.then(() =>
              setImmediate(() => finish(new Error(`ended before printing ${pattern}:\n${output}`))),
            );
            check();
          });
        },
      };
    },
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}
