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
 * The services' event streams (Server-Sent Events): microblog-api's `GET /api/microblog/events`,
 * social-api's `GET /api/events/posts` and `/api/events/feed`. A request whose path starts with one
 * of these goes to the service's stream backend (`<service>.streams`).
 */
export const EVENT_STREAM_PATHS = ['/api/microblog/events', '/api/events/'] as const;

/** The stream backend of a service (its own servers, tracking the service's replicas' health). */
export const streamBackend = (service: string) => `${service}.streams`;

/**
 * How long a stream may stay silent before HAProxy cuts it. The services send a comment line every
 * 15 s (EVENTS_HEARTBEAT_MS, at most 50 s), so a stream is never silent that long while its replica
 * lives: the hour only bounds a stream whose replica hangs without failing its health checks (one
 * that fails them has its streams shut at once: `on-marked-down shutdown-sessions`).
 */
export const STREAM_IDLE_TIMEOUT = '1h';

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
 *
 * Event streams (EVENT_STREAM_PATHS) go to a backend of their own over the same replicas:
 * - `balance leastconn`: a stream is a connection held for minutes or hours, so each new one goes to
 *   the replica holding the fewest (round robin would pile them on a replica that came back from a
 *   restart last, or keep them uneven after one replica's clients all reconnect elsewhere at once);
 * - `timeout server` of STREAM_IDLE_TIMEOUT: an SSE response is an HTTP response that never ends, and
 *   HAProxy 2.6 applies `timeout server` to it, not `timeout tunnel` (checked: a stream silent for
 *   longer than `timeout server` was cut with `timeout tunnel 1h` set; `timeout client` did not cut a
 *   stream whose client was reading). `timeout tunnel` is set too, for a connection upgraded to
 *   WebSocket, the only kind it applies to;
 * - `option http-server-close` stays: it closes the connection to the replica after a response
 *   ends, and a stream's response ends only when the replica ends it or goes away;
 * - its servers track the health of the service's (no second set of checks), and when one is marked
 *   down its streams are shut at once (`on-marked-down shutdown-sessions`), so their clients
 *   reconnect, with their last event id, to a live replica instead of waiting on one that cannot
 *   answer; a draining replica (SIGTERM, /readyz 503) hands its streams over this way too.
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
      `  acl event_stream path_beg ${EVENT_STREAM_PATHS.join(' ')}`,
      `  use_backend ${streamBackend(service.name)} if event_stream`,
      `  default_backend ${service.name}`,
      '',
      `backend ${service.name}`,
      '  balance roundrobin',
      `  http-response set-header ${REPLICA_HEADER} %s`,
      ...service.replicas.map((r) => `  server ${r.name} 127.0.0.1:${r.port}`),
      '',
      `backend ${streamBackend(service.name)}`,
      '  balance leastconn',
      `  timeout server ${STREAM_IDLE_TIMEOUT}`,
      `  timeout tunnel ${STREAM_IDLE_TIMEOUT}`,
      `  http-response set-header ${REPLICA_HEADER} %s`,
      ...service.replicas.map(
        (r) =>
          `  server ${r.name} 127.0.0.1:${r.port} no-check track ${service.name}/${r.name} on-marked-down shutdown-sessions`,
      ),
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

/** One replica as the stream backend of its service sees it. */
export interface StreamServerStats {
  service: string;
  replica: string;
  status: string;
  /** Streams open through HAProxy to it now, and since HAProxy started. */
  open: number;
  opened: number;
}

/** The servers' rows of HAProxy's CSV statistics, each a function of a column's name. */
async function serverRows(statsUrl: string): Promise<((column: string) => string)[]> {
  const response = await fetch(`${statsUrl};csv`);
  if (!response.ok) throw new Error(`HAProxy statistics answered ${response.status}`);
  const [header, ...rows] = (await response.text()).trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  return rows
    .map((line) => {
      const row = line.split(',');
      return (name: string) => row[columns.indexOf(name)] ?? '';
    })
    .filter((at) => !['FRONTEND', 'BACKEND'].includes(at('svname')) && at('pxname') !== 'stats');
}

const isStreamBackend = (pxname: string) => pxname.endsWith(streamBackend(''));

/** The replicas' state and counters from HAProxy's CSV statistics (the request backends). */
export async function readStats(statsUrl: string): Promise<ServerStats[]> {
  return (await serverRows(statsUrl))
    .filter((at) => !isStreamBackend(at('pxname')))
    .map((at) => ({
      service: at('pxname'),
      replica: at('svname'),
      status: at('status'),
      requests: Number(at('stot')),
      retries: Number(at('wretr')),
      redispatches: Number(at('wredis')),
    }));
}

/** The streams each replica holds, from HAProxy's CSV statistics (the stream backends). */
export async function readStreamStats(statsUrl: string): Promise<StreamServerStats[]> {
  return (await serverRows(statsUrl))
    .filter((at) => isStreamBackend(at('pxname')))
    .map((at) => ({
      service: at('pxname').slice(0, -streamBackend('').length),
      replica: at('svname'),
      status: at('status'),
      open: Number(at('scur')),
      opened: Number(at('stot')),
    }));
}
