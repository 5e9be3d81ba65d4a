import * as testing from '@platform/testing';
import { kasmDialect } from '../src/errors';

/**
 * The service's error dialect on its own (Kasm's one `error_message`), over the platform's one error
 * path: the kit's bare dialect test app. The service's own request rules, 404 wording and operations
 * are tested through its app (client-compat.test.ts and the others).
 */
describe("the error dialect: Kasm's one error_message", () => {
  const kasm = testing.openForTheseTests(() => testing.dialectTestApp(kasmDialect));

  // Bodies refused on their fields (the schema's rules, a NUL in a key): the one error_message names them.
  test.each([
    [
      'validation failures: Kasm gets one error_message naming every field',
      testing.INVALID_THING.payload,
      testing.INVALID_THING.detail,
    ],
    [
      'a NUL character in a key is a 400 naming it',
      { ['k\u0000']: 1, name: 'ab', kind: 'a' },
      'k\u0000 must not contain NUL characters',
    ],
  ])('%s', async (_name, payload, errorMessage) => {
    const k = await testing.postThing(kasm(), payload);
    expect(k.statusCode).toBe(400);
    expect(k.headers['content-type']).toMatch(/^application\/json/);
    expect(k.json()).toEqual({ error_message: errorMessage });
  });

  test.each(testing.REFUSED_BODIES)(
    '%s: the detail as error_message',
    async (_name, request, status, detail) => {
      const r = await kasm().inject({ method: 'POST', url: '/things', ...request });
      expect(r.statusCode).toBe(status);
      expect(r.json()).toEqual({ error_message: detail });
    },
  );

  test('unknown paths are 404 in the dialect; outages 503 with Retry-After and no internals', async () => {
    const notFound = await kasm().inject('/api/public/nothing');
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toEqual({ error_message: 'No such path: GET /api/public/nothing' });
    const down = await kasm().inject('/down');
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.body).not.toMatch(/ECONNREFUSED|5432/);
  });
});
