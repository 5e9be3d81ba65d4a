/**
 * Hostile texts and numbers as fast-check arbitraries: strings with unicode edge cases, blank and
 * long texts, integers beyond every integer type, numbers that are not integers, bad
 * percent-encodings. The curated lists stay exported: other tests send the same values by hand.
 */
import fc from 'fast-check';

/** Unicode edge cases, none of them NUL (NUL has its own values): each also in a longer text. */
export const UNICODE_EDGE_STRINGS: readonly string[] = [
  '\ud800',
  '\udfff',
  'a\ud800b',
  '\udc00\ud800',
  '\ud83d',
  '\u202e\u202dreversed',
  'e\u0301\u0301\u0301\u0301',
  '\ufeffbom',
  '\uffff\ufffe',
  '\u{10ffff}',
  '\u200b\u200c\u200d\u2060',
  '\u0001\u001f\u007f\u0085',
  '\u2028\u2029',
  '\u00a0\u2003\u3000',
  '😀👩‍👩‍👧‍👦🏳️‍🌈',
  'İıſK',
  '\\u0000',
  '%00%ZZ',
  "'; DROP TABLE users; --",
  '../../../etc/passwd',
  '<script>alert(1)</script>',
];

/**
 * Single characters that break naive text handling (none of them NUL): lone surrogates, bidi and
 * zero-width controls, combining marks, noncharacters, C0/C1 controls, unicode separators and
 * spaces, emoji, letters whose case mapping changes their length, and the characters of injections.
 */
const EDGE_CHARACTERS: readonly string[] = [
  ...['\ud800', '\udbff', '\udc00', '\udfff'],
  ...['\u202e', '\u202d', '\u200f', '\u2066', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff'],
  ...['\u0301', '\u20dd', '\uffff', '\ufffe', '\ufdd0', '\u{10ffff}', '\u{1fffe}'],
  ...['\u0001', '\u001b', '\u001f', '\u007f', '\u0085', '\u009b', '\t', '\n', '\r', '\u000b'],
  ...['\u2028', '\u2029', '\u00a0', '\u2003', '\u3000', '😀', '👩‍👧', 'İ', 'ı', 'ſ', '\u212a', 'ß'],
  ...["'", '"', '`', '<', '>', '&', ';', '\\', '/', '.', '%', '$', '{', '}', '+', '#', '?', '*', ' '],
];

const BLANKS: readonly string[] = [' ', '\t', '\u00a0', '\u2003', '\ufeff', '\u3000'];

/**
 * Integers beyond the ranges an integer parameter can have (int4, JavaScript's exact integers 2^53,
 * int8), their negatives, huge decimal texts and exponent forms of them, as JSON numbers and texts
 * write them (`1e+23` is what `String(1e23)` gives). Integers a server reads as numbers either refuse
 * them or name nothing with them: PostgreSQL must never see one it cannot hold.
 */
export const OUT_OF_RANGE_INTEGERS: readonly string[] = [
  '2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740992',
  '9007199254740993',
  '-9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '99999999999999999999999',
  '-99999999999999999999999',
  '1e+23',
  '1E23',
  '-1e23',
  '2.147483648e9',
  '9.3e18',
];

/** Numbers that are not integers at all, next to the boundaries: fractions, non-finite. */
export const NOT_INTEGERS: readonly string[] = ['2147483647.5', '1.5', '1e309', '-1e309'];

/** The integers at the edge of int4 itself, sent where the schemas refuse them (a bound of their own). */
export const INT4_EDGES: readonly string[] = ['2147483647', '-2147483648'];

/** A text as sent in a URL: a `+` would be read as a space. */
export const inUrl = (text: string) => text.replace(/\+/g, '%2B');

/** Percent-encodings no server can decode: broken escapes, invalid UTF-8, overlong forms. */
export const BAD_PERCENT_ENCODINGS: readonly string[] = [
  '%ZZ',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AF',
  '%FF',
  '%00',
  '%F4%90%80%80',
];

/**
 * Texts for query strings and path parameters, already percent-encoded as sent: numbers the schemas
 * must refuse (non-finite, out of range, fractional), bad percent-encodings, invalid UTF-8, unicode.
 */
export const HOSTILE_TEXTS: readonly string[] = [
  'Infinity',
  '-Infinity',
  '+Infinity',
  'NaN',
  '1e309',
  '-1e309',
  '1e400',
  '-1',
  '0',
  '-0',
  '1.5',
  ...OUT_OF_RANGE_INTEGERS.map(inUrl),
  'abc',
  '',
  '%20',
  'true',
  'null',
  '%ZZ',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AF',
  '%FF%FE',
  '%F4%90%80%80',
  '%00',
  'a%00b',
  '%F0%9F%98%80',
  '%E2%80%AE',
  '%EF%BB%BF',
  '..%2F..%2F',
  '%5B%5D',
  '%7B%7D',
];

// ---------------------------------------------------------------------------------------------------
// Shrinking any text

/** One code point (lone surrogates included), shrinking toward `a` rather than NUL. */
const CODE_POINTS = 0x110000;
const codePoint = fc.integer({ min: 0, max: CODE_POINTS - 1 }).map(
  (n) => String.fromCodePoint((n + 0x61) % CODE_POINTS),
  (unit) => {
    const n = typeof unit === 'string' ? unit.codePointAt(0) : undefined;
    if (n === undefined || String.fromCodePoint(n) !== unit) throw new Error('not one code point');
    return (n - 0x61 + CODE_POINTS) % CODE_POINTS;
  },
);
const anyText = fc.string({ unit: codePoint });

/**
 * Generates as `source` does, and shrinks what it made as any text: fewer code points, each nearer
 * `a`. A curated string found to break a service shrinks to the characters that do.
 */
class ShrinksAsText extends fc.Arbitrary<string> {
  constructor(private readonly source: fc.Arbitrary<string>) {
    super();
  }

  generate(random: fc.Random, biasFactor: number | undefined): fc.Value<string> {
    return new fc.Value(this.source.generate(random, biasFactor).value, undefined);
  }

  canShrinkWithoutContext(value: unknown): value is string {
    return anyText.canShrinkWithoutContext(value);
  }

  shrink(value: string, context: unknown): fc.Stream<fc.Value<string>> {
    return anyText.shrink(value, context);
  }
}

const shrinksAsText = (source: fc.Arbitrary<string>) => new ShrinksAsText(source);

// ---------------------------------------------------------------------------------------------------
// Texts and numbers

/** Long texts (256 to 1024 repeats of one awkward character). */
const longText = fc
  .tuple(fc.constantFrom('x', '😀', '\ud800', 'é', '\u0301'), fc.integer({ min: 256, max: 1024 }))
  .map(([unit, n]) => unit.repeat(n));

/**
 * Strings no text field should take at face value: the curated edge cases, mixes of edge characters,
 * any code points, empty and (unicode) blank texts, long texts, numbers and keywords as text, NUL.
 * No minimum lengths: with one, fast-check's shrinking cannot drop a text's last character (the tail
 * it shrinks on its own keeps the minimum), so a harmless character would stay in a shrunk text.
 */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: shrinksAsText(fc.constantFrom(...UNICODE_EDGE_STRINGS)), weight: 4 },
  {
    arbitrary: fc.string({ unit: fc.constantFrom(...EDGE_CHARACTERS), maxLength: 12 }),
    weight: 4,
  },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }), weight: 1 },
  { arbitrary: fc.string({ unit: fc.constantFrom(...BLANKS), maxLength: 6 }), weight: 2 },
  { arbitrary: shrinksAsText(longText), weight: 2 },
  {
    arbitrary: shrinksAsText(fc.constantFrom('Infinity', '1e309', '-1', 'NaN', 'null', 'true')),
    weight: 2,
  },
  {
    arbitrary: fc
      .tuple(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }))
      .map(([a, b]) => `${a}\u0000${b}`),
    weight: 1,
  },
);

const sign = (negative: boolean) => (negative ? '-' : '');

/**
 * Integers no int4 holds, as text: the curated forms, any integer from 2^31 to 2^80 (or its
 * negative), and exponent forms of 10^10 and beyond.
 */
export const outOfRangeInteger: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...OUT_OF_RANGE_INTEGERS), weight: 3 },
  { arbitrary: fc.bigInt({ min: 2n ** 31n, max: 2n ** 80n }).map(String), weight: 1 },
  { arbitrary: fc.bigInt({ min: -(2n ** 80n), max: -(2n ** 31n) - 1n }).map(String), weight: 1 },
  {
    arbitrary: fc
      .tuple(
        fc.boolean(),
        fc.integer({ min: 1, max: 9 }),
        fc.constantFrom('e', 'E', 'e+'),
        fc.integer({ min: 10, max: 40 }),
      )
      .map(([negative, m, e, x]) => `${sign(negative)}${m}${e}${x}`),
    weight: 1,
  },
);

/** Numbers that are no integers: fractions of any int4, and non-finite ones. */
export const notAnInteger: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...NOT_INTEGERS, '1e400'),
  fc
    .tuple(fc.integer({ min: -(2 ** 31), max: 2 ** 31 }), fc.integer({ min: 1, max: 999 }))
    .map(([whole, fraction]) => `${whole}.${fraction}`),
);

// ---------------------------------------------------------------------------------------------------
// URLs

const hex2 = (byte: number) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const isUtf8 = (bytes: number[]) => {
  try {
    utf8.decode(Uint8Array.from(bytes));
    return true;
  } catch {
    return false;
  }
};

/**
 * A text percent-encoded as a URL carries it; a lone surrogate as the bytes UTF-8 would give it
 * (which no UTF-8 decoder accepts).
 */
export function percentEncode(text: string): string {
  let out = '';
  for (const unit of text) {
    const code = unit.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff)
      out += [0xed, 0xa0 | ((code >> 6) & 0x1f), 0x80 | (code & 0x3f)].map(hex2).join('');
    else out += encodeURIComponent(unit);
  }
  return out;
}

/** Percent-encodings no server can decode: the curated ones, short escapes, bytes that are not UTF-8. */
export const badPercentEncoding: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...BAD_PERCENT_ENCODINGS),
  // A `%` with fewer than two hex digits after it.
  fc
    .tuple(fc.constantFrom('', ...'0123456789ABCDEFabcdef'), fc.constantFrom('', 'Z', 'g', '%', '/', '-'))
    .map(([digit, rest]) => `%${digit}${rest}`),
  fc
    .array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 1, maxLength: 4 })
    .filter((bytes) => !isUtf8(bytes))
    .map((bytes) => bytes.map(hex2).join('')),
);

/**
 * Texts for a query string or a path parameter, percent-encoded as sent: the curated ones, integers
 * out of range, non-integers, any hostile text encoded, undecodable escapes.
 */
export const hostileUrlText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTILE_TEXTS), weight: 5 },
  { arbitrary: outOfRangeInteger.map(inUrl), weight: 2 },
  { arbitrary: notAnInteger.map(inUrl), weight: 1 },
  { arbitrary: hostileText.map(percentEncode), weight: 3 },
  { arbitrary: badPercentEncoding, weight: 2 },
);
