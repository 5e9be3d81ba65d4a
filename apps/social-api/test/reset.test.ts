import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { SMTPServer } from 'smtp-server';
import { randomBytes } from 'node:crypto';
import { migrateToLatest } from '@platform/db';
import { freePort, testDatabase } from '@platform/db/testing';
import { childProofEnv, openForTheseTests } from '@platform/testing';
import { migrations } from '../src/db/migrations';
import { createJwt, digest, resetFingerprint } from '../src/tokens/jwt';
import { buildTestApp, type TestApp, type TestUser } from './support/app';
import { withFreshDatabase } from './support/database';

/**
 * The password reset flow end to end: the app talks SMTP to a real (in-test) mail server, the
 * test reads the mail like a user would, follows the link's token, and sets a new password.
 */

const RESET_URL = 'https://client.example.test/reset';
const SENDER = 'robot@microblog.example.test';
const RESET_MS = 15 * 60_000;

// --- a tiny MIME reader (enough for what nodemailer sends) -------------------------------------

interface MimePart {
  headers: Map<string, string>;
  body: string;
}

function splitHeaders(raw: string): MimePart {
  const at = raw.indexOf('\r\n\r\n');
  const head = at < 0 ? raw : raw.slice(0, at);
  const body = at < 0 ? '' : raw.slice(at + 4);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body };
}

function decodeQuotedPrintable(body: string): string {
  const unwrapped = body.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < unwrapped.length; i++) {
    const hex = unwrapped.slice(i + 1, i + 3);
    if (unwrapped[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(unwrapped[i], 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function decodeBody(part: MimePart): string {
  const encoding = (part.headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(part.body);
  if (encoding === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64').toString('utf8');
  return part.body;
}

/** The decoded leaf parts of a message, by content type (`text/plain`, `text/html`). */
function leafParts(part: MimePart, into = new Map<string, string>()): Map<string, string> {
  const type = part.headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    const sections = part.body.split(`--${boundary}`).slice(1);
    for (const section of sections) {
      if (section.startsWith('--')) break;
      leafParts(splitHeaders(section.replace(/^\r\n/, '')), into);
    }
  } else {
    into.set(type.split(';')[0].trim().toLowerCase(), decodeBody(part).replace(/\r\n$/, ''));
  }
  return into;
}

interface Mail {
  envelopeFrom: string;
  envelopeTo: string[];
  headers: Map<string, string>;
  text: string;
  html: string;
}

function parseMail(raw: string, envelopeFrom: string, envelopeTo: string[]): Mail {
  const message = splitHeaders(raw);
  const parts = leafParts(message);
  return {
    envelopeFrom,
    envelopeTo,
    headers: message.headers,
    text: (parts.get('text/plain') ?? '').replace(/\r\n/g, '\n'),
    html: parts.get('text/html') ?? '',
  };
}

// --- helpers ------------------------------------------------------------------------------------

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const tokenFromLink = (text: string): string => {
  const escaped = RESET_URL.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const match = new RegExp(`${escaped}\\?token=([A-Za-z0-9_.-]+)`).exec(text);
  if (!match) throw new Error(`no reset link in:\n${text}`);
  return match[1];
};

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * A reset refused for its link (invalid, expired or already used): a validation 400 whose only
 * error is on `errors.json.token` (#21: so react-microblog shows its own message instead of throwing).
 */
function expectRefusedLink(res: { statusCode: number; json(): any }) {
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ code: 400, message: 'Validation Error' });
  expect(res.json().errors).toEqual({
    json: { token: ['This reset link is invalid, expired or already used. Request a new one.'] },
  });
}

describe('password reset by email (SMTP)', () => {
  let smtp: SMTPServer;
  let mails: Mail[];
  let t: TestApp;
  let counter = 0;

  /** A user with a unique name, so mails of one test never satisfy another. */
  const newUser = (fields: Partial<Pick<TestUser, 'email' | 'password'>> = {}) => {
    counter += 1;
    const username = `reset${counter}`;
    return t.register({
      username,
      email: fields.email ?? `${username}@example.com`,
      password: fields.password ?? 'old-secret',
    });
  };
  const mailsTo = (address: string) => mails.filter((m) => m.envelopeTo.includes(address));
  const requestReset = (email: unknown) =>
    t.app.inject({ method: 'POST', url: '/api/tokens/reset', payload: { email } });
  const reset = (token: string, newPassword: string) =>
    t.app.inject({ method: 'PUT', url: '/api/tokens/reset', payload: { token, new_password: newPassword } });
  /** Asks for a reset link for `email` and returns the token of the one mail it produced. */
  const mailedToken = async (email: string, address = email) => {
    const before = mailsTo(address).length;
    expect((await requestReset(email)).statusCode).toBe(204);
    const mail = await waitFor(`a reset mail to ${address}`, () => mailsTo(address)[before]);
    return tokenFromLink(mail.text);
  };

  beforeAll(async () => {
    mails = [];
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
          mails.push(
            parseMail(
              Buffer.concat(chunks).toString('utf8'),
              from,
              session.envelope.rcptTo.map((r) => r.address),
            ),
          );
          callback();
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    const { port } = smtp.server.address() as AddressInfo;
    t = await buildTestApp({
      MAIL_SERVER: '127.0.0.1',
      MAIL_PORT: String(port),
      MAIL_DEFAULT_SENDER: SENDER,
      PASSWORD_RESET_URL: RESET_URL,
    });
  });

  afterAll(async () => {
    await t?.close();
    await new Promise<void>((r) => (smtp ? smtp.close(() => r()) : r()));
  });

  test('a known email gets exactly one mail: subject, sender, greeting, link with a JWT; the answer is an empty 204', async () => {
    const user = await newUser();
    const response = await requestReset(user.email);
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');

    const mail = await waitFor('the reset mail', () => mailsTo(user.email)[0]);
    expect(mail.envelopeTo).toEqual([user.email]);
    expect(mail.envelopeFrom).toBe(SENDER);
    expect(mail.headers.get('to')).toContain(user.email);
    expect(mail.headers.get('from')).toContain(SENDER);
    expect(mail.headers.get('subject')).toBe('Reset Your Password');
    expect(mail.text).toMatch(new RegExp(`^Dear ${user.username},`));
    expect(mail.text).toContain('To reset your password click on the following link:');
    expect(mail.text).toContain('The Microblog Team');
    const token = tokenFromLink(mail.text);
    expect(token).toMatch(JWT_SHAPE);
    expect(mail.text).toContain(`${RESET_URL}?token=${token}\n`);
    // The HTML alternative greets and links too (the link's `?` survives HTML escaping unchanged).
    expect(mail.html).toContain(`Dear ${user.username},`);
    expect(mail.html).toContain(`href="${RESET_URL}?token=${token}"`);

    // Give a duplicate every chance to show up: a later mail to someone else arrives first.
    const other = await newUser();
    await mailedToken(other.email);
    expect(mailsTo(user.email)).toHaveLength(1);
  });

  test('the email lookup ignores case; the mail goes to the stored address', async () => {
    // (nodemailer lower-cases domains, so the stored address keeps its case in the local part.)
    const user = await newUser({ email: `Mixed.Case${counter + 1}@example.com` });
    const token = await mailedToken(user.email.toUpperCase(), user.email);
    expect(token).toMatch(JWT_SHAPE);
    expect(mailsTo(user.email)).toHaveLength(1);
    expect(mailsTo(user.email.toUpperCase())).toHaveLength(0);
  });

  test('an unknown email: 204 and no mail', async () => {
    const unknown = 'nobody-here@example.com';
    const response = await requestReset(unknown);
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    // A mail sent after it arrives, and a little more time passes: still nothing for the unknown address.
    const sentinel = await newUser();
    await mailedToken(sentinel.email);
    await new Promise((r) => setTimeout(r, 300));
    expect(mailsTo(unknown)).toHaveLength(0);
  });

  test('request validation: an invalid email, a missing one, an unknown field', async () => {
    const invalid = await requestReset('not-an-email');
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toMatchObject({
      code: 400,
      message: 'Validation Error',
      errors: { json: { email: ['Not a valid email address.'] } },
    });

    const missing = await t.app.inject({ method: 'POST', url: '/api/tokens/reset', payload: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.json.email).toEqual(['Missing data for required field.']);

    const extra = await t.app.inject({
      method: 'POST',
      url: '/api/tokens/reset',
      payload: { email: 'a@example.com', username: 'x' },
    });
    expect(extra.statusCode).toBe(400);
    expect(extra.json().errors.json.username).toEqual(['Unknown field.']);
  });

  test('the mailed token sets a new password: old one 401, new one 200; the link works once', async () => {
    const user = await newUser({ password: 'old-secret' });
    const token = await mailedToken(user.email);

    const done = await reset(token, 'new-secret');
    expect(done.statusCode).toBe(204);
    expect(done.body).toBe('');
    expect((await t.login(user.username, 'old-secret')).statusCode).toBe(401);
    expect((await t.login(user.username, 'new-secret')).statusCode).toBe(200);

    expectRefusedLink(await reset(token, 'third-secret'));
    expect((await t.login(user.username, 'new-secret')).statusCode).toBe(200);
    expect((await t.login(user.username, 'third-secret')).statusCode).toBe(401);
  });

  test('after a reset, the access tokens the user had before stop working', async () => {
    const user = await newUser();
    expect((await t.as(user.token, { url: '/api/me' })).statusCode).toBe(200);
    const token = await mailedToken(user.email);
    expect((await reset(token, 'brand-new')).statusCode).toBe(204);

    const stale = await t.as(user.token, { url: '/api/me' });
    expect(stale.statusCode).toBe(401);
    const fresh = (await t.login(user.username, 'brand-new')).json().access_token as string;
    expect((await t.as(fresh, { url: '/api/me' })).json().username).toBe(user.username);
  });

  test('a garbage token, or one signed with another SECRET_KEY: 400 on errors.json.token, nothing changes', async () => {
    const user = await newUser({ password: 'keep-me' });
    expectRefusedLink(await reset('this-is-not-a-token', 'changed'));

    // Everything right (email, fingerprint of the current password, expiry) except the key.
    const row = await t.storedUser(user.id);
    const forged = createJwt('some-other-secret').resetToken(
      user.email,
      resetFingerprint(row),
      new Date(t.clock.now().getTime() + RESET_MS),
    );
    expectRefusedLink(await reset(forged, 'changed'));

    // The same token made with the app's own key would have worked: the key is what failed.
    const genuine = createJwt(t.app.secretKey.current()).resetToken(
      user.email,
      resetFingerprint(row),
      new Date(t.clock.now().getTime() + RESET_MS),
    );
    expect(genuine.split('.').slice(0, 2)).toEqual(forged.split('.').slice(0, 2));
    expect((await t.login(user.username, 'keep-me')).statusCode).toBe(200);
    expect((await t.login(user.username, 'changed')).statusCode).toBe(401);
  });

  test("SECRET_KEY alone forges no reset link, not even for a user without a password: the old scheme's fingerprint, or one without the user's own secret, is refused; the mailed link works, once", async () => {
    const withPassword = await newUser({ password: 'keep-me' });
    const bystander = await t.storedUser((await newUser()).id);
    counter += 1;
    const passwordless = { username: `forged${counter}`, email: `forged${counter}@example.com` };
    await t.database.db
      .insertInto('users')
      .values({ ...passwordless, password_hash: null })
      .execute();

    // The attacker knows the key (here the app's own) and, for the passwordless user, the whole
    // of what the fingerprint used to be made of.
    const jwt = createJwt(t.app.secretKey.current());
    const expires = () => new Date(t.clock.now().getTime() + RESET_MS);
    const oldScheme = (hash: string | null) => digest(`pw:${hash ?? ''}`).slice(0, 22);
    for (const email of [withPassword.email, passwordless.email]) {
      const row = await t.database.db
        .selectFrom('users')
        .selectAll()
        .where('email', '=', email)
        .executeTakeFirstOrThrow();
      for (const fingerprint of [
        oldScheme(row.password_hash),
        resetFingerprint({ password_hash: row.password_hash, reset_secret: '' }),
        // Another user's secret (one the attacker got) does not open this account either.
        resetFingerprint({ password_hash: row.password_hash, reset_secret: bystander.reset_secret }),
      ]) {
        const refused = await reset(jwt.resetToken(email, fingerprint, expires()), 'forged-password');
        expect(refused.statusCode).toBe(400);
      }
    }
    expect((await t.login(withPassword.username, 'forged-password')).statusCode).toBe(401);
    expect((await t.login(passwordless.username, 'forged-password')).statusCode).toBe(401);

    // The genuine links still work, once each.
    for (const { username, email } of [withPassword, passwordless]) {
      const token = await mailedToken(email);
      expect((await reset(token, 'real-password')).statusCode).toBe(204);
      expect((await t.login(username, 'real-password')).statusCode).toBe(200);
      expect((await reset(token, 'again-password')).statusCode).toBe(400);
    }
  });

  test('every user gets a random reset secret of their own at creation, and a new one whenever the password changes (not when other fields do)', async () => {
    const [a, b] = [await newUser({ password: 'first-pw' }), await newUser()];
    const secretOf = async (id: number) => (await t.storedUser(id)).reset_secret;
    const first = await secretOf(a.id);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(await secretOf(b.id)).toMatch(/^[0-9a-f]{64}$/);
    expect(await secretOf(b.id)).not.toBe(first);

    const put = (payload: Record<string, unknown>) =>
      t.as(a.token, { method: 'PUT', url: '/api/me', payload });
    expect((await put({ about_me: 'hello' })).statusCode).toBe(200);
    expect(await secretOf(a.id)).toBe(first);

    // A link asked for before a password change is dead after it, and the secret is a new one.
    const token = await mailedToken(a.email);
    expect((await put({ password: 'second-pw', old_password: 'first-pw' })).statusCode).toBe(200);
    const second = await secretOf(a.id);
    expect(second).toMatch(/^[0-9a-f]{64}$/);
    expect(second).not.toBe(first);
    expect((await reset(token, 'by-old-link')).statusCode).toBe(400);

    // A reset draws a new one too.
    expect((await reset(await mailedToken(a.email), 'third-pw')).statusCode).toBe(204);
    expect(await secretOf(a.id)).not.toBe(second);
  });

  test('reset validation: a new password shorter than 3, missing fields', async () => {
    const user = await newUser({ password: 'keep-me' });
    const token = await mailedToken(user.email);
    const short = await reset(token, 'ab');
    expect(short.statusCode).toBe(400);
    expect(short.json()).toMatchObject({
      message: 'Validation Error',
      errors: { json: { new_password: ['Shorter than minimum length 3.'] } },
    });

    const missing = await t.app.inject({ method: 'PUT', url: '/api/tokens/reset', payload: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.json).toEqual({
      token: ['Missing data for required field.'],
      new_password: ['Missing data for required field.'],
    });

    // The refused attempts did not use up the link.
    expect((await reset(token, 'abc')).statusCode).toBe(204);
    expect((await t.login(user.username, 'abc')).statusCode).toBe(200);
  });

  test('a user without a password (OAuth2 or fake) sets one through the reset flow', async () => {
    counter += 1;
    const username = `nopass${counter}`;
    const email = `${username}@example.com`;
    await t.database.db.insertInto('users').values({ username, email, password_hash: null }).execute();
    expect((await t.login(username, 'anything')).statusCode).toBe(401);

    const token = await mailedToken(email);
    expect((await reset(token, 'first-password')).statusCode).toBe(204);
    const login = await t.login(username, 'first-password');
    expect(login.statusCode).toBe(200);
    const me = await t.as(login.json().access_token, { url: '/api/me' });
    expect(me.json()).toMatchObject({ username, has_password: true });
    // The link stopped working once a password exists.
    expect((await reset(token, 'second-password')).statusCode).toBe(400);
    expect(await t.countRows('users', (q) => q.where('email', '=', email))).toBe(1);
  });

  test('a token expires after RESET_TOKEN_MINUTES (15): 400 one second past, 204 one second before', async () => {
    const late = await newUser({ password: 'keep-me' });
    const lateToken = await mailedToken(late.email);
    const early = await newUser({ password: 'keep-me' });
    const earlyToken = await mailedToken(early.email);

    t.clock.advance(RESET_MS - 5_000);
    expect((await reset(earlyToken, 'in-time')).statusCode).toBe(204);

    t.clock.advance(6_000);
    expectRefusedLink(await reset(lateToken, 'too-late'));
    expect((await t.login(late.username, 'keep-me')).statusCode).toBe(200);
    expect((await t.login(early.username, 'in-time')).statusCode).toBe(200);
  });

  // Last: it stops the mail server.
  test('a mail server that is down fails neither the request nor the app', async () => {
    const user = await newUser({ password: 'keep-me' });
    const crashes: unknown[] = [];
    const onCrash = (reason: unknown) => crashes.push(reason);
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtException', onCrash);
    try {
      await new Promise<void>((r) => smtp.close(() => r()));
      const response = await requestReset(user.email);
      expect(response.statusCode).toBe(204);
      expect(response.body).toBe('');
      // The refused connection fails within milliseconds; give it time to surface, if it ever would.
      await new Promise((r) => setTimeout(r, 300));
      expect((await requestReset(user.email)).statusCode).toBe(204);
      expect((await t.login(user.username, 'keep-me')).statusCode).toBe(200);
      expect((await t.app.inject('/readyz')).statusCode).toBe(200);
      expect(crashes).toEqual([]);
    } finally {
      process.off('unhandledRejection', onCrash);
      process.off('uncaughtException', onCrash);
    }
  });
});

/** The real service (`src/main.ts`) in a child process with a fresh schema, its JSON log lines collected. */
async function startService(mode: 'development' | 'production') {
  const repoRoot = resolve(__dirname, '..', '..', '..');
  const lines: Record<string, unknown>[] = [];
  const port = await freePort();
  const fresh = testDatabase('social');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...childProofEnv(),
    NODE_ENV: mode,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    PASSWORD_RESET_URL: RESET_URL,
    ARGON2_MEMORY_KIB: '1024',
    ARGON2_TIME_COST: '1',
    DATABASE_URL: fresh.config.url,
    DB_SCHEMA: fresh.config.schema,
    // Random: a secret written in the repository is public, and production refuses it.
    ...(mode === 'production' ? { SECRET_KEY: randomBytes(32).toString('hex') } : {}),
  };
  const child = spawn(
    process.execPath,
    ['--conditions=@platform/source', '--import', 'tsx', 'apps/social-api/src/main.ts'],
    { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      lines.push({ unparsed: line });
    }
  });
  const base = `http://127.0.0.1:${port}`;
  const exited = () =>
    child.exitCode !== null ? `the service exited (${child.exitCode}): ${stderr}` : undefined;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    await fresh.cleanup();
  };
  try {
    await waitFor(
      'the service to listen',
      () => {
        const failed = exited();
        if (failed) throw new Error(failed);
        return lines.find((l) => typeof l.msg === 'string' && l.msg.includes(`Server listening at ${base}`));
      },
      45_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { base, lines, exited, close: stop };
}

/** A request with a JSON body to the service at `base`. */
const sendJson = (base: string, method: 'POST' | 'PUT', path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/**
 * Registers `username` (address `<username>@example.com`, password `old-secret`) through the service
 * at `base`, expecting 201: their id.
 */
async function registerOn(base: string, username: string): Promise<number> {
  const created = await sendJson(base, 'POST', '/api/users', {
    username,
    email: `${username}@example.com`,
    password: 'old-secret',
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: number }).id;
}

describe('password reset without MAIL_SERVER (the real service, mails to the log)', () => {
  const service = openForTheseTests(() => startService('development'), 90_000);

  test('the reset mail (with a working link) is written to the log as JSON', async () => {
    const { base, lines, exited } = service();

    await registerOn(base, 'logged');

    const response = await sendJson(base, 'POST', '/api/tokens/reset', { email: 'Logged@Example.com' });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');

    const entry = await waitFor('the mail in the log', () => lines.find((l) => l.mail !== undefined));
    const mail = entry.mail as { from: string; to: string; subject: string; text: string };
    expect(entry.level).toBe(30);
    expect(mail).toMatchObject({
      from: 'donotreply@microblog.example.com',
      to: 'logged@example.com',
      subject: 'Reset Your Password',
    });
    expect(mail.text).toMatch(/^Dear logged,/);
    const token = tokenFromLink(mail.text);
    expect(token).toMatch(JWT_SHAPE);

    const done = await sendJson(base, 'PUT', '/api/tokens/reset', { token, new_password: 'from-the-log' });
    expect(done.status).toBe(204);
    const login = await fetch(`${base}/api/tokens`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('logged:from-the-log').toString('base64')}` },
    });
    expect(login.status).toBe(200);

    // An unknown address logs no mail.
    const before = lines.filter((l) => l.mail !== undefined).length;
    expect((await sendJson(base, 'POST', '/api/tokens/reset', { email: 'ghost@example.com' })).status).toBe(
      204,
    );
    const later = await sendJson(base, 'POST', '/api/tokens/reset', { email: 'logged@example.com' });
    expect(later.status).toBe(204);
    await waitFor('the second logged mail', () =>
      lines.filter((l) => l.mail !== undefined).length > before ? true : undefined,
    );
    const logged = lines.filter((l) => l.mail !== undefined).map((l) => (l.mail as { to: string }).to);
    expect(logged).toEqual(['logged@example.com', 'logged@example.com']);
    expect(exited()).toBeUndefined();
  }, 90_000);
});

describe('password reset without MAIL_SERVER in production (the real service)', () => {
  const service = openForTheseTests(() => startService('production'), 90_000);

  test('neither the link nor the token is logged: a warning names the user id only', async () => {
    const { base, lines, exited } = service();
    const id = await registerOn(base, 'prod');

    const response = await sendJson(base, 'POST', '/api/tokens/reset', { email: 'prod@example.com' });
    expect(response.status).toBe(204);

    const warning = await waitFor('the warning', () =>
      lines.find((l) => typeof l.msg === 'string' && l.msg.includes('reset mail is not configured')),
    );
    expect(warning).toMatchObject({ level: 40, userId: id });
    // Give a mail every chance to show up, then check that nothing secret did.
    await new Promise((r) => setTimeout(r, 300));
    const everything = JSON.stringify(lines);
    expect(everything).not.toContain('token=');
    expect(everything).not.toContain(RESET_URL);
    expect(everything).not.toContain('prod@example.com');
    expect(lines.filter((l) => l.mail !== undefined)).toEqual([]);
    expect(exited()).toBeUndefined();
  }, 90_000);
});

describe('the reset-secret migration on existing users', () => {
  test('every existing user gets a random secret of their own, and no address counts as proven', async () => {
    await withFreshDatabase(async (database) => {
      const names = Object.keys(migrations);
      const mine = names.indexOf('2026-11-28T1200_user_reset_secret_email_verified');
      expect(mine).toBeGreaterThan(0);
      const before = Object.fromEntries(names.slice(0, mine).map((n) => [n, migrations[n]]));
      await migrateToLatest(database.db, database.schema, before);
      // Rows as the service wrote them before: with a password, and without one (OAuth2, fake).
      for (let i = 0; i < 20; i++)
        await database.db
          .insertInto('users')
          .values({
            username: `old${i}`,
            email: `old${i}@example.com`,
            password_hash: i % 2 ? null : `hash-${randomBytes(4).toString('hex')}`,
          } as never)
          .execute();
      await migrateToLatest(database.db, database.schema, migrations);
      const rows = await database.db.selectFrom('users').select(['reset_secret', 'email_verified']).execute();
      expect(rows).toHaveLength(20);
      for (const row of rows) {
        expect(row.reset_secret).toMatch(/^[0-9a-f]{64}$/);
        expect(row.email_verified).toBe(false);
      }
      expect(new Set(rows.map((r) => r.reset_secret)).size).toBe(20);
    });
  });
});
