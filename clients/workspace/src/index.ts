import createClient, { type Client } from 'openapi-fetch';
import type { Fetch } from '@platform/client-kit';
import type { components, operations, paths } from './schema.js';

export { ApiError } from '@platform/client-kit';
export type { components, operations, paths };

/** A key pair, as Kasm's developer API takes it in every body. */
export interface Credentials {
  api_key: string;
  api_key_secret: string;
}

/** Kasm's error body: `{"error_message": "..."}` (400, 401, 403…). */
export type KasmError = components['schemas']['KasmError'];
/** A user as create_user and update_user answer it; `UserWithKasms` as get_user and get_users do. */
export type User = components['schemas']['User'];
export type UserWithKasms = components['schemas']['UserWithKasms'];
export type Group = components['schemas']['Group'];
/** An installed workspace (`memory` in MB). */
export type Image = components['schemas']['Image'];
/** A session (Kasm's `kasm`); `UserKasm` as a user's `kasms[]` lists it. */
export type Kasm = components['schemas']['Kasm'];
export type UserKasm = components['schemas']['UserKasm'];

type PublicPath = Extract<keyof paths, `/api/public/${string}`>;
type Operation<P> = P extends `/api/public/${infer O}` ? O : never;
/** The operations, by Kasm's names (`get_users`, `create_group`…): each a `POST /api/public/<name>`. */
export type OperationName = {
  [P in PublicPath]: paths[P] extends { post: object } ? Operation<P> : never;
}[PublicPath];
type Post<O extends OperationName> = paths[`/api/public/${O}`]['post'];
/** An operation's body, without the credentials (the client adds them). */
export type OperationBody<O extends OperationName> = Omit<
  NonNullable<Post<O>['requestBody']>['content']['application/json'],
  keyof Credentials
>;
/** An operation's answer (200). */
export type OperationResult<O extends OperationName> =
  Post<O>['responses'][200]['content']['application/json'];

/**
 * What `call` answers: the 200 answer in `data`, or the `{error_message}` of a 4xx in `error` (one of
 * the two, so checking `error` narrows `data`, as openapi-fetch's own results do).
 */
export type CallResult<O extends OperationName> =
  | { data: OperationResult<O>; error?: never; response: Response }
  | { data?: never; error: KasmError; response: Response };

export interface WorkspaceClientOptions extends Credentials {
  /** The service's origin, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** Another fetch (tests, a proxy); the global one by default. */
  fetch?: Fetch;
}

export interface WorkspaceClient extends Client<paths> {
  /**
   * `POST /api/public/<operation>` with the client's credentials in the body, typed by the document:
   * `data` the 200 answer, `error` the `{error_message}` of a 4xx.
   */
  call<O extends OperationName>(operation: O, body?: OperationBody<O>): Promise<CallResult<O>>;
}

/**
 * Adds the key pair the way Kasm's API reads it: `api_key` and `api_key_secret` in every JSON body
 * (an operation's own, which may name other credentials, wins), the `api-key`/`api-key-secret`
 * headers on the one GET (`validate_credentials`).
 */
async function withCredentials(request: Request, credentials: Credentials): Promise<Request> {
  if (request.method === 'GET' || request.method === 'HEAD') {
    const headers = new Headers(request.headers);
    if (!headers.has('api-key')) headers.set('api-key', credentials.api_key);
    if (!headers.has('api-key-secret')) headers.set('api-key-secret', credentials.api_key_secret);
    return new Request(request, { headers });
  }
  const text = await request.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    return new Request(request, { body: text }); // not JSON: sent as it was
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return new Request(request, { body: text });
  const headers = new Headers(request.headers);
  headers.set('content-type', 'application/json');
  return new Request(request, { headers, body: JSON.stringify({ ...credentials, ...body }) });
}

export function createWorkspaceClient(options: WorkspaceClientOptions): WorkspaceClient {
  const inner: Fetch = options.fetch ?? ((request) => fetch(request));
  const credentials: Credentials = { api_key: options.api_key, api_key_secret: options.api_key_secret };
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: async (request) => inner(await withCredentials(request, credentials)),
  });
  const call: WorkspaceClient['call'] = (operation, body) =>
    // One generic path for every operation: the signature above types each by its name.
    (client.POST as (path: string, init: { body: unknown }) => ReturnType<WorkspaceClient['call']>)(
      `/api/public/${operation}`,
      { body: body ?? {} },
    );
  return Object.assign(client, { call });
}
