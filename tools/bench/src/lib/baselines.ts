// The bare servers every figure is measured against: baseline.ts (one route answering the service's
// bytes from memory) and bare.ts (one route running the service's SQL), each compiled to JavaScript
// and run in a child process, checked to answer exactly what the service answered.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import ts from 'typescript';
import type { BaselinePayload } from '../baseline';
import {
  cpuProfileArgs,
  freePort,
  request,
  startNode,
  waitForHttp,
  type Answer,
  type NodeProcess,
} from './processes';
import { onCleanup } from './run';

/**
 * A file of the bench (baseline.ts, bare.ts, bare-entry.ts, streams/subscriber.ts) as plain
 * JavaScript in `dir`: the bare servers and the stream subscribers run on bare Node, without the
 * TypeScript loader (which weighs on a process), so their figures are Fastify's (and pg's) alone.
 */
export function compileEntry(dir: string, source: string): string {
  const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
    fileName: source,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
  });
  const file = path.join(dir, path.basename(source).replace(/\.ts$/, '.js'));
  writeFileSync(file, outputText);
  return file;
}

/** The headers named in `names` that `sample` has, to answer with the same. */
export function headersOf(sample: Answer<unknown>, names: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = sample.response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

export interface BareServer {
  /** The process name in the log and errors (`baseline`, `bare`). */
  name: 'baseline' | 'bare';
  /** Its payload file's content (`BaselinePayload` of baseline.ts, `BarePayload` of bare.ts). */
  payload: unknown;
  /** The packages it imports, found where the bench finds them. */
  packages: string[];
  /** The route it answers and the request that checks it. */
  route: string;
  init?: RequestInit;
  /** The service's answer: the bare server must answer the same bytes, or `differs` is thrown. */
  sample: Answer<unknown>;
  differs: string;
  cpuProfile?: string;
}

/**
 * Starts `<name>.ts` of this folder, compiled, in a child process on a free port with its payload
 * file, and checks it answers the service's bytes. Returns the child and the route's URL.
 */
export async function startBareServer(server: BareServer): Promise<NodeProcess & { url: string }> {
  const { name, route, init = {} } = server;
  const dir = mkdtempSync(path.join(os.tmpdir(), `bench-${name}-`));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const payloadFile = path.join(dir, 'payload.json');
  writeFileSync(payloadFile, JSON.stringify(server.payload));
  const port = await freePort();
  // The entry point imports bare-entry.ts: compiled beside it, where its require() finds it.
  compileEntry(dir, path.join(__dirname, '..', 'bare-entry.ts'));
  const entry = compileEntry(dir, path.join(__dirname, '..', `${name}.ts`));
  const proc = startNode(name, [...cpuProfileArgs(server.cpuProfile), entry, payloadFile], {
    ...process.env,
    PORT: String(port),
    // The compiled file lives in a temporary directory: it finds its packages where the bench does.
    NODE_PATH: server.packages
      .map((pkg) => path.resolve(require.resolve(`${pkg}/package.json`), '../..'))
      .join(path.delimiter),
  });
  const url = `http://127.0.0.1:${port}${route}`;
  await waitForHttp(name, proc, url, init);
  const check = await request(url, init);
  if (!check.bytes.equals(server.sample.bytes)) throw new Error(server.differs);
  return { ...proc, url };
}

/**
 * Starts the baseline in a child process for `route`, serving `sample` (a `request()` answer of the
 * service): its body bytes and the response headers named in `headerNames` that it has. Checks that
 * the baseline answers the same bytes. Returns the child and the route's URL.
 */
export function startBaseline(
  route: string,
  sample: Answer<unknown>,
  headerNames: string[],
  init: RequestInit = {},
): Promise<NodeProcess & { url: string }> {
  const payload: BaselinePayload = {
    route,
    body: sample.bytes.toString('base64'),
    headers: headersOf(sample, headerNames),
  };
  return startBareServer({
    name: 'baseline',
    payload,
    packages: ['fastify'],
    route,
    init,
    sample,
    differs: 'baseline body differs from the service body',
  });
}
