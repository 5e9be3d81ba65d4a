/**
 * The panel's script, /panel.js: TypeScript from panel/src on the microblog client, bundled by
 * esbuild (src/panel/bundle.ts). Running from source, as here, it is bundled on request; the build
 * writes the same bundle to dist/public/panel.js, which `npm start` (tools/dev/smoke.mjs) and the
 * image (tools/docker-check's compose test) serve.
 */
import { Script } from 'node:vm';
import { bundlePanel } from '../src/panel/bundle';
import { buildTestApp, type TestApp } from './support/app';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await buildTestApp();
});
afterAll(() => testApp?.close());

test('GET /panel.js is the bundle: one classic script, nothing loaded from elsewhere', async () => {
  const response = await testApp.app.inject({ method: 'GET', url: '/panel.js' });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toBe('application/javascript; charset=utf-8');
  expect(response.headers['cache-control']).toBe('no-cache');
  expect(response.body).toBe(await bundlePanel());
  expect(response.body).toMatch(/^\/\* microblog panel: bundled by esbuild/);
  // A classic script (no import or export), as index.html loads it: <script src defer>, no module.
  expect(() => new Script(response.body)).not.toThrow();
  // No CDN, no other origin: every call goes to the page's own origin, through the client.
  expect(response.body).not.toMatch(/https?:\/\//);
  expect(response.body).toContain('/api/microblog/events');
});
