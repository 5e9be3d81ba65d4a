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

/** An address the provider gave, and whether it says it verified it. */
export interface ProviderAddress {
  email: string;
  verified: boolean;
}

/** A user's email is at most 120 characters (the column's size): a longer one cannot log in. */
const usableEmail = (value: unknown): value is string =>
  typeof value === 'string' && value.includes('@') && value.length <= 120;

/** A verified flag is a JSON `true`; some providers (AWS Cognito) send the string "true". */
const isTrue = (value: unknown) => value === true || value === 'true';

/**
 * The user's address from the provider's user-info endpoint, with the provider's verified flag
 * (the property `email_verified_field` names). An object: its `email` (Google, OpenID Connect and
 * most providers). A list of addresses (GitHub's /user/emails): the primary one if verified, else
 * any verified one; when none is verified, the primary (else first) one, as unverified. Undefined
 * when the provider names no usable address or cannot be asked.
 */
export async function fetchAddress(
  provider: OAuth2Provider,
  accessToken: string,
): Promise<ProviderAddress | undefined> {
  try {
    const response = await fetch(provider.userinfo_url, {
      headers: { accept: 'application/json', authorization: `Bearer ${accessToken}` },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (response.status !== 200) return undefined;
    const body = (await response.json()) as unknown;
    const entries = (Array.isArray(body) ? body : [body])
      .filter((e): e is Record<string, unknown> => !!e && typeof e === 'object' && usableEmail(e.email))
      .map((e) => ({
        email: e.email as string,
        verified: isTrue(e[provider.email_verified_field]),
        primary: e.primary === true,
      }));
    const verified = entries.filter((e) => e.verified);
    const chosen =
      verified.find((e) => e.primary) ?? verified[0] ?? entries.find((e) => e.primary) ?? entries[0];
    return chosen && { email: chosen.email, verified: chosen.verified };
  } catch {
    return undefined;
  }
}
