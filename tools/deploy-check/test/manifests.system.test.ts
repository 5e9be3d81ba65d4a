import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  dockerfileDefaults,
  kubectl,
  modelFor,
  only,
  OVERLAYS,
  parseObjects,
  quantity,
  renderOverlay,
  ROOT,
  selects,
  SERVICES,
  validateObject,
  type K8sObject,
} from './k8s';

/**
 * The Kubernetes manifests (deploy/k8s) as `kubectl kustomize` renders each service's overlay:
 * valid against the Kubernetes schemas, and consistent with what the services really read and serve.
 * No cluster is needed.
 */

/** Exactly what an overlay deploys; a Secret is never among them (it is created outside git). */
const KINDS = [
  'ConfigMap',
  'Deployment',
  'HorizontalPodAutoscaler',
  'Ingress',
  'Job',
  'NetworkPolicy',
  'PodDisruptionBudget',
  'Service',
];

/** Where the NetworkPolicy lets each service's pods connect (port/protocol), beyond which nothing. */
const EGRESS: Record<string, string[]> = {
  // DNS, PostgreSQL, Redis.
  default: ['53/TCP', '53/UDP', '5432/TCP', '6379/TCP'],
  // And the OAuth2 providers (HTTPS) and the mail server (SMTP submission).
  'social-api': ['443/TCP', '465/TCP', '53/TCP', '53/UDP', '5432/TCP', '587/TCP', '6379/TCP'],
};

/** The ingress controller's namespace (ingress-nginx's default). */
const INGRESS_NAMESPACE = 'ingress-nginx';

interface NetworkPolicyPeer {
  namespaceSelector?: { matchLabels?: Record<string, string> };
  podSelector?: unknown;
  ipBlock?: unknown;
}
interface NetworkPolicyRule {
  from?: NetworkPolicyPeer[];
  to?: NetworkPolicyPeer[];
  ports?: { port?: number | string; protocol?: string }[];
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown> & { capabilities?: { drop?: string[]; add?: string[] } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
}
interface Probe {
  httpGet?: { path: string; port: number | string };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: Record<string, unknown> & { seccompProfile?: { type: string } };
  volumes?: { name: string; emptyDir?: unknown }[];
  restartPolicy?: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
}

const podSpec = (o: K8sObject): PodSpec => o.spec.template.spec;
const podLabels = (o: K8sObject): Record<string, string> => o.spec.template.metadata?.labels ?? {};
const mainContainer = (o: K8sObject): Container => {
  const containers = podSpec(o).containers;
  if (containers.length !== 1) throw new Error(`${o.kind} ${o.metadata.name}: expected one container`);
  return containers[0];
};

/** The service's environment schema and config loader (apps/<service>/src/config.ts). */
interface ServiceConfigModule {
  EnvSchema: { properties: Record<string, { default?: unknown }> };
  loadConfig(env: Record<string, string | undefined>): { port: number; migrateOnStart: boolean };
}
const configOf = (service: string): Promise<ServiceConfigModule> =>
  import(join(ROOT, 'apps', service, 'src', 'config'));

/** A FastifyInstance, as far as these checks use it. */
interface ServiceApp {
  inject(url: string): Promise<{ statusCode: number }>;
  close(): Promise<unknown>;
}
const appOf = (service: string): Promise<{ buildApp(config: unknown): Promise<ServiceApp> }> =>
  import(join(ROOT, 'apps', service, 'src', 'app'));

/** Stand-ins for the Secret's required keys, to load the configuration the way a pod would. */
const SECRET_SAMPLES: Record<string, string> = {
  // Nothing listens on port 1: the service starts without its database, as beside a database not up yet.
  DATABASE_URL: 'postgres://deploy-check@127.0.0.1:1/none',
  // Random per run: production refuses any value written in the repository (#21).
  SECRET_KEY: randomBytes(32).toString('hex'),
};

/** The environment a container gets: its ConfigMap (envFrom), its literal values, its secrets' samples. */
function containerEnv(objects: K8sObject[], container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.secretRef) throw new Error('envFrom a Secret hides its variable names: use secretKeyRef');
    const configMap = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === source.configMapRef?.name,
    );
    if (!configMap) throw new Error(`envFrom names a ConfigMap not rendered: ${source.configMapRef?.name}`);
    Object.assign(env, configMap.data);
  }
  for (const variable of container.env ?? []) {
    const secret = variable.valueFrom?.secretKeyRef;
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (secret && !secret.optional) {
      const sample = SECRET_SAMPLES[secret.key];
      if (sample === undefined)
        throw new Error(`give the required secret ${secret.key} a sample in SECRET_SAMPLES`);
      env[variable.name] = sample;
    }
  }
  return env;
}

/** Every variable name a container is given. */
function envNames(objects: K8sObject[], container: Container): string[] {
  const fromConfigMaps = (container.envFrom ?? []).flatMap((source) =>
    Object.keys(
      objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === source.configMapRef?.name)?.data ??
        {},
    ),
  );
  return [...fromConfigMaps, ...(container.env ?? []).map((e) => e.name)];
}

/** The container port a probe's port (a number or a port name) stands for. */
function probePort(container: Container, probe: Probe | undefined): number | undefined {
  const port = probe?.httpGet?.port;
  if (typeof port === 'number') return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/** Every file under a directory, relative to the repository root. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [relative(ROOT, path)];
  });
}

const README = readFileSync(join(ROOT, 'deploy', 'k8s', 'README.md'), 'utf8');

/** The README's shell commands that start with `prefix`, continuation lines joined. */
function readmeCommands(prefix: string): string[] {
  return README.replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith(prefix));
}

/** Shell words of a one-line command: plain words and '…' quoted ones (all the README uses). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  for (const match of command.matchAll(/(?:[^\s'"]+|'[^']*')+/g)) {
    words.push(match[0].replace(/'([^']*)'/g, '$1'));
  }
  return words;
}

describe('every service has an overlay', () => {
  test('deploy/k8s/overlays holds one overlay per app and nothing else', () => {
    const overlays = readdirSync(OVERLAYS).sort();
    expect(overlays).toEqual(SERVICES);
    expect(SERVICES).toEqual(['microblog-api', 'social-api', 'workspace-api']);
  });
});

describe('the validation itself', () => {
  test('a kind kubernetes-models has no schema for fails instead of passing', async () => {
    await expect(modelFor('example.com/v1', 'Widget')).rejects.toThrow('no Kubernetes schema');
    await expect(modelFor('apps/v1', 'DeploymentSpec')).rejects.toThrow('no Kubernetes schema');
    await expect(modelFor('apps/v1', 'Deployment')).resolves.toBeDefined();
  });

  test('an object that breaks its schema fails with the schema complaint', async () => {
    const deployment = renderOverlay('microblog-api').find((o) => o.kind === 'Deployment') as K8sObject;
    const broken = structuredClone(deployment);
    delete broken.spec.selector;
    await expect(validateObject(broken)).rejects.toThrow(/selector/);
    const wrongType = structuredClone(deployment);
    wrongType.spec.template.spec.containers[0].ports[0].containerPort = '8887';
    await expect(validateObject(wrongType)).rejects.toThrow(/containerPort must be integer/);
  });
});

describe.each(SERVICES)('%s', (service) => {
  let objects: K8sObject[];
  let deployment: K8sObject;
  let job: K8sObject;
  let server: Container;
  let migrator: Container;
  beforeAll(() => {
    objects = renderOverlay(service);
    deployment = only(objects, 'Deployment');
    job = only(objects, 'Job');
    server = mainContainer(deployment);
    migrator = mainContainer(job);
  });

  test('renders exactly the expected kinds, each valid against its Kubernetes schema', async () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(KINDS);
    for (const object of objects) await validateObject(object);
  });

  test("names: the service's own, the HPA and the PDB aim at its replicas and not at the migration pod", () => {
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler']) {
      expect(only(objects, kind).metadata.name).toBe(service);
    }
    expect(job.metadata.name).toBe(`${service}-migrate`);

    const hpa = only(objects, 'HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: service });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.maxReplicas).toBeGreaterThanOrEqual(hpa.spec.minReplicas);
    // The autoscaler owns the count: a replicas field would reset it on every apply.
    expect(deployment.spec.replicas).toBeUndefined();

    expect(selects(deployment.spec.selector.matchLabels, podLabels(deployment))).toBe(true);
    for (const selector of [
      only(objects, 'Service').spec.selector,
      only(objects, 'PodDisruptionBudget').spec.selector.matchLabels,
    ]) {
      expect(selects(selector, podLabels(deployment))).toBe(true);
      expect(selects(selector, podLabels(job))).toBe(false);
    }
    const pdb = only(objects, 'PodDisruptionBudget').spec;
    expect(pdb.maxUnavailable ?? hpa.spec.minReplicas - pdb.minAvailable).toBeLessThan(hpa.spec.minReplicas);
  });

  test("port: the service's default PORT, the Dockerfile's ENV PORT and EXPOSE, the ConfigMap's PORT", async () => {
    const { EnvSchema } = await configOf(service);
    const port = EnvSchema.properties.PORT.default;
    expect(typeof port).toBe('number');
    expect(server.ports).toEqual([{ name: 'http', containerPort: port }]);
    expect(dockerfileDefaults(service)).toEqual({ envPort: port, expose: port });
    expect(containerEnv(objects, server).PORT).toBe(String(port));
    const ports = only(objects, 'Service').spec.ports;
    expect(ports).toHaveLength(1);
    expect(ports[0].targetPort).toBe('http');
  });

  test('probes: readiness /readyz and liveness /healthz on the service port', () => {
    const port = server.ports?.[0].containerPort;
    expect(server.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(server.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(server.startupProbe?.httpGet?.path ?? '/healthz').toBe('/healthz');
    for (const probe of [server.readinessProbe, server.livenessProbe, server.startupProbe]) {
      if (probe) expect(probePort(server, probe)).toBe(port);
    }
  });

  test('every variable the manifests set is one the service reads (its EnvSchema)', async () => {
    const { EnvSchema } = await configOf(service);
    const known = Object.keys(EnvSchema.properties);
    for (const container of [server, migrator]) {
      const names = envNames(objects, container);
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((name) => !known.includes(name))).toEqual([]);
    }
  });

  test("the real service loads the manifests' configuration and answers its probes as they expect", async () => {
    const { loadConfig } = await configOf(service);
    const env = { ...containerEnv(objects, server), LOG_LEVEL: 'silent' };
    const config = loadConfig(env);
    expect(config.port).toBe(server.ports?.[0].containerPort);
    expect(config.migrateOnStart).toBe(false);
    // The Job loads the same configuration (production refuses a known or short SECRET_KEY there too).
    expect(() => loadConfig({ ...containerEnv(objects, migrator), LOG_LEVEL: 'silent' })).not.toThrow();

    const { buildApp } = await appOf(service);
    const app = await buildApp(config);
    try {
      // Its database is unreachable: alive (not to be restarted), not ready (out of the Service).
      expect((await app.inject(server.livenessProbe?.httpGet?.path as string)).statusCode).toBe(200);
      expect((await app.inject(server.readinessProbe?.httpGet?.path as string)).statusCode).toBe(503);
    } finally {
      await app.close();
    }
  });

  test("replicas never migrate; the Job runs the service's migrate command with the same image and config", () => {
    expect(server.env?.find((e) => e.name === 'MIGRATE_ON_START')?.value).toBe('false');
    expect(migrator.image).toBe(server.image);
    // By digest, never by a tag that moves (the README says how to find it).
    expect(server.image).toMatch(new RegExp(`/${service}@sha256:[0-9a-f]{64}$`));
    expect(migrator.envFrom).toEqual(server.envFrom);
    expect(migrator.env?.filter((e) => e.valueFrom)).toEqual(server.env?.filter((e) => e.valueFrom));

    // The image's CMD is `sh -c "exec node apps/$SERVICE/dist/main.js"` (ENV SERVICE set by the
    // Dockerfile); the Job runs the CLI beside it, which the app's build writes from src/cli.ts.
    expect(migrator.command).toEqual(['sh', '-c', 'exec node apps/$SERVICE/dist/cli.js migrate']);
    expect(migrator.args).toBeUndefined();
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ENV .*\bSERVICE=\$\{SERVICE\}/m);
    expect(dockerfile).toMatch(/^CMD \["sh", "-c", "exec node apps\/\$SERVICE\/dist\/main\.js"\]/m);
    const bin = JSON.parse(readFileSync(join(ROOT, 'apps', service, 'package.json'), 'utf8')).bin;
    expect(Object.values(bin)).toContain('./dist/cli.js');
    expect(existsSync(join(ROOT, 'apps', service, 'src', 'cli.ts'))).toBe(true);
    expect(readFileSync(join(ROOT, 'libs', 'http-kit', 'src', 'cli', 'commands.ts'), 'utf8')).toMatch(
      /\bmigrate: \{/,
    );

    expect(['Never', 'OnFailure']).toContain(podSpec(job).restartPolicy);
    expect(job.spec.backoffLimit).toBeGreaterThanOrEqual(1);
    expect(job.spec.completions ?? 1).toBe(1);
    expect(job.spec.parallelism ?? 1).toBe(1);
  });

  test("pods run as uid 1000 (the image's node user), read-only, no capabilities, no escalation, RuntimeDefault seccomp", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^USER node$/m);
    for (const workload of [deployment, job]) {
      const pod = podSpec(workload);
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(pod.hostNetwork || pod.hostPID || pod.hostIPC).toBeFalsy();
      expect(pod.initContainers ?? []).toEqual([]);
      for (const container of pod.containers) {
        expect(container.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(container.securityContext?.privileged).not.toBe(true);
        expect(container.securityContext?.capabilities?.add).toBeUndefined();
        expect(container.securityContext?.runAsUser ?? 1000).toBe(1000);
        // Anything writable is a pod-local emptyDir.
        for (const mount of container.volumeMounts ?? []) {
          const volume = pod.volumes?.find((v) => v.name === mount.name);
          expect(volume?.emptyDir ?? (mount.readOnly ? {} : undefined)).toBeDefined();
        }
      }
    }
  });

  test("network: default deny; in only from the ingress controller's namespace to the http port, out only to DNS, PostgreSQL, Redis", () => {
    const policy = only(objects, 'NetworkPolicy');
    expect(policy.metadata.name).toBe(service);
    expect([...policy.spec.policyTypes].sort()).toEqual(['Egress', 'Ingress']);
    // This service's pods, replicas and migration alike; never an empty selector (every pod of the namespace).
    const selector = policy.spec.podSelector.matchLabels ?? {};
    expect(selects(selector, podLabels(deployment))).toBe(true);
    expect(selects(selector, podLabels(job))).toBe(true);
    expect(policy.spec.podSelector.matchExpressions).toBeUndefined();

    const ingress = policy.spec.ingress as NetworkPolicyRule[];
    expect(ingress).toHaveLength(1);
    expect(ingress[0].from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': INGRESS_NAMESPACE } } },
    ]);
    expect(ingress[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(server.ports?.map((p) => p.name)).toEqual(['http']);

    // Every egress rule names its ports (a rule without them would open every port); DNS only to kube-system.
    const egress = policy.spec.egress as NetworkPolicyRule[];
    expect(egress.filter((rule) => !rule.ports?.length)).toEqual([]);
    const allowed = egress.flatMap((rule) => rule.ports!.map((p) => `${p.port}/${p.protocol ?? 'TCP'}`));
    expect(allowed.sort()).toEqual(EGRESS[service] ?? EGRESS.default);
    for (const rule of egress.filter((r) => r.ports!.some((p) => p.port === 53))) {
      expect(rule.to).toEqual([
        { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
      ]);
    }
  });

  test('ingress: through ingress-nginx to the Service, limiting each client address far above a classroom', () => {
    const ingressObject = only(objects, 'Ingress');
    const service_ = only(objects, 'Service');
    expect(ingressObject.spec.ingressClassName).toBe('nginx');
    const backends = ingressObject.spec.rules.flatMap((rule: { http: { paths: { backend: unknown }[] } }) =>
      rule.http.paths.map((path) => path.backend),
    );
    expect(backends).toEqual([{ service: { name: service_.metadata.name, port: { name: 'http' } } }]);
    expect(service_.spec.ports[0].name).toBe('http');
    // ingress-nginx's per-address limits (README: why these numbers, and the 429 status setting).
    const annotations =
      (ingressObject.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const rps = Number(annotations['nginx.ingress.kubernetes.io/limit-rps']);
    const connections = Number(annotations['nginx.ingress.kubernetes.io/limit-connections']);
    // 30 browsers behind one router: at most 6 connections each, a few requests a second each.
    expect(connections).toBeGreaterThanOrEqual(30 * 6 * 2);
    expect(rps).toBeGreaterThanOrEqual(30 * 5);
    expect(README).toContain('nginx.ingress.kubernetes.io/limit-rps');
    expect(README).toContain('nginx.ingress.kubernetes.io/limit-connections');
    expect(README).toContain('limit-req-status-code');
  });

  test('ingress: event streams are neither buffered nor cut while the service keeps them alive', async () => {
    const annotations =
      (only(objects, 'Ingress').metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const { EnvSchema } = await configOf(service);
    // The longest silence of a stream: the longest heartbeat the service accepts (none: no stream).
    const heartbeat = EnvSchema.properties.EVENTS_HEARTBEAT_MS as { maximum?: number } | undefined;
    const readTimeoutMs = Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']) * 1000;
    expect(readTimeoutMs).toBeGreaterThanOrEqual(Math.max(60_000, 2 * (heartbeat?.maximum ?? 0)));
    expect(annotations['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
    expect(README).toContain('nginx.ingress.kubernetes.io/proxy-read-timeout');
  });

  test("TRUST_PROXY names the ingress controller's network: behind it each client keeps its own address", async () => {
    const { loadConfig } = await configOf(service);
    const config = loadConfig({ ...containerEnv(objects, server), LOG_LEVEL: 'silent' }) as unknown as {
      trustProxy: boolean | string;
    };
    // A network (CIDR), never `true` (anyone could name their address) nor `false` (everyone one address).
    expect(typeof config.trustProxy).toBe('string');
    const cidr = String(config.trustProxy);
    expect(cidr).toMatch(/^\d+\.\d+\.\d+\.\d+\/\d+$/);
    expect(README).toContain(`TRUST_PROXY=${cidr}`);

    // The services' own server options (the same as production): a request from a controller pod in
    // that network carries the client's address; one from elsewhere cannot claim another.
    const { serverOptions } = (await import(join(ROOT, 'libs', 'http-kit', 'src'))) as {
      serverOptions(input: { trustProxy: boolean | string; logLevel: string }): object;
    };
    const { default: fastify } = (await import('fastify')) as unknown as {
      default: (options: object) => {
        get(path: string, handler: (request: { ip: string }) => unknown): void;
        inject(options: object): Promise<{ json(): { ip: string } }>;
        close(): Promise<unknown>;
      };
    };
    const app = fastify(serverOptions({ trustProxy: config.trustProxy, logLevel: 'silent' }));
    app.get('/ip', (request) => ({ ip: request.ip }));
    try {
      const [a, b, c, d] = cidr.split('/')[0].split('.').map(Number);
      const controllerPod = `${a}.${b}.${c + 1}.${d + 7}`;
      const client = '203.0.113.7';
      const seen = async (remoteAddress: string) =>
        (await app.inject({ url: '/ip', remoteAddress, headers: { 'x-forwarded-for': client } })).json().ip;
      expect(await seen(controllerPod)).toBe(client);
      expect(await seen('192.0.2.1')).toBe('192.0.2.1');
    } finally {
      await app.close();
    }
  });

  test('every container requests and limits CPU and memory, requests within limits', () => {
    for (const container of [server, migrator]) {
      const { requests = {}, limits = {} } = container.resources ?? {};
      for (const resource of ['cpu', 'memory']) {
        expect([resource, requests[resource]]).toEqual([resource, expect.any(String)]);
        expect([resource, limits[resource]]).toEqual([resource, expect.any(String)]);
        expect(quantity(requests[resource])).toBeLessThanOrEqual(quantity(limits[resource]));
      }
    }
  });

  test('secrets: by name only, from a Secret made outside git, whose keys the README creates', () => {
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const refs = (server.env ?? []).flatMap((e) =>
      e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [],
    );
    expect(refs.map((r) => r.key)).toContain('DATABASE_URL');
    expect(new Set(refs.map((r) => r.name))).toEqual(new Set([`${service}-secrets`]));
    for (const ref of refs)
      expect(server.env?.find((e) => e.valueFrom?.secretKeyRef === ref)?.name).toBe(ref.key);
    // Nothing in ConfigMaps that belongs in the Secret.
    for (const configMap of objects.filter((o) => o.kind === 'ConfigMap')) {
      expect(Object.keys(configMap.data ?? {}).filter((k) => refs.some((r) => r.key === k))).toEqual([]);
    }

    // The README's command for this Secret runs (client-side) and makes every required key.
    const commands = readmeCommands(`kubectl create secret generic ${service}-secrets `);
    expect(commands).toHaveLength(1);
    const rendered = kubectl([...shellWords(commands[0]).slice(1), '--dry-run=client', '-o', 'yaml']);
    const [secret] = parseObjects(rendered, 'kubectl create secret');
    expect(secret.metadata.name).toBe(`${service}-secrets`);
    const required = refs.filter((r) => !r.optional).map((r) => r.key);
    expect(required.filter((key) => !(key in (secret.data ?? {})))).toEqual([]);
    const created = Object.keys(secret.data ?? {});
    expect(created.filter((key) => !refs.some((r) => r.key === key))).toEqual([]);
  });

  test('the README deploys it with the commands this test runs', () => {
    const overlay = `deploy/k8s/overlays/${service}`;
    expect(readmeCommands(`kubectl kustomize ${overlay}`)).toEqual([`kubectl kustomize ${overlay}`]);
    expect(readmeCommands(`kubectl apply -k ${overlay}`)).toEqual([`kubectl apply -k ${overlay}`]);
    expect(README).toContain(`kubectl wait --for=condition=complete --timeout=10m job/${service}-migrate`);
    expect(README).toContain(`kubectl delete job ${service}-migrate --ignore-not-found`);
  });
});

test('no secret value is committed under deploy/', () => {
  const files = filesUnder(join(ROOT, 'deploy'));
  const yamlFiles = files.filter((f) => /\.ya?ml$/.test(f));
  expect(yamlFiles.length).toBeGreaterThan(0);
  for (const file of yamlFiles) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const objects = parseObjects(text, file);
    expect([file, objects.filter((o) => o.kind === 'Secret')]).toEqual([file, []]);
    // No kustomize secretGenerator (its inputs would be files in the repository).
    expect([file, objects.some((o) => 'secretGenerator' in (o as object))]).toEqual([file, false]);
  }
  // The ConfigMaps' env files hold no key any overlay reads from its Secret.
  const secretKeys = new Set(
    SERVICES.flatMap((service) =>
      renderOverlay(service)
        .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
        .flatMap((o) => mainContainer(o).env ?? [])
        .flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.key] : [])),
    ),
  );
  expect(secretKeys.has('DATABASE_URL')).toBe(true);
  for (const file of files.filter((f) => f.endsWith('.env'))) {
    const keys = readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .filter((line) => /^\s*[A-Za-z_][A-Za-z0-9_]*=/.test(line))
      .map((line) => line.split('=')[0].trim());
    expect([file, keys.filter((k) => secretKeys.has(k))]).toEqual([file, []]);
  }
});
