import { Type, type Static } from '@sinclair/typebox';
import { FieldError } from '@platform/schema';
import { createError, reasonPhrase, type ErrorDialect } from '@platform/http-kit';

/** A write over one of the write limits (`plugins/external/rate-limit.ts`); sent with `Retry-After`. */
export const WriteLimitError = createError<[string, number]>(
  'MICROBLOG_WRITE_LIMIT',
  'Too many writes %s: try again in %d seconds',
  429,
);

export const PostNotFoundError = createError<[number | string]>(
  'MICROBLOG_POST_NOT_FOUND',
  'No post with id %s',
  404,
);

/** RFC 9457 problem details, the service's error body, sent as `application/problem+json`. */
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

/** The service's error wire format: RFC 9457 problem details, with the failed fields on validation errors. */
export const problemDetailsDialect: ErrorDialect = {
  schemaRef: 'ProblemDetails',
  schemas: [FieldError, ProblemDetails],
  contentType: 'application/problem+json; charset=utf-8',
  body: (p): ProblemDetails => ({
    type: 'about:blank',
    title: reasonPhrase(p.status),
    status: p.status,
    detail: p.detail,
    ...(p.fields ? { errors: p.fields } : {}),
  }),
};
