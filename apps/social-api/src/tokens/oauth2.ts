import type { OAuth2Provider } from '../config';

const TIMEOUT_MS = 10_000;

/** The provider's authorize URL the browser is sent to. */
export function authorizeUrl(provider: OAuth2Provider, redirectUri: string, state: string): string {
  const url = new URL(provider.authorize_url);
  url.searchParams.set('client_id', provider.client_id);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', provider.scopes.join(' '));
  url.searchParams.set('state', state);
  return url.toString();
}

/** Exchanges an authorization code for the provider's access token; undefined when it refuses. */
export async function exchangeCode(
  provider: OAuth2Provider,
  redirectUri: string,
  code: string,
): Promise<string | undefined> {
  try {
    const response = await fetch(provider.access_token_url, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: provider.client_id,
        client_secret: provider.client_secret,
        code,
        grant_type: 'authorization_code',
        redirect_uri: redirectUri,
      }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (response.status !== 200) return undefined;
    const body = (await response.json()) as { access_token?: unknown };
    return typeof body.access_token === 'string' && body.access_token ? body.access_token : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The user's email from the provider's user-info endpoint: an object's `email` (Google and most
 * providers), or the primary (else first) entry of a list of addresses (GitHub's /user/emails).
 */
export async function fetchEmail(provider: OAuth2Provider, accessToken: string): Promise<string | undefined> {
  try {
    const response = await fetch(provider.userinfo_url, {
      headers: { accept: 'application/json', authorization: `Bearer ${accessToken}` },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (response.status !== 200) return undefined;
    const body = (await response.json()) as unknown;
    const entry = Array.isArray(body) ? (body.find((e) => e && e.primary) ?? body[0]) : body;
    const email = (entry as { email?: unknown } | undefined)?.email;
    // A user's email is at most 120 characters (the column's size): a longer one cannot log in.
    return typeof email === 'string' && email.includes('@') && email.length <= 120 ? email : undefined;
  } catch {
    return undefined;
  }
}
