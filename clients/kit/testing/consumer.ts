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

export interface ConsumerSuite {
  /** The package's directory. */
  packageDirectory: string;
  /** A consumer's file: its `// @ts-expect-error` lines when `marked`, the same without them. */
  consumer: (marked: boolean) => string;
  /** The errors `tsc` gives the unmarked consumer, in order (`consumer.ts:<line>: TS<code> …`). */
  unmarkedErrors: RegExp[];
}

/**
 * The tests every client package has as its users meet it, in a `describe` of the caller: it is
 * built, compiles in strict mode against `dist/` (the marked consumer cleanly, the unmarked one with
 * exactly the expected errors: a wrong field name is a compile error), and its README's example
 * compiles. Returns the project and the example, for the caller's run against the live service.
 */
export function consumerTests(suite: ConsumerSuite): { project: () => ConsumerProject; example: string } {
  const manifest = JSON.parse(readFileSync(join(suite.packageDirectory, 'package.json'), 'utf8')) as {
    name: string;
  };
  const [example] = readmeExamples(readFileSync(join(suite.packageDirectory, 'README.md'), 'utf8'));
  let project: ConsumerProject | undefined;
  beforeAll(async () => {
    await buildPackage(suite.packageDirectory);
    project = consumerProject(suite.packageDirectory);
  }, 120_000);
  afterAll(() => project?.remove());

  it('compiles in strict mode against dist/, and a wrong field name is a compile error', () => {
    const marked = project!.compile({ 'consumer.ts': suite.consumer(true) });
    expect(marked.errors).toEqual([]);
    expect(marked.packageFiles).toContain(join(suite.packageDirectory, 'dist', 'index.d.ts'));
    expect(marked.packageFiles.filter((f) => f.includes('/src/'))).toEqual([]);
    const unmarked = project!.compile({ 'consumer.ts': suite.consumer(false) });
    expect(unmarked.errors).toEqual(suite.unmarkedErrors.map((pattern) => expect.stringMatching(pattern)));
  });

  it("compiles the README's example", () => {
    expect(example).toContain(`from '${manifest.name}'`);
    expect(project!.compile({ 'readme.ts': example }).errors).toEqual([]);
  });

  return { project: () => project!, example };
}

/**
 * Writes through `write` until the running example prints `pattern` (a live stream it follows has
 * opened and passed the write on), one write each `everyMs`; fails after `attempts`.
 */
export async function writeUntilPrinted(
  running: RunningExample,
  pattern: RegExp,
  write: () => Promise<void>,
  { attempts = 100, everyMs = 200 } = {},
): Promise<void> {
  const reached = running.printed(pattern, attempts * everyMs + 5_000);
  let seen = false;
  reached.then(
    () => (seen = true),
    () => undefined,
  );
  for (let i = 0; i < attempts && !seen; i++) {
    await write();
    await Promise.race([reached, new Promise((resolve) => setTimeout(resolve, everyMs))]);
  }
  await reached;
}
