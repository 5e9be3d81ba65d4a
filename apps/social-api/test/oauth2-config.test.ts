import { loadConfig } from '../src/config';
import { usernameFor } from '../src/tokens/oauth2-flow';

/** The OAuth2 providers the configuration gives (pure: no database, no app). */

/** A provider of OAUTH2_PROVIDERS, every field given but the optional scopes. */
const CORP = {
  client_id: 'c-id',
  client_secret: 'c-secret',
  authorize_url: 'https://sso.example.test/authorize',
  access_token_url: 'https://sso.example.test/token',
  userinfo_url: 'https://sso.example.test/me',
  email_verified_field: 'email_verified',
};

describe('OAuth2 providers from the environment', () => {
  test('none by default', () => {
    expect(loadConfig({}).oauth2.providers).toEqual({});
  });

  test('github and google are on when their client ids are set, with their endpoints and scopes', () => {
    const { providers } = loadConfig({
      GITHUB_CLIENT_ID: 'gh-id',
      GITHUB_CLIENT_SECRET: 'gh-secret',
      GOOGLE_CLIENT_ID: 'g-id',
    }).oauth2;
    expect(Object.keys(providers)).toEqual(['github', 'google']);
    expect(providers.github).toEqual({
      client_id: 'gh-id',
      client_secret: 'gh-secret',
      authorize_url: 'https://github.com/login/oauth/authorize',
      access_token_url: 'https://github.com/login/oauth/access_token',
      userinfo_url: 'https://api.github.com/user/emails',
      scopes: ['user:email'],
      email_verified_field: 'verified',
    });
    expect(providers.google).toEqual({
      client_id: 'g-id',
      client_secret: '',
      authorize_url: 'https://accounts.google.com/o/oauth2/auth',
      access_token_url: 'https://accounts.google.com/o/oauth2/token',
      userinfo_url: 'https://www.googleapis.com/oauth2/v3/userinfo',
      scopes: ['https://www.googleapis.com/auth/userinfo.email'],
      email_verified_field: 'email_verified',
    });
    // A secret without its id turns nothing on.
    expect(loadConfig({ GOOGLE_CLIENT_SECRET: 'g-secret' }).oauth2.providers).toEqual({});
  });

  test('OAUTH2_PROVIDERS adds providers in the schema shape: scopes default to none, unknown keys are dropped', () => {
    const { providers } = loadConfig({
      GITHUB_CLIENT_ID: 'gh-id',
      OAUTH2_PROVIDERS: JSON.stringify({ corp: { ...CORP, note: 'not a provider field' } }),
    }).oauth2;
    expect(Object.keys(providers)).toEqual(['github', 'corp']);
    expect(providers.corp).toEqual({ ...CORP, scopes: [] });
  });

  test('a provider that names no verified flag is refused at start, saying what to set (its addresses could sign no one in)', () => {
    const { email_verified_field: _, ...unflagged } = CORP;
    expect(() => loadConfig({ OAUTH2_PROVIDERS: JSON.stringify({ corp: unflagged }) })).toThrow(
      /OAUTH2_PROVIDERS: "corp" needs "email_verified_field".*"email_verified" for OpenID Connect/,
    );
    expect(() =>
      loadConfig({ OAUTH2_PROVIDERS: JSON.stringify({ corp: { ...CORP, email_verified_field: '' } }) }),
    ).toThrow(/email_verified_field/);
    expect(
      loadConfig({
        OAUTH2_PROVIDERS: JSON.stringify({ corp: { ...CORP, email_verified_field: 'verified' } }),
      }).oauth2.providers.corp.email_verified_field,
    ).toBe('verified');
  });

  test('a bad OAUTH2_PROVIDERS is a configuration error', () => {
    expect(() => loadConfig({ OAUTH2_PROVIDERS: '{' })).toThrow(/OAUTH2_PROVIDERS: not valid JSON/);
    expect(() => loadConfig({ OAUTH2_PROVIDERS: '[]' })).toThrow(/OAUTH2_PROVIDERS: must be a JSON object/);
    expect(() => loadConfig({ OAUTH2_PROVIDERS: '{"Bad Name": {}}' })).toThrow(
      /bad provider name "Bad Name"/,
    );
    expect(() => loadConfig({ OAUTH2_PROVIDERS: '{"corp": {"client_id": "c"}}' })).toThrow(/authorize_url/);
  });
});

describe('usernameFor', () => {
  const takenOf =
    (...names: string[]) =>
    async (name: string) =>
      names.includes(name);

  test("the address's local part, shaped to the username rules", async () => {
    expect(await usernameFor('susan@example.com', takenOf())).toBe('susan');
    expect(await usernameFor('42@example.com', takenOf())).toBe('user42');
    expect(await usernameFor('al@example.com', takenOf())).toBe('aluser');
    expect(await usernameFor(`${'x'.repeat(80)}@example.com`, takenOf())).toBe('x'.repeat(60));
  });

  test('a taken name gets the first free number suffix', async () => {
    expect(await usernameFor('susan@example.com', takenOf('susan', 'susan2'))).toBe('susan3');
  });
});
