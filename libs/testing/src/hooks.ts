/// <reference types="jest" />

/**
 * What the tests of the enclosing `describe` share (a test app with settings of their own, a server):
 * opened before them (`beforeAll`, with its timeout), closed after them. The returned function gives
 * it to a test.
 */
export function openForTheseTests<T extends { close(): Promise<void> | void }>(
  open: () => Promise<T>,
  timeoutMs?: number,
): () => T {
  let opened: T | undefined;
  beforeAll(async () => {
    opened = await open();
  }, timeoutMs);
  afterAll(async () => {
    await opened?.close();
  });
  return () => {
    if (!opened) throw new Error('openForTheseTests: only the tests of its describe can use it');
    return opened;
  };
}
