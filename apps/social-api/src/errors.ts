import { Type, type Static } from '@sinclair/typebox';
import { validationMessageOf, type FieldError } from '@platform/schema';
import {
  createError,
  reasonPhrase,
  type AjvError,
  errorResponses,
  RequestValidationError,
  type ErrorDialect,
  type ValidationLocation,
} from '@platform/http-kit';

/**
 * Every error social-api raises itself. Descriptions are werkzeug's standard texts, as the Flask
 * backend sends them; the status's reason phrase becomes `message` (the error dialect adds it).
 */
const E = (code: string, description: string, status: number) =>
  createError(`SOCIAL_${code}`, description, status);

export const BadRequest = E(
  'BAD_REQUEST',
  'The browser (or proxy) sent a request that this server could not understand.',
  400,
);
export const Unauthorized = E(
  'UNAUTHORIZED',
  "The server could not verify that you are authorized to access the URL requested. You either supplied the wrong credentials (e.g. a bad password), or your browser doesn't understand how to supply the credentials required.",
  401,
);
/**
 * OAuth2 logins refused for the address, not the credentials: the provider did not say it verified
 * the address, or the local account holding it never proved it. Each says what to do instead.
 */
export const UnverifiedProviderEmail = E(
  'UNVERIFIED_PROVIDER_EMAIL',
  'The provider has not verified this e-mail address, so it cannot sign in here. Verify the address with the provider (or make a verified address your primary one there) and try again.',
  401,
);
export const UnprovenAccountEmail = E(
  'UNPROVEN_ACCOUNT_EMAIL',
  "An account with this e-mail address already exists, but the address was never proven to be its owner's. Request a password reset link for this address and follow it (that proves the address is yours); then this sign-in will work.",
  401,
);
export const Forbidden = E(
  'FORBIDDEN',
  "You don't have the permission to access the requested resource. It is either read-protected or not readable by the server.",
  403,
);
const NOT_FOUND_DESCRIPTION =
  'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.';
export const NotFound = E('NOT_FOUND', NOT_FOUND_DESCRIPTION, 404);
const TOO_MANY_REQUESTS_DESCRIPTION = 'This user has exceeded an allotted request count. Try again later.';

/**
 * Werkzeug's texts for the statuses Flask answers itself, whatever the cause: an unknown path and a
 * known path with another method. The platform's own details ("No such path: …") stay in the log.
 */
const WERKZEUG_DESCRIPTIONS: Partial<Record<number, string>> = {
  404: NOT_FOUND_DESCRIPTION,
  405: 'The method is not allowed for the requested URL.',
  429: TOO_MANY_REQUESTS_DESCRIPTION,
};
export const Conflict = E(
  'CONFLICT',
  'A conflict happened while processing the request. The resource might have been modified while the request was being processed.',
  409,
);

/** Werkzeug's TooManyRequests text (what Flask-Limiter answers); `Retry-After` says when to come back. */
export const TooManyRequests = E('TOO_MANY_REQUESTS', TOO_MANY_REQUESTS_DESCRIPTION, 429);

/** "5 minutes", "1 second": a wait in the largest whole unit a person reads at a glance (rounded up). */
export function waitInWords(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  const [amount, unit] =
    s < 120 ? [s, 'second'] : s < 7200 ? [Math.ceil(s / 60), 'minute'] : [Math.ceil(s / 3600), 'hour'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

/**
 * A throttled form: 429 (the caller sets `Retry-After`) with the werkzeug body, plus
 * `errors.json.<field>`: one sentence saying when to try again, so a client written for the Flask
 * backend's validation errors (react-microblog reads only those) shows it beside the form's field.
 */
export function throttled(field: string, what: string, retryAfterSeconds: number) {
  return new RequestValidationError(
    [{ field, message: `${what}: try again in ${waitInWords(retryAfterSeconds)}.` }],
    'body',
    429,
  );
}

/**
 * A reset link that cannot be used (spent, expired, tampered with): a validation error on `token`,
 * so react-microblog shows its own "could not be reset" message and sends the user to request a new link.
 */
export const invalidResetToken = () =>
  new RequestValidationError([
    {
      field: 'token',
      message: 'This reset link is invalid, expired or already used. Request a new one.',
    },
  ]);

/** The `WWW-Authenticate` challenges: Bearer for token endpoints, `Form` (no browser prompt) for logins. */
export const BEARER_CHALLENGE = 'Bearer realm="Authentication Required"';
export const FORM_CHALLENGE = 'Form';

/** The Flask backend's error body: `{code, message, description}`, plus `errors` on validation failures. */
export const SocialError = Type.Object(
  {
    code: Type.Integer({ examples: [400] }),
    message: Type.String({
      description: 'The HTTP reason phrase, or "Validation Error"',
      examples: ['Validation Error'],
    }),
    description: Type.String({
      examples: ['The server found one or more errors in the information that you sent.'],
    }),
    errors: Type.Optional(
      Type.Record(Type.String(), Type.Record(Type.String(), Type.Array(Type.String())), {
        description: 'Validation messages keyed by location (`json`, `query`) then field',
      }),
    ),
  },
  { $id: 'SocialError', description: 'Flask microblog-api compatible error body' },
);
export type SocialError = Static<typeof SocialError>;

/** Where webargs says a validation failure was found. */
const LOCATIONS: Record<ValidationLocation, string> = {
  body: 'json',
  querystring: 'query',
  params: 'path',
  headers: 'headers',
};

const MARSHMALLOW_TYPES: Record<string, string> = {
  string: 'Not a valid string.',
  integer: 'Not a valid integer.',
  number: 'Not a valid number.',
  boolean: 'Not a valid boolean.',
  array: 'Not a valid list.',
  object: 'Invalid input type.',
};
const MARSHMALLOW_FORMATS: Record<string, string> = {
  email: 'Not a valid email address.',
  'date-time': 'Not a valid datetime.',
  date: 'Not a valid date.',
  uri: 'Not a valid URL.',
};

/** marshmallow's wording of one schema failure, as the Flask backend's clients display it. */
function marshmallowMessage(e: AjvError): string {
  const s = e.parentSchema ?? {};
  const custom = validationMessageOf(s);
  switch (e.keyword) {
    case 'required':
      return 'Missing data for required field.';
    case 'additionalProperties':
      return 'Unknown field.';
    case 'type':
      return e.data === null
        ? 'Field may not be null.'
        : (MARSHMALLOW_TYPES[String([e.params.type].flat()[0])] ?? 'Invalid value.');
    case 'minLength':
    case 'maxLength':
      if (custom) return custom;
      if (typeof s.minLength === 'number' && typeof s.maxLength === 'number')
        return `Length must be between ${s.minLength} and ${s.maxLength}.`;
      return e.keyword === 'minLength'
        ? `Shorter than minimum length ${String(e.params.limit)}.`
        : `Longer than maximum length ${String(e.params.limit)}.`;
    case 'format':
      return custom ?? MARSHMALLOW_FORMATS[String(e.params.format)] ?? 'Not a valid value.';
    case 'minimum':
    case 'maximum':
      if (custom) return custom;
      if (typeof s.minimum === 'number' && typeof s.maximum === 'number') {
        return `Must be greater than or equal to ${s.minimum} and less than or equal to ${s.maximum}.`;
      }
      return e.keyword === 'minimum'
        ? `Must be greater than or equal to ${String(e.params.limit)}.`
        : `Must be less than or equal to ${String(e.params.limit)}.`;
    case 'enum':
      return custom ?? `Must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}.`;
    case 'pattern':
      return custom ?? 'String does not match expected pattern.';
    default:
      return custom ?? 'Invalid value.';
  }
}

/**
 * Schema failures worded as marshmallow/webargs word them: one list of messages per field, keyed by
 * the bare field name (`username`), `_schema` for the whole body or query string.
 */
export function describeMarshmallow(errors: AjvError[], _location: ValidationLocation): FieldError[] {
  const byField = new Map<string, AjvError[]>();
  for (const e of errors) {
    const segments = e.instancePath.split('/').slice(1);
    if (e.keyword === 'required') segments.push(String(e.params.missingProperty));
    if (e.keyword === 'additionalProperties') segments.push(String(e.params.additionalProperty));
    const field = segments.length ? segments.join('.') : '_schema';
    byField.set(field, [...(byField.get(field) ?? []), e]);
  }
  const out: FieldError[] = [];
  for (const [field, group] of byField) {
    // A union with its own message speaks for all of its branches' failures.
    const union = group.find(
      (e) =>
        (e.keyword === 'anyOf' || e.keyword === 'oneOf') && validationMessageOf(e.parentSchema) !== undefined,
    );
    // Rules in an `allOf` play marshmallow's `@validates` hooks: they speak only when the field's own rules passed.
    const own = group.filter((e) => !e.schemaPath?.includes('/allOf/'));
    const relevant = own.length ? own : group;
    const messages = union
      ? [validationMessageOf(union.parentSchema)!]
      : relevant
          .filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if')
          .map(marshmallowMessage);
    for (const message of new Set(messages)) out.push({ field, message });
  }
  return out;
}

/**
 * The service's error wire format, the Flask backend's: werkzeug's `{code, message, description}`,
 * and on validation failures webargs' `errors.<location>.<field>` lists in marshmallow's wording.
 */
export const socialDialect: ErrorDialect = {
  schemaRef: 'SocialError',
  schemas: [SocialError],
  contentType: 'application/json; charset=utf-8',
  body: (p): SocialError => {
    if (!p.fields)
      return {
        code: p.status,
        message: reasonPhrase(p.status),
        description: WERKZEUG_DESCRIPTIONS[p.status] ?? p.detail,
      };
    // A Map, not an object literal: a field may be named `constructor` or `toString`.
    const byField = new Map<string, string[]>();
    for (const f of p.fields) byField.set(f.field, [...(byField.get(f.field) ?? []), f.message]);
    // A throttled form (429) keeps its status's words and also carries the field's sentence.
    const validation = p.status === 400;
    return {
      code: p.status,
      message: validation ? 'Validation Error' : reasonPhrase(p.status),
      description: validation
        ? 'The server found one or more errors in the information that you sent.'
        : (WERKZEUG_DESCRIPTIONS[p.status] ?? p.detail),
      errors: { [LOCATIONS[p.location ?? 'body']]: Object.fromEntries(byField) },
    };
  },
  describeValidation: describeMarshmallow,
};

/**
 * The OpenAPI answer of a throttled form: 429 with `Retry-After`, the werkzeug body and the sentence
 * on `errors.json.<field>` (see `throttled`).
 */
export const throttledResponse = (field: string) => ({
  429: {
    ...(errorResponses(socialDialect, [429])[429] as object),
    description:
      `Too Many Requests: \`Retry-After\` gives the seconds to wait, and \`errors.json.${field}\` says when to try again ` +
      'in one sentence (the validation-error shape, so clients written for the Flask backend show it beside the form)',
  },
});

/** The OpenAPI answer of PUT /api/tokens/reset's 400: a spent, expired or tampered link is `errors.json.token`. */
export const resetTokenResponse = {
  400: {
    ...(errorResponses(socialDialect, [400])[400] as object),
    description:
      'Validation Error: a bad `new_password` is `errors.json.new_password`; a reset link that is invalid, expired or already used ' +
      'is `errors.json.token` (request a new link); a malformed body is a 400 without `errors`',
  },
};
