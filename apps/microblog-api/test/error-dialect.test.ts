import * as testing from '@platform/testing';
import { problemDetailsDialect } from '../src/errors';

/**
 * The service's error dialect on its own (RFC 9457 problem details), over the platform's one error
 * path: the kit's bare dialect test app. The service's error table is tested through its app
 * (errors.test.ts).
 */
describe('the error dialect: RFC 9457 problem details', () => {
  const problem = testing.openForTheseTests(() => testing.dialectTestApp(problemDetailsDialect));

  test('validation failures: problem details list every field with a readable message', async () => {
    const r = await testing.postThing(problem(), testing.INVALID_THING.payload);
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.json()).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: testing.INVALID_THING.detail,
      errors: testing.INVALID_THING.fields,
    });
  });

  test('a rule checked by a handler leaves like a schema failure', async () => {
    expect((await problem().inject('/rule')).json().errors).toEqual([
      { field: 'start', message: 'start must come before end' },
    ]);
  });

  test.each(testing.REFUSED_BODIES)(
    '%s: status and detail in the problem',
    async (_name, request, status, detail) => {
      const r = await problem().inject({ method: 'POST', url: '/things', ...request });
      expect(r.statusCode).toBe(status);
      expect(r.json()).toMatchObject({ status, detail });
    },
  );

  test('unexpected exceptions are 500 without internals', async () => {
    const boom = await problem().inject('/boom');
    expect(boom.statusCode).toBe(500);
    expect(boom.json()).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred',
    });
    expect(boom.body).not.toMatch(/secret_table|app\.ts/);
  });
});
