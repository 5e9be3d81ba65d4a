import { Type } from '@sinclair/typebox';
import { reasonPhrase, type ErrorDialect } from '@platform/http-kit';
import { FieldError } from '@platform/schema';

const KitError = Type.Object(
  {
    status: Type.Integer(),
    title: Type.String(),
    detail: Type.String(),
    fields: Type.Optional(Type.Array(FieldError)),
  },
  { $id: 'KitError' },
);

/** A dialect of the kit's tests' own: every error with its status, title and detail, failed fields listed. */
export const kitDialect: ErrorDialect = {
  schemaRef: 'KitError',
  schemas: [FieldError, KitError],
  contentType: 'application/vnd.kit-error+json; charset=utf-8',
  body: (p) => ({ status: p.status, title: reasonPhrase(p.status), detail: p.detail, fields: p.fields }),
};
