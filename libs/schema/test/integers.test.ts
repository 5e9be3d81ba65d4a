import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { Id, INT32, Int32, MAX_ID, PageLimit, PageOffset, SAFE_INTEGER, SafeInteger } from '../src';

describe('integers bounded by the column that holds them', () => {
  test('Int32: exactly the range of a Postgres integer, written into the schema', () => {
    const schema = Int32();
    expect(schema).toMatchObject({ type: 'integer', minimum: -2147483648, maximum: 2147483647 });
    expect(Value.Check(schema, INT32.max)).toBe(true);
    expect(Value.Check(schema, INT32.min)).toBe(true);
    for (const beyond of [2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 63, -(2 ** 63), 1e23])
      expect(Value.Check(schema, beyond)).toBe(false);
  });

  test('SafeInteger: the integers a JavaScript number holds exactly (bigint columns stop there)', () => {
    const schema = SafeInteger({ minimum: 1 });
    expect(schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 2 ** 53 - 1 });
    expect(Value.Check(schema, SAFE_INTEGER.max)).toBe(true);
    expect(Value.Check(schema, 2 ** 31)).toBe(true);
    for (const beyond of [2 ** 53, 2 ** 63, 1e23, 0]) expect(Value.Check(schema, beyond)).toBe(false);
  });

  test('Id, PageOffset and PageLimit carry both bounds within int4', () => {
    expect(Id()).toMatchObject({ minimum: 1, maximum: MAX_ID });
    expect(PageOffset()).toMatchObject({ minimum: 0, maximum: INT32.max });
    expect(PageLimit({ max: 500, default: 100 })).toMatchObject({ minimum: 1, maximum: 500, default: 100 });
    expect(Value.Check(Type.Object({ offset: PageOffset() }), { offset: 2 ** 31 })).toBe(false);
  });

  test('a bound beyond the column is refused when the schema is written, not at the first 500', () => {
    expect(() => Int32({ maximum: 2 ** 31 })).toThrow(RangeError);
    expect(() => Int32({ minimum: -(2 ** 31) - 1 })).toThrow(RangeError);
    expect(() => SafeInteger({ maximum: 2 ** 63 })).toThrow(RangeError);
    expect(() => Int32({ minimum: 5, maximum: 4 })).toThrow(RangeError);
    expect(() => PageLimit({ max: 2 ** 40, default: 1 })).toThrow(RangeError);
  });
});
