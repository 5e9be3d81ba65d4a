// Runs N replicas of every built service behind HAProxy, on one PostgreSQL, with rate limits shared
// through Redis; prints the balancer's address of each service. Ctrl-C (or SIGTERM) stops HAProxy,
// then every replica gracefully, then the local PostgreSQL server (when this started it).
//
//   node --conditions=@platform/source --import tsx tools/replicas/src/run.ts --replicas=3 [--services=a,b]
import { parseArgs } from 'node:util';
import { allServices, startReplicas, type ReplicaSet } from './replicas';

const usage = `usage: run.ts [--replicas=N] [--services=name,name] [--redis=URL]
  --replicas   replicas of each service (default 2)
  --services   apps to run (default: every app: ${allServices().join(', ')})
  --redis      Redis of the shared rate limits (default: REDIS_URL, else redis://127.0.0.1:6379/0)
Needs the services built (npx nx run-many -t build) and HAProxy (apt-get install -y haproxy).
PostgreSQL: DATABASE_URL, else the repository's local server (as npm start).`;

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '2' },
    services: { type: 'string' },
    redis: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const replicas = Number(values.replicas);
if (!Number.isInteger(replicas) || replicas < 1 || replicas > 16) {
  console.error(`--replicas must be an integer 1..16\n${usage}`);
  process.exit(2);
}
const known = allServices();
const services = values.services ? values.services.split(',').map((s) => s.trim()) : known;
const unknown = services.filter((s) => !known.includes(s));
if (unknown.length) {
  console.error(`unknown service: ${unknown.join(', ')} (apps: ${known.join(', ')})`);
  process.exit(2);
}

const colours = [36, 35, 33, 32, 34, 31];
const labels = new Map<string, string>();
const label = (source: string) => {
  let text = labels.get(source);
  if (!text) {
    const index = services.indexOf(source.split('/')[0]);
    const colour = index === -1 ? 90 : colours[index % colours.length];
    text = `\x1b[${colour}m${source.padEnd(22)}\x1b[0m │ `;
    labels.set(source, text);
  }
  return text;
};
const say = (line: string) => process.stdout.write(`${label('replicas')}${line}\n`);

let set: ReplicaSet | undefined;
let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  say('stopping: HAProxy, then every replica gracefully');
  await set?.stop();
  say('stopped');
  process.exit(code);
}
// The replicas and HAProxy run in process groups of their own: a terminal's Ctrl-C reaches this
// launcher only, and it stops them in order.
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

async function main() {
  say(`starting ${replicas} replica(s) of ${services.join(', ')}`);
  try {
    set = await startReplicas({
      services,
      replicas,
      redisUrl: values.redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0',
      // Warnings and errors only unless LOG_LEVEL says otherwise: at info, every health check of every
      // replica (one a second) would be a log entry.
      env: { LOG_FORMAT: 'pretty', LOG_LEVEL: process.env.LOG_LEVEL || 'warn' },
      onOutput: (source, line) => process.stdout.write(`${label(source)}${line}\n`),
    });
  } catch (error) {
    console.error(`${label('replicas')}${(error as Error).message}`);
    process.exit(1);
  }
  for (const service of set.services) {
    const ports = service.replicas.map((r) => `${r.name}=${r.port}`).join(' ');
    say(`${service.name.padEnd(14)} ${service.url}  (replicas: ${ports})`);
    for (const replica of service.replicas) {
      void replica.exited.then(({ code, signal }) => {
        if (!stopping)
          say(`${service.name}/${replica.name} exited (${signal ?? code}); HAProxy routes around it`);
      });
    }
  }
  say(`HAProxy statistics: ${set.statsUrl}  — Ctrl-C stops everything`);
  set.haproxy.once('exit', (code, signal) => {
    if (stopping) return;
    say(`HAProxy exited (${signal ?? code}); stopping`);
    void shutdown(1);
  });
}

void main();
