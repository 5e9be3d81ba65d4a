import type { LightMyRequestResponse } from 'fastify';

/**
 * The Flask backend's wire format as the contract pins it, written out by hand (never taken from
 * the code under test): the User's keys and werkzeug's error bodies.
 */

/** Every key of a User, sorted. */
export const USER_KEYS = [
  'about_me',
  'avatar_url',
  'email',
  'first_seen',
  'has_password',
  'id',
  'last_seen',
  'posts_url',
  'url',
  'username',
];

export const BAD_REQUEST = {
  code: 400,
  message: 'Bad Request',
  description: 'The browser (or proxy) sent a request that this server could not understand.',
};
const VALIDATION = {
  code: 400,
  message: 'Validation Error',
  description: 'The server found one or more errors in the information that you sent.',
};
export const UNAUTHORIZED = {
  code: 401,
  message: 'Unauthorized',
  description:
    "The server could not verify that you are authorized to access the URL requested. You either supplied the wrong credentials (e.g. a bad password), or your browser doesn't understand how to supply the credentials required.",
};
export const FORBIDDEN = {
  code: 403,
  message: 'Forbidden',
  description:
    "You don't have the permission to access the requested resource. It is either read-protected or not readable by the server.",
};
export const NOT_FOUND = {
  code: 404,
  message: 'Not Found',
  description:
    'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.',
};
export const CONFLICT = {
  code: 409,
  message: 'Conflict',
  description:
    'A conflict happened while processing the request. The resource might have been modified while the request was being processed.',
};

/** A plain 400 (the generic werkzeug body): no `errors`, so the client shows no field message. */
export function expectPlainBadRequest(res: LightMyRequestResponse) {
  expect(res.statusCode).toBe(400);
  expect(res.json()).toEqual(BAD_REQUEST);
}

/** A validation 400 whose `errors` are exactly `<location>: fields`. */
function expectValidationErrors(
  res: LightMyRequestResponse,
  location: 'json' | 'query',
  fields: Record<string, string[]>,
) {
  expect(res.statusCode).toBe(400);
  expect(res.json()).toEqual({ ...VALIDATION, errors: { [location]: fields } });
}

/** A validation 400 on the JSON body: `errors` are exactly `json: fields`. */
export const expectJsonErrors = (res: LightMyRequestResponse, fields: Record<string, string[]>) =>
  expectValidationErrors(res, 'json', fields);

/** A validation 400 on the query string: `errors` are exactly `query: fields`. */
export const expectQueryErrors = (res: LightMyRequestResponse, fields: Record<string, string[]>) =>
  expectValidationErrors(res, 'query', fields);
