import { Type, type Static } from '@sinclair/typebox';

/** One failed field of a validation error, independent of any service's wire format. */
export const FieldError = Type.Object(
  {
    field: Type.String({
      description: 'Dotted path of the offending field, e.g. `content`',
      examples: ['content'],
    }),
    message: Type.String({ examples: ['content must be 1..280 characters'] }),
  },
  { $id: 'FieldError', description: 'A validation failure of one field' },
);
export type FieldError = Static<typeof FieldError>;

/** RFC 9457 problem details (microblog-api's error dialect), sent as `application/problem+json`. */
export const ProblemDetails = Type.Object(
  {
    type: Type.String({
      description: 'Always `about:blank`: the status code says what happened',
      examples: ['about:blank'],
    }),
    title: Type.String({ description: 'The HTTP reason phrase', examples: ['Bad Request'] }),
    status: Type.Integer({ examples: [400] }),
    detail: Type.String({
      description: 'A sentence for people',
      examples: ['content must be 1..280 characters'],
    }),
    errors: Type.Optional(
      Type.Array(Type.Ref('FieldError'), { description: 'Present on validation failures only' }),
    ),
  },
  { $id: 'ProblemDetails', description: 'RFC 9457 problem details' },
);
export type ProblemDetails = Static<typeof ProblemDetails>;

/** Kasm Workspaces' error body (workspace-api's error dialect). */
export const KasmError = Type.Object(
  { error_message: Type.String({ examples: ['Access Denied'] }) },
  { $id: 'KasmError', description: 'Kasm-compatible error body' },
);
export type KasmError = Static<typeof KasmError>;

/** The Flask microblog-api error body (social-api's error dialect). */
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

/** Every schema the services share, registered once per app with `addSchema` so `$ref`s resolve. */
export const sharedSchemas = [FieldError, ProblemDetails, KasmError, SocialError];
