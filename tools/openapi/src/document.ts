import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { offlineDatabase } from './offline-database';

/** The parts of an OpenAPI document these tools read. */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, unknown> };
}

/** A service as the house shape lays it out: `src/app.ts` exports `buildApp`, `src/config.ts` `loadConfig`. */
interface ServiceModules {
  /** Decorated with `swagger()` by @fastify/swagger (http-kit's docs plugin). */
  buildApp(
    config: unknown,
    deps: { database: ReturnType<typeof offlineDatabase> },
  ): Promise<FastifyInstance & { swagger(): unknown }>;
  loadConfig(env: Record<string, string>): unknown;
}

/** Where a service's committed document lives. */
export const documentPath = (serviceDir: string) => join(resolve(serviceDir), 'openapi.json');

/** Components @fastify/swagger names itself when a schema has no `$id`: the name says nothing. */
const GENERATED_NAME = /^def-\d+$/;

/** Names of the document's components that are generated (`def-0`), not given by a schema's `$id`. */
export function unnamedComponents(document: OpenApiDocument): string[] {
  return Object.keys(document.components?.schemas ?? {}).filter((name) => GENERATED_NAME.test(name));
}

/**
 * The service's OpenAPI document as its production `buildApp` describes it, with the configuration's
 * defaults (no environment is read: the document is the same on every machine), over a database that
 * is never there and without listening: `ready()` registers every route, `app.swagger()` gives the
 * document.
 */
export async function buildDocument(serviceDir: string): Promise<OpenApiDocument> {
  const dir = resolve(serviceDir);
  const { buildApp } = (await import(join(dir, 'src', 'app.ts'))) as Pick<ServiceModules, 'buildApp'>;
  const { loadConfig } = (await import(join(dir, 'src', 'config.ts'))) as Pick<ServiceModules, 'loadConfig'>;
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent' }), { database: offlineDatabase() });
  try {
    await app.ready();
    // A deep copy: the document as JSON says it, nothing of the app's live objects.
    return JSON.parse(JSON.stringify(app.swagger())) as OpenApiDocument;
  } finally {
    await app.close();
  }
}

/** The document as committed: two-space JSON and a final newline (byte-stable across runs). */
export function renderDocument(document: OpenApiDocument): string {
  const unnamed = unnamedComponents(document);
  if (unnamed.length)
    throw new Error(
      `components without a name of their own: ${unnamed.join(', ')} (give their schemas an $id)`,
    );
  return `${JSON.stringify(document, null, 2)}\n`;
}
