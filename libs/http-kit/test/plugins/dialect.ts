import { Type } from '@sinclair/typebox';
import { reasonPhrase, type ErrorDialect } from '../../src';

/** A small error dialect for the plugin tests: status, title and detail. */
export const plainDialect: ErrorDialect = {
  schemaRef: 'PlainError',
  schemas: [
    Type.Object(
      { status: Type.Integer(), title: Type.String(), detail: Type.String() },
      { $id: 'PlainError' },
    ),
  ],
  contentType: 'application/vnd.plain-error+json; charset=utf-8',
  body: (p) => ({ status: p.status, title: reasonPhrase(p.status), detail: p.detail }),
};

export const errorHandlingOptions = { dialect: plainDialect, bodyLimit: 1024 };
