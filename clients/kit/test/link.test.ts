import { parseLinkHeader } from '../src/link.js';

describe('Link headers (RFC 8288)', () => {
  test('the next page of a list, resolved against the response URL', () => {
    expect(
      parseLinkHeader(
        '</api/microblog?before=41&limit=20>; rel="next"',
        'http://localhost:8887/api/microblog?limit=20',
      ),
    ).toEqual({ next: 'http://localhost:8887/api/microblog?before=41&limit=20' });
  });

  test('several links, unquoted and multiple relations, commas inside a target', () => {
    expect(
      parseLinkHeader('<a?x=1,2>; rel=next, <b>; title="p, q"; rel="prev first", <c>; rel=next'),
    ).toEqual({
      next: 'a?x=1,2',
      prev: 'b',
      first: 'b',
    });
  });

  test('no header, no links', () => {
    expect(parseLinkHeader(null)).toEqual({});
    expect(parseLinkHeader('')).toEqual({});
  });
});
