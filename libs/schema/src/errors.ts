import { Type, type Static } from '@sinclair/typebox';

/**
 * One failed field of a validation error, independent of any service's wire format: a building block
 * for error bodies, registered by a service whose error dialect lists it.
 */
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
