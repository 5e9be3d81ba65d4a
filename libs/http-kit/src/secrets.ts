/** Shortest secret production accepts: an HS256 key (or an API secret) at least as long as its hash. */
export const MIN_PRODUCTION_SECRET_LENGTH = 32;

/**
 * Every secret-looking value written anywhere in this repository (defaults, examples in compose,
 * READMEs and manifests): public by definition, so production refuses each of them. A test in
 * tools/workspace-check scans the repository and fails while a value it finds is missing here.
 */
export const KNOWN_SECRETS: readonly string[] = [
  'top-secret!',
  'local-admin-secret-change-me-0001',
  'local-compose-secret-change-me-0123456789',
  'platform-local',
  'change-me-to-a-long-random-secret',
  'change-me-to-64-random-hex-characters-0123456789abcdef0123456789',
  'deploy-check-0123456789abcdef0123456789abcdef',
];

const KNOWN = new Set(KNOWN_SECRETS);

/** Why production must refuse this secret, or undefined when it may be used. */
export function productionSecretProblem(value: string): string | undefined {
  if (KNOWN.has(value))
    return 'this value is written in the repository, so it is public: set a random one of your own (openssl rand -hex 32)';
  if (value.length < MIN_PRODUCTION_SECRET_LENGTH)
    return `must be at least ${MIN_PRODUCTION_SECRET_LENGTH} characters in production (a random one: openssl rand -hex 32)`;
  return undefined;
}

/** Host names only the machine itself reaches. */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i;

/**
 * Why production must refuse this database URL's password, or undefined. A password production would
 * refuse as a secret is still allowed when the server is reachable only privately: on loopback, or
 * under a single-label host name (a compose service such as `postgres`, which compose does not
 * publish, or a Kubernetes service of the same namespace), where knowing it gives nothing.
 */
export function databasePasswordProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined; // not a URL (a key=value string): the driver reports what it cannot read
  }
  const password = decodeURIComponent(parsed.password);
  if (!password) return undefined;
  const host = parsed.hostname;
  if (host === '' || LOOPBACK.test(host) || /^[A-Za-z0-9_-]+$/.test(host)) return undefined;
  const problem = productionSecretProblem(password);
  return problem && `its password (server ${host} is not private): ${problem}`;
}
