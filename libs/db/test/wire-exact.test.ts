import { wireMismatches, type WireSchema } from '../src/testing';

/** A schema as TypeBox writes one: an object of a string, a nullable string (a union) and a list. */
const Item: WireSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    tags: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
  },
};
const Page: WireSchema = {
  type: 'object',
  properties: { data: { type: 'array', items: Item }, total: { type: 'integer' } },
};

const item = { id: 1, note: 'quotes " \\ and \u2028, a line\nbreak, 🦊', tags: [{ name: 'a' }] };

describe('wireMismatches', () => {
  test('a body holding exactly its schema, in order, at every depth: nothing', () => {
    const page = { data: [item, { ...item, note: null, tags: [] }], total: 2 };
    expect(wireMismatches(page, Page)).toEqual([]);
    expect(wireMismatches(page, Page, JSON.stringify(page))).toEqual([]);
  });

  test('a property the schema does not name, a missing one, another order: each said with its path', () => {
    expect(wireMismatches({ data: [{ ...item, secret: 'h' }], total: 1 }, Page)).toEqual([
      '$.data[0]: properties id,note,tags,secret (schema: id,note,tags)',
    ]);
    expect(wireMismatches({ id: 1, tags: [] }, Item)).toEqual([
      '$: properties id,tags (schema: id,note,tags)',
    ]);
    expect(wireMismatches({ note: null, id: 1, tags: [] }, Item)).toHaveLength(1);
    expect(wireMismatches({ ...item, tags: [{ name: 'a', extra: 1 }] }, Item)).toEqual([
      '$.tags[0]: properties name,extra (schema: name)',
    ]);
  });

  test('another kind of value where an object or a list is due', () => {
    expect(wireMismatches({ data: {}, total: 0 }, Page)).toEqual(['$.data: not an array']);
    expect(wireMismatches([item], Item)).toEqual(['$: not an object']);
    expect(wireMismatches({ ...item, note: { x: 1 } }, Item)).toEqual([]);
  });

  test('with the text as sent: another escaping or spacing than JSON.stringify writes is a mismatch', () => {
    const text = JSON.stringify(item);
    expect(wireMismatches(JSON.parse(text), Item, text)).toEqual([]);
    const escaped = text.replace('🦊', '\\ud83e\\udd8a');
    expect(JSON.parse(escaped)).toEqual(item);
    expect(wireMismatches(JSON.parse(escaped), Item, escaped)).toHaveLength(1);
    expect(wireMismatches(item, Item, JSON.stringify(item, null, 1))).toHaveLength(1);
  });
});
