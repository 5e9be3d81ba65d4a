/// <reference types="jest" />
/**
 * The Jest setup (`setupFilesAfterEnv`) of every test suite that runs a service: each response a
 * test receives from an app with an OpenAPI document is proven against that document, and a
 * response the document does not describe fails the test that received it (after it, or after the
 * file's last test for what its `afterAll` received). PROVEN_RESPONSES_LOG=<file> appends the
 * file's counts to <file>, one JSON line a test file.
 */
import { appendFileSync } from 'node:fs';
import { proveResponses } from './proof';

const proof = proveResponses();

afterEach(() => proof.assertDocumented());

afterAll(() => {
  proof.stop();
  const log = process.env.PROVEN_RESPONSES_LOG;
  if (log) appendFileSync(log, `${JSON.stringify({ file: expect.getState().testPath, ...proof.counts })}\n`);
  proof.assertDocumented();
});
