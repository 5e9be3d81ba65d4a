import { randomBytes } from 'node:crypto';
import type { Config, OAuth2Provider } from '../config';
import { NotFound, Unauthorized, UnprovenAccountEmail, UnverifiedProviderEmail } from '../errors';
import type { PublicUserRow, UsersRepository } from '../users/repository';
import { authorizeUrl, exchangeCode, fetchAddress } from './oauth2';
import type { IssuedPair, TokenService } from './service';

/** How long a browser has between the redirect to the provider and its return. */
const STATE_TTL_MS = 600_000;

export interface OAuth2FlowDependencies {
  config: Pick<Config, 'oauth2'>;
  clock: () => Date;
  users: UsersRepository;
  tokens: TokenService;
}

/** A state `spendState` accepted: what `login` needs to finish. */
export interface AcceptedState {
  name: string;
  provider: OAuth2Provider;
}

/**
 * A username for a new OAuth2 user from the address's local part, shaped to the username rules
 * (3..64 characters, a letter first); `taken` decides collisions, answered with a number suffix.
 */
export async function usernameFor(email: string, taken: (name: string) => Promise<boolean>): Promise<string> {
  let base = email.split('@')[0].slice(0, 60);
  if (!/^\p{L}/u.test(base)) base = `user${base}`.slice(0, 60);
  if ([...base].length < 3) base = `${base}user`;
  if (!(await taken(base))) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}${n}`;
    if (!(await taken(candidate))) return candidate;
  }
}

/**
 * The OAuth2 authorization-code login, in two requests: `begin` sends the browser to the provider
 * with a random state, which the browser keeps (the caller puts it in a signed cookie); when the
 * browser comes back, `spendState` checks and spends that state, and `login` exchanges the code
 * for the user's email. An unknown provider is a NotFound at either step.
 */
export function createOAuth2Flow({ config, clock, users, tokens }: OAuth2FlowDependencies) {
  // `hasOwn`: names like `constructor` are not providers.
  const providerNamed = (name: string) => {
    const provider = Object.hasOwn(config.oauth2.providers, name) ? config.oauth2.providers[name] : undefined;
    if (!provider) throw new NotFound();
    return provider;
  };
  const redirectUri = (name: string) => config.oauth2.redirectUri.replace('{provider}', name);

  /**
   * A passwordless user for a new address (proven: the provider verified it); a racing login for
   * the same address finds the winner's row.
   */
  async function createUser(email: string): Promise<Pick<PublicUserRow, 'id'>> {
    for (let attempt = 0; ; attempt++) {
      // Asked again on each attempt: a username taken meanwhile gets the next free suffix.
      const username = await usernameFor(email, (name) => users.taken('username', name));
      try {
        return await users.create({
          username,
          email,
          password_hash: null,
          email_verified: true,
          first_seen: clock(),
          last_seen: clock(),
        });
      } catch (error) {
        const existing = await users.findForOAuth2(email);
        if (existing) return accountFor(email, existing);
        if (attempt >= 3) throw error;
      }
    }
  }

  /**
   * The account an address the provider verified may sign in to. One whose address was proven (by a
   * provider, or by a reset through the mailed link) is its owner's. One never proven may have been
   * registered by someone else to capture the owner's later sign-in: with a password (which its
   * registrant knows), it is refused until its address is proven; without one (a generated user, or
   * one created by a login before providers' flags were checked) it becomes the address owner's, and
   * every session it had ends.
   */
  async function accountFor(
    email: string,
    holder: { id: number; email_verified: boolean; has_password: boolean },
  ): Promise<Pick<PublicUserRow, 'id'>> {
    if (holder.email_verified) return holder;
    if (holder.has_password || !(await users.markPasswordlessEmailVerified(holder.id, email)))
      throw new UnprovenAccountEmail();
    await tokens.revokeAll(holder.id);
    return holder;
  }

  return {
    /**
     * Where to send the browser, and the state it must keep until it returns: `savedState` is
     * `provider:expiry:state`, to be kept for `maxAgeSeconds`.
     */
    begin(name: string): { location: string; savedState: string; maxAgeSeconds: number } {
      const provider = providerNamed(name);
      const state = randomBytes(24).toString('base64url');
      return {
        location: authorizeUrl(provider, redirectUri(name), state),
        savedState: `${name}:${clock().getTime() + STATE_TTL_MS}:${state}`,
        maxAgeSeconds: STATE_TTL_MS / 1000,
      };
    },

    /**
     * Checks the state the browser kept (undefined: none, or tampered with) against the one the
     * provider gave back, and spends it: a state works once, on any instance. Undefined when refused.
     */
    async spendState(
      name: string,
      savedState: string | undefined,
      state: string,
    ): Promise<AcceptedState | undefined> {
      const provider = providerNamed(name);
      if (savedState === undefined) return undefined;
      const [savedName, savedExpiry, saved] = savedState.split(':');
      const expiry = Number(savedExpiry);
      if (savedName !== name || saved !== state || !state || !(expiry > clock().getTime())) return undefined;
      return (await tokens.spendOAuth2State(saved, new Date(expiry))) ? { name, provider } : undefined;
    },

    /**
     * Exchanges the code and asks the provider for the user's address, which must be one the
     * provider verified: the account holding it signs in (see `accountFor`), or a new one is
     * created. Unauthorized when the provider refuses either step; UnverifiedProviderEmail when it
     * does not vouch for the address (nothing is created or linked).
     */
    async login({ name, provider }: AcceptedState, code: string): Promise<IssuedPair> {
      const accessToken = await exchangeCode(provider, redirectUri(name), code);
      const address = accessToken ? await fetchAddress(provider, accessToken) : undefined;
      if (!address) throw new Unauthorized();
      if (!address.verified) throw new UnverifiedProviderEmail();
      const holder = await users.findForOAuth2(address.email);
      const user = holder ? await accountFor(address.email, holder) : await createUser(address.email);
      return tokens.login(user.id);
    },
  };
}

export type OAuth2Flow = ReturnType<typeof createOAuth2Flow>;
