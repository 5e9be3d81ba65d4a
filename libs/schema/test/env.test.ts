import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '../src';

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

  test('a flag is a boolean once parsed, from yes/no, on/off, true/false or 1/0 in any case', () => {
    const flags = Type.Object({ ON: EnvFlag(false), OFF: EnvFlag(true), DEFAULT: EnvFlag(true) });
    const parsed: { ON: boolean; OFF: boolean; DEFAULT: boolean } = parseEnv(flags, {
      ON: ' Yes ',
      OFF: 'OFF',
    });
    expect(parsed).toEqual({ ON: true, OFF: false, DEFAULT: true });
    expect(() => parseEnv(flags, { ON: 'maybe' })).toThrow(/invalid configuration:\n {2}ON: /);
  });
});
