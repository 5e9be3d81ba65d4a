import { createError } from '@platform/http-kit';

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
export const Forbidden = E(
  'FORBIDDEN',
  "You don't have the permission to access the requested resource. It is either read-protected or not readable by the server.",
  403,
);
export const NotFound = E(
  'NOT_FOUND',
  'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.',
  404,
);
export const Conflict = E(
  'CONFLICT',
  'A conflict happened while processing the request. The resource might have been modified while the request was being processed.',
  409,
);

/** The `WWW-Authenticate` challenges: Bearer for token endpoints, `Form` (no browser prompt) for logins. */
export const BEARER_CHALLENGE = 'Bearer realm="Authentication Required"';
export const FORM_CHALLENGE = 'Form';
