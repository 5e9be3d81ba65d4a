import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

/** One balanced service: a frontend port and its replicas' ports, all on 127.0.0.1. */
export interface BalancedService {
  name: string;
  port: number;
  replicas: { name: string; port: number }[];
}

/** The response header naming the replica that answered (HAProxy's server name). */
export const REPLICA_HEADER = 'x-replica';

/** How often HAProxy checks a replica's /readyz, and how many answers change its state. */
export const HEALTH_CHECK = { intervalMs: 1000, fastIntervalMs: 250, fall: 2, rise: 2 } as const;

/**
 * Per client address (the TCP source: HAProxy is the edge here), counted in one stick table per
 * service. A flood from one address meets the balancer, not the service: HAProxy answers it itself,
 * so the replicas spend nothing on it and other addresses keep their share.
 * The defaults are far above what a classroom behind one school router needs. Connections: a browser
 * keeps at most 6 HTTP/1.1 connections per host (an EventSource counts among them), so 30 browsers
 * hold at most 180; 500 leaves room for a second class behind the same address and stays an eighth
 * of `maxconn`. Requests: a panel clicked through as fast as a person can is a few requests a second;
 * 30 of them loading at once is a few hundred in the first second. 3,000 per 10 s (300 a second
 * sustained) is twice a room of 30 all clicking non-stop, while one script that never pauses (~4,600
 * a second here) meets it within a second.
 */
export const ADDRESS_LIMITS = {
  /** Requests per address in `windowSeconds` (sliding); above it, 429 from HAProxy. */
  requests: 3000,
  windowSeconds: 10,
  /** Open connections per address; a connection beyond it is closed at once (before any request). */
  connections: 500,
} as const;

export type AddressLimits = { requests: number; windowSeconds: number; connections: number };

/**
 * The body and headers of HAProxy's own 429: the shape Fastify answers errors in, with Retry-After
 * (the window: a client that stops flooding is counted back under the limit within it).
 */
export function throttledBody(limits: AddressLimits): string {
  return JSON.stringify({
    statusCode: 429,
    error: 'Too Many Requests',
    message: `Too many requests from your address; try again in ${limits.windowSeconds} seconds.`,
  });
}

/**
 * The HAProxy configuration of `services`: one frontend per service, round-robin over its replicas,
 * each checked on /readyz. Failed connections are retried (on another replica: `option redispatch 1`);
 * a GET or HEAD is also retried when a replica dies or drains under it (empty response, 503 from a
 * closing server, timeout), other methods only when the request could not be sent at all: a POST
 * whose answer was lost may have been applied, and replaying it would apply it twice.
 * Each request opens its own connection to a replica (`http-server-close`; keep-alive stays on the
 * client side): a replica that stopped listening then refuses the connection, which is retried on
 * another replica even for a POST, whereas an idle kept-alive connection that the replica closes
 * while shutting down races with a request sent on it, which could then not be replayed safely.
 * X-Forwarded-For is set from the connecting client (one a client sends is dropped), so a service
 * trusting this proxy sees the real client address, and rate limits count per client.
 * Each frontend limits every client address (ADDRESS_LIMITS): requests per window answered 429 by
 * HAProxy itself, connections beyond the cap rejected before a request is read.
 */
export function haproxyConfig(
  services: BalancedService[],
  statsPort: number,
  limits: AddressLimits = ADDRESS_LIMITS,
): string {
  const check = HEALTH_CHECK;
  // HAProxy's `string` argument is one word: its quotes are the config's, so none may be inside.
  const body = throttledBody(limits).replace(/'/g, '');
  const lines = [
    'global',
    '  maxconn 4096',
    '',
    'defaults',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout http-request 15s',
    '  timeout queue 5s',
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response response-timeout 503',
    '  option forwardfor',
    '  option http-server-close',
    '  option httpchk',
    '  http-check send meth GET uri /readyz',
    '  http-check expect status 200',
    `  default-server check inter ${check.intervalMs} fastinter ${check.fastIntervalMs} downinter ${check.intervalMs} fall ${check.fall} rise ${check.rise}`,
    '',
  ];
  for (const service of services) {
    lines.push(
      `frontend ${service.name}`,
      `  bind 127.0.0.1:${service.port}`,
      // One entry per client address: its open connections and its request rate over the window;
      // an address idle for two windows is forgotten. 100k entries take a few MB.
      `  stick-table type ip size 100k expire ${limits.windowSeconds * 2}s store conn_cur,http_req_rate(${limits.windowSeconds}s)`,
      '  tcp-request connection track-sc0 src',
      `  tcp-request connection reject if { sc_conn_cur(0) gt ${limits.connections} }`,
      `  http-request return status 429 content-type application/json hdr retry-after ${limits.windowSeconds} string '${body}' if { sc_http_req_rate(0) gt ${limits.requests} }`,
      '  http-request del-header x-forwarded-for',
      '  http-request disable-l7-retry unless METH_GET',
      `  default_backend ${service.name}`,
      '',
      `backend ${service.name}`,
      '  balance roundrobin',
      `  http-response set-header ${REPLICA_HEADER} %s`,
      ...service.replicas.map((r) => `  server ${r.name} 127.0.0.1:${r.port}`),
      '',
    );
  }
  lines.push('listen stats', `  bind 127.0.0.1:${statsPort}`, '  stats enable', '  stats uri /', '');
  return lines.join('\n');
}

/** The HAProxy binary: `HAPROXY_BIN`, else `haproxy` on the PATH; a clear error when there is none. */
export function haproxyBinary(env: NodeJS.ProcessEnv = process.env): string {
  const binary = env.HAPROXY_BIN || 'haproxy';
  const probe = spawnSync(binary, ['-v'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `HAProxy not found (${binary}): install Debian's package (\`apt-get install -y haproxy\`) or set HAPROXY_BIN`,
    );
  }
  return binary;
}

/** Validates `configFile` (`haproxy -c`), then starts HAProxy in the foreground on it. */
export function startHaproxy(binary: string, configFile: string): ChildProcess {
  const checked = spawnSync(binary, ['-c', '-q', '-f', configFile], { encoding: 'utf8' });
  if (checked.status !== 0)
    throw new Error(`invalid HAProxy configuration:\n${checked.stderr}${checked.stdout}`);
  // -db: stay in the foreground, no daemon; its own process group, so a terminal's Ctrl-C reaches only
  // the launcher, which stops everything in order.
  return spawn(binary, ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
}

/** One replica as HAProxy's statistics see it. */
export interface ServerStats {
  service: string;
  replica: string;
  /** `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `MAINT`, … */
  status: string;
  /** Requests (sessions) it was given. */
  requests: number;
  /** Times a request to it was retried, and redispatched to another replica. */
  retries: number;
  redispatches: number;
}

/** The replicas' state and counters from HAProxy's CSV statistics. */
export async function readStats(statsUrl: string): Promise<ServerStats[]> {
  const response = await fetch(`${statsUrl};csv`);
  if (!response.ok) throw new Error(`HAProxy statistics answered ${response.status}`);
  const [header, ...rows] = (await response.text()).trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const at = (row: string[], name: string) => row[columns.indexOf(name)] ?? '';
  return rows
    .map((line) => line.split(','))
    .filter((row) => !['FRONTEND', 'BACKEND'].includes(at(row, 'svname')) && at(row, 'pxname') !== 'stats')
    .map((row) => ({
      service: at(row, 'pxname'),
      replica: at(row, 'svname'),
      status: at(row, 'status'),
      requests: Number(at(row, 'stot')),
      retries: Number(at(row, 'wretr')),
      redispatches: Number(at(row, 'wredis')),
    }));
}
