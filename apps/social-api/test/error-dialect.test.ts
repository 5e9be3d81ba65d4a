import * as testing from '@platform/testing';
import { socialDialect } from '../src/errors';

/**
 * The service's error dialect on its own (the Flask backend's envelope, marshmallow's wording), over
 * the platform's one error path: the kit's bare dialect test app, whose body schema has every kind of
 * rule. The service's own request rules and routes are tested through its app (http.test.ts and the
 * others).
 */
describe('the error dialect: the Flask envelope, marshmallow wording', () => {
  const social = testing.openForTheseTests(() => testing.dialectTestApp(socialDialect));

  test('validation failures: Flask gets errors.json.<field> lists (errors.query.<field> for the query string)', async () => {
    const s = await testing.postThing(social(), testing.INVALID_THING.payload);
    expect(s.statusCode).toBe(400);
    expect(s.headers['content-type']).toMatch(/^application\/json/);
    expect(s.json()).toEqual({
      code: 400,
      message: 'Validation Error',
      description: 'The server found one or more errors in the information that you sent.',
      errors: {
        json: {
          name: ['Not a valid string.'],
          kind: ['Must be one of: a, b.'],
          count: ['Not a valid integer.'],
        },
      },
    });
    const q = await social().inject('/things?limit=x');
    expect(q.json().errors).toEqual({ query: { limit: ['Not a valid integer.'] } });
  });

  test('the social dialect words schema failures as marshmallow does (the React client shows them)', async () => {
    const errorsOf = async (payload: unknown) => (await testing.postThing(social(), payload)).json().errors;
    expect(await errorsOf({ kind: 'a', extra: 1, id: 2 })).toEqual({
      json: { name: ['Missing data for required field.'], extra: ['Unknown field.'], id: ['Unknown field.'] },
    });
    expect(await errorsOf({ name: null, kind: 'a', count: 12 })).toEqual({
      json: {
        name: ['Field may not be null.'],
        count: ['Must be greater than or equal to 1 and less than or equal to 9.'],
      },
    });
    expect(await errorsOf({ name: 'abcdefgh', kind: 'a' })).toEqual({
      json: { name: ['must be 2..5 characters'] },
    });
    expect(await errorsOf({ name: 'abc', kind: 'a', ref: 'y' })).toEqual({
      json: { ref: ['must be a number or an x-string'] },
    });
    expect(await errorsOf([1])).toEqual({ json: { _schema: ['Invalid input type.'] } });
    // An `allOf` rule (marshmallow's @validates) speaks only once the field's own rules pass.
    expect(await errorsOf({ name: 'a', kind: 'a', tag: '1' })).toEqual({
      json: { name: ['must be 2..5 characters'], tag: ['Must start with a letter'] },
    });
    expect(await errorsOf({ name: 'abc', kind: 'a', tag: '1abcdefgh' })).toEqual({
      json: { tag: ['Longer than maximum length 5.'] },
    });
  });

  test('a rule checked by a handler leaves like a schema failure, under its location', async () => {
    expect((await social().inject('/rule')).json().errors).toEqual({
      query: { start: ['start must come before end'] },
    });
  });

  test.each(testing.REFUSED_BODIES)(
    '%s: code and description in the envelope',
    async (_name, request, status, detail) => {
      const r = await social().inject({ method: 'POST', url: '/things', ...request });
      expect(r.statusCode).toBe(status);
      expect(r.json()).toMatchObject({ code: status, description: detail });
    },
  );

  test('a known path with another method is a 405 with Allow, its reason phrase as message', async () => {
    const wrong = await social().inject({ method: 'DELETE', url: '/things?x=1' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('GET, HEAD, POST');
    expect(wrong.json()).toMatchObject({ code: 405, message: 'Method Not Allowed' });
  });

  test('an unready service answers 503 in the envelope', async () => {
    const app = await testing.dialectTestApp(socialDialect, {
      readiness: async () => {
        throw new Error('db down');
      },
    });
    const r = await app.inject('/readyz');
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ code: 503, message: 'Service Unavailable' });
    await app.close();
  });
});
