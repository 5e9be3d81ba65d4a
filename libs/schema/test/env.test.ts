import { Type } from '@sinclair/typebox';
import { parseEnv } from '../src';

describe('parseEnv', () => {
  const schema = Type.Object({
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8887 }),
    FLAG: Type.Boolean({ default: true }),
    URL: Type.Optional(Type.String()),
  });

  test('applies defaults, converts text and ignores empty values', () => {
    expect(parseEnv(schema, { PORT: '9000', FLAG: 'false', URL: '', OTHER: 'x' })).toEqual({
      PORT: 9000,
      FLAG: false,
    });
    expect(parseEnv(schema, {})).toEqual({ PORT: 8887, FLAG: true });
  });

  test('reports every bad variable at once', () => {
    expect(() => parseEnv(schema, { PORT: 'eighty', FLAG: 'maybe' })).toThrow(
      /invalid configuration:\n {2}PORT: .*\n {2}FLAG: /,
    );
  });
});
