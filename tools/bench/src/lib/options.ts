// The command line of every benchmark: its own numeric options, the load options they all take
// (each also read from an environment variable), a few text options, the common switches and
// `--help`, parsed by node:util's parseArgs.
import process from 'node:process';
import { parseArgs } from 'node:util';

/**
 * A numeric option: what it is (its line of the usage), its environment variable, default and bounds
 * (integer and min 1 unless said).
 */
export interface NumberOption {
  help: string;
  env: string;
  fallback: number;
  integer?: boolean;
  min?: number;
}

/** A text option (`--name=text`): its line of the usage; undefined when not given. */
export interface TextOption {
  help: string;
  /** How the usage shows its value (`--only=a,b`). */
  value: string;
}

/** The numeric options every benchmark takes. */
const LOAD_OPTIONS = {
  duration: { help: 'seconds measured per scenario', env: 'BENCH_DURATION', fallback: 10, integer: false },
  connections: { help: 'concurrent autocannon connections', env: 'BENCH_CONNECTIONS', fallback: 50 },
  warmup: {
    help: 'seconds of unmeasured warm-up before each scenario',
    env: 'BENCH_WARMUP',
    fallback: 2,
    integer: false,
    min: 0,
  },
} satisfies Record<string, NumberOption>;

type LoadOption = keyof typeof LOAD_OPTIONS;

/** The load options with a benchmark's own defaults (`loadDefaults`) where it has some. */
const loadOptions = (defaults: Partial<Record<LoadOption, number>> = {}): Record<string, NumberOption> =>
  Object.fromEntries(
    Object.entries<NumberOption>(LOAD_OPTIONS).map(([name, option]) => [
      name,
      { ...option, fallback: defaults[name as LoadOption] ?? option.fallback },
    ]),
  );

/** A benchmark's options: its own numbers (`Own`), the load options, its texts and the common switches. */
export type BenchOptions<Own extends string, Text extends string = never> = Record<
  Own | LoadOption,
  number
> & {
  build: boolean;
  cpuProf: boolean;
  databaseUrl: string | undefined;
} & Partial<Record<Text, string>>;

/** What a benchmark is, for its usage. */
export interface BenchCommand<Own extends string, Text extends string = never> {
  /** How people run it (`npm run bench`). */
  command: string;
  /** The Nx project it measures. */
  project: string;
  /** The prefix of its throw-away schema (see `throwAwayDatabase`). */
  schemaPrefix: string;
  /** Its own numeric options, before the load options. */
  own: Record<Own, NumberOption>;
  /** Its text options, if any. */
  text?: Record<Text, TextOption>;
  /** Its defaults of the load options, where they differ from the others' (a bench of many short cells). */
  loadDefaults?: Partial<Record<LoadOption, number>>;
}

/** The usage text: a line per option, the numeric ones with their environment variable. */
function usageOf({
  command,
  project,
  schemaPrefix,
  own,
  text = {},
  loadDefaults,
}: BenchCommand<string, string>): string {
  const numbers = Object.entries<NumberOption>({ ...own, ...loadOptions(loadDefaults) });
  const texts = Object.entries<TextOption>(text);
  const width = Math.max(...numbers.map(([, { help }]) => help.length)) + 1;
  const line = (name: string, help: string) => `  ${name.padEnd(13)}  ${help}`;
  return [
    `usage: ${command} -- ${[
      ...texts.map(([name, { value }]) => `[--${name}=${value}]`),
      ...numbers.map(([name, { fallback }]) => `[--${name}=${fallback}]`),
    ].join(' ')} [--build]`,
    ...texts.map(([name, { help }]) => line(`--${name}`, help)),
    ...numbers.map(([name, { help, env }]) => line(`--${name}`, `${help.padEnd(width)}env ${env}`)),
    line('--build', `rebuild ${project} (and its libs) even if dist/ exists`),
    line(
      '--cpu-prof',
      'write a V8 CPU profile of the service to tools/bench/results/ (slows it down a little)',
    ),
    line(
      'DATABASE_URL',
      `PostgreSQL to use (a fresh schema ${schemaPrefix}_bench_<random>, dropped at the end);`,
    ),
    line('', 'unset: a fresh schema of the local PostgreSQL server, dropped at the end'),
  ].join('\n');
}

/**
 * Parses the command line: the benchmark's own numeric options, `--duration`, `--connections`,
 * `--warmup` (each also read from its environment variable), its text options, `--build`,
 * `--cpu-prof` and `--help` (prints the usage and exits). DATABASE_URL comes from the environment.
 */
export function benchOptions<Own extends string, Text extends string = never>(
  bench: BenchCommand<Own, Text>,
): BenchOptions<Own, Text> {
  const numbers: Record<string, NumberOption> = { ...bench.own, ...loadOptions(bench.loadDefaults) };
  const texts = Object.keys(bench.text ?? {});
  const { values }: { values: Record<string, string | boolean | undefined> } = parseArgs({
    options: {
      ...Object.fromEntries(
        [...Object.keys(numbers), ...texts].map((name) => [name, { type: 'string' as const }]),
      ),
      build: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usageOf(bench));
    process.exit(0);
  }
  const parsed: Record<string, number> = {};
  for (const [name, { env, fallback, integer = true, min = 1 }] of Object.entries(numbers)) {
    const raw = String(values[name] ?? process.env[env] ?? fallback);
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new Error(
        `--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min} (got ${JSON.stringify(raw)})`,
      );
    }
    parsed[name] = value;
  }
  // The loop above filled every name of `own` and LOAD_OPTIONS; a text option is a string or absent.
  return {
    ...(parsed as Record<Own | LoadOption, number>),
    build: values.build === true,
    cpuProf: values['cpu-prof'] === true,
    databaseUrl: process.env.DATABASE_URL || undefined,
    ...(Object.fromEntries(texts.map((name) => [name, values[name]])) as Partial<Record<Text, string>>),
  };
}
