import { MAX_ID } from '@platform/schema';
import { errorResponses, socialDialect } from '@platform/http-kit';
import { NotFound } from './errors';

/** OpenAPI error responses in the service's error format. */
export const errors = (...statuses: number[]) => errorResponses(socialDialect, [...statuses, 500]);

/** The OpenAPI security requirement of token endpoints (the scheme is declared in app.ts). */
export const bearerSecurity = [{ api_key: [] }];
export const basicSecurity = [{ basic_auth: [] }];

/** A path id as Flask's `<int:id>` reads it: digits only, else the route does not exist (404). */
export function parseId(text: string): number {
  if (!/^[0-9]{1,10}$/.test(text)) throw new NotFound();
  const id = Number(text);
  if (id < 1 || id > MAX_ID) throw new NotFound();
  return id;
}
