import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { FastifyInstance } from 'fastify';
import type { Database, DatabaseConfig, Migration } from '@platform/db';
import { withServiceDatabase } from './database';
import { serve, type ListenOptions } from './run';

/** The options a command accepts, declared as for `node:util` `parseArgs`. */
export type CliOptions = NonNullable<ParseArgsConfig['options']>;

/** The parsed values of a command's options, typed by their declaration (none without one). */
export type CliValues<O> = O extends CliOptions
  ? ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>['values']
  : Record<string, never>;

/**
 * A command line that does not fit the commands (unknown command or option, wrong number of
 * arguments): its message and the usage go to stderr, exit code 2. Any other error is one line, exit 1.
 */
export class UsageError extends Error {}

/** The part of a service's configuration the command line uses: where to listen, which database. */
export interface CliConfig extends ListenOptions {
  database: DatabaseConfig;
}

/** What a command's `run` gets besides its arguments. */
export interface CliContext<C, DB> {
  /** The service's configuration from the environment, loaded when first read. */
  readonly config: C;
  /** Prints one line of the command's output (stdout). */
  out(line: string): void;
  /**
   * Opens the service's database, brings its schema up to date, runs `use`, and closes the database
   * even when `use` fails. Check the arguments before calling it: a bad one then changes nothing.
   */
  withDatabase<T>(use: (database: Database<DB>, applied: string[]) => Promise<T>): Promise<T>;
}

export interface CliCommand<O, C, DB> {
  /** Its lines of the usage, each indented by two spaces. */
  usage: string;
  /**
   * Its options; any other is a usage error. A command without options takes every argument as
   * positional, so that `fake users -3` reaches the command's own check of the count.
   */
  options?: O & CliOptions;
  /** How many positional arguments it takes (`max` defaults to `min`); none when not given. */
  positionals?: { min: number; max?: number };
  /**
   * Runs once the command line fits `options` and `positionals`, before anything is opened; resolves
   * to the exit code, or to nothing to leave it unset (exit 0, or `serve` listening on).
   */
  run(
    args: { values: CliValues<O>; positionals: string[] },
    context: CliContext<C, DB>,
  ): Promise<number | void> | number | void;
}

/** A service's `buildApp`: its dependencies give the type of its database. */
export type BuildApp<C, DB> = (config: C, deps?: { database?: Database<DB> }) => Promise<FastifyInstance>;

export interface CliSpec<C extends CliConfig, DB, Commands extends Record<string, unknown>> {
  /** The program's name (its `bin`). */
  name: string;
  /** The service's config loader, given the environment to read. */
  loadConfig: (env: Record<string, string | undefined>) => C;
  /** Imports its `app.ts`: only `serve` does, so the other commands start without the HTTP stack. */
  loadApp: () => Promise<{ buildApp: BuildApp<C, DB> }>;
  /** Its migrations (the static index). */
  migrations: Record<string, Migration>;
  /** Its own commands, after `serve` and `migrate` that every service has. */
  commands: { [K in keyof Commands]: CliCommand<Commands[K], C, DB> };
}

/** Where the command line writes: stdout line by line, stderr. */
export interface CliIo {
  out(line: string): void;
  err(text: string): void;
}

const consoleIo: CliIo = { out: (line) => console.log(line), err: (text) => console.error(text) };

type AnyCommand<C, DB> = CliCommand<unknown, C, DB>;

/** `serve [--port] [--host]` and `migrate`, the same in every service. */
function sharedCommands<C extends CliConfig, DB>(
  spec: CliSpec<C, DB, Record<string, unknown>>,
): Record<'serve' | 'migrate', AnyCommand<C, DB>> {
  const serveCommand: CliCommand<{ port: { type: 'string' }; host: { type: 'string' } }, C, DB> = {
    get usage() {
      return `  serve [--port=N] [--host=H]   start the HTTP service${defaultPort(spec.loadConfig)}`;
    },
    options: { port: { type: 'string' }, host: { type: 'string' } },
    async run({ values }) {
      const config = spec.loadConfig({
        ...process.env,
        ...(values.port !== undefined ? { PORT: values.port } : {}),
        ...(values.host !== undefined ? { HOST: values.host } : {}),
      });
      const { buildApp } = await spec.loadApp();
      await serve(buildApp, config); // listens until SIGTERM/SIGINT: no exit code yet
    },
  };
  return {
    serve: serveCommand as AnyCommand<C, DB>,
    migrate: {
      usage: '  migrate                       bring the database schema up to date',
      run: (_args, { withDatabase, out }) =>
        withDatabase(async (_database, applied) => {
          out(applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date');
          return 0;
        }),
    },
  };
}

/** ` (default port N)`: the port an empty environment gives, or nothing if that config does not load. */
function defaultPort(loadConfig: (env: Record<string, string | undefined>) => CliConfig): string {
  try {
    return ` (default port ${loadConfig({}).port})`;
  } catch {
    return '';
  }
}

/** The command's arguments, checked against what it declares. */
function parseCommandArgs(
  name: string,
  command: Pick<AnyCommand<unknown, unknown>, 'options' | 'positionals'>,
  args: string[],
) {
  let parsed: { values: Record<string, unknown>; positionals: string[] } = { values: {}, positionals: args };
  if (command.options) {
    try {
      parsed = parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
    } catch (error) {
      throw new UsageError(`${name}: ${(error as Error).message}`);
    }
  }
  const min = command.positionals?.min ?? 0;
  const max = command.positionals?.max ?? min;
  const count = parsed.positionals.length;
  if (max === 0 && count > 0) throw new UsageError(`${name} takes no arguments`);
  if (count < min || count > max) {
    const expected = `${min === max ? min : `${min} to ${max}`} argument${max === 1 ? '' : 's'}`;
    throw new UsageError(`${name} takes ${expected}, not ${count}`);
  }
  return parsed as { values: CliValues<unknown>; positionals: string[] };
}

/**
 * Runs a service's command line: `serve`, `migrate` and the service's own commands. No command (or
 * `help`) prints the usage, exit 0; a command line that does not fit is a usage error (exit 2), found
 * before anything opens; a failure prints its message, exit 1. Resolves to the exit code, or to
 * `undefined` when the command left it unset (`serve` listening).
 */
export async function runCommandLine<C extends CliConfig, DB, const Commands extends Record<string, unknown>>(
  spec: CliSpec<C, DB, Commands>,
  argv: string[],
  io: CliIo = consoleIo,
): Promise<number | undefined> {
  const commands = new Map<string, AnyCommand<C, DB>>(
    Object.entries({
      ...sharedCommands(spec as CliSpec<C, DB, Record<string, unknown>>),
      ...(spec.commands as Record<string, AnyCommand<C, DB>>),
    }),
  );
  const usage = () =>
    [`usage: ${spec.name} <command>`, ...[...commands.values()].map((c) => c.usage)].join('\n');

  const [name, ...rest] = argv;
  try {
    if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
      io.out(usage());
      return 0;
    }
    const command = commands.get(name);
    if (!command) throw new UsageError(`unknown command: ${name}`);
    const args = parseCommandArgs(name, command, rest);
    let config: C | undefined;
    const context: CliContext<C, DB> = {
      get config() {
        return (config ??= spec.loadConfig(process.env));
      },
      out: io.out,
      withDatabase: (use) => withServiceDatabase(context.config.database, spec.migrations, use),
    };
    const code = await command.run(args, context);
    return typeof code === 'number' ? code : undefined;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n${usage()}`);
      return 2;
    }
    io.err(error instanceof Error ? error.message : String(error));
    return 1;
  }
}

/** A service's whole `cli.ts`: runs `process.argv` and sets the process's exit code. */
export function runCli<C extends CliConfig, DB, const Commands extends Record<string, unknown>>(
  spec: CliSpec<C, DB, Commands>,
): void {
  void runCommandLine(spec, process.argv.slice(2)).then((code) => {
    if (code !== undefined) process.exitCode = code;
  });
}
