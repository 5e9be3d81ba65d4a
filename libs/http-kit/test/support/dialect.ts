import { Type } from '@sinclair/typebox';
import { FieldError } from '@platform/schema';
import { reasonPhrase, type ErrorDialect } from '../../src';

/**
 * An error dialect of a test's own: `{status, title, detail}` (the title the status's reason
 * phrase) under the schema id `name` and a media type no framework would use by itself
 * (`HardError`: application/vnd.hard-error+json), so an answer in it went through the one error path.
 */
export function problemDialect(name: string) {
  const schema = Type.Object(
    { status: Type.Integer(), title: Type.String(), detail: Type.String() },
    { $id: name },
  );
  const mediaType = name.replace(/\B[A-Z]/g, (letter) => `-${letter}`).toLowerCase();
  const dialect: ErrorDialect = {
    schemaRef: name,
    schemas: [FieldError, schema],
    contentType: `application/vnd.${mediaType}+json; charset=utf-8`,
    body: (p) => ({ status: p.status, title: reasonPhrase(p.status), detail: p.detail }),
  };
  return { schema, dialect };
}
