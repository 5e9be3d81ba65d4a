import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const ROOT = join(__dirname, '..', '..', '..');
export const OVERLAYS = join(ROOT, 'deploy', 'k8s', 'overlays');

/** Every service: a directory under apps/ with a package.json (a fourth one needs an overlay too). */
export const SERVICES = readdirSync(join(ROOT, 'apps'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'apps', d.name, 'package.json')))
  .map((d) => d.name)
  .sort();

/** The fields of a Kubernetes object these checks read; everything else passes through. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/**
 * Runs kubectl (the `kustomize` built into it, or `create ... --dry-run=client`, neither of which
 * needs a cluster). Without kubectl the check fails and says how to get it.
 */
export function kubectl(args: string[]): string {
  const result = spawnSync('kubectl', args, { cwd: ROOT, encoding: 'utf8' });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error(
      'kubectl is not installed: these checks render the manifests with `kubectl kustomize` ' +
        '(kubectl 1.27 or newer; https://kubernetes.io/docs/tasks/tools/). CI machines have it.',
    );
  }
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`kubectl ${args.join(' ')} failed (exit ${result.status}):\n${result.stderr}`);
  }
  return result.stdout;
}

/** Every object of a multi-document YAML text; a document that does not parse is an error. */
export function parseObjects(text: string, source: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** What `kubectl kustomize deploy/k8s/overlays/<service>` renders, as objects. */
export function renderOverlay(service: string): K8sObject[] {
  const dir = `deploy/k8s/overlays/${service}`;
  return parseObjects(kubectl(['kustomize', dir]), dir);
}

interface ModelClass {
  apiVersion: string;
  kind: string;
  new (data: unknown): { validate(): void };
}

/**
 * The `kubernetes-models` class of an apiVersion and kind (`apps/v1` → `kubernetes-models/apps/v1`,
 * core `v1` → `kubernetes-models/v1`). A kind the package has no schema for is an error, not a pass.
 */
export async function modelFor(apiVersion: string, kind: string): Promise<ModelClass> {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (!/^[a-z0-9.-]*$/.test(group) || !/^v[0-9a-z]+$/.test(version)) {
    throw new Error(`not a Kubernetes apiVersion: ${apiVersion}`);
  }
  const specifier = group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`;
  let exported: Record<string, unknown>;
  try {
    exported = await import(specifier);
  } catch {
    throw new Error(`no Kubernetes schema for ${apiVersion} ${kind}: kubernetes-models has no ${specifier}`);
  }
  const model = exported[kind] as ModelClass | undefined;
  // Only top-level kinds carry their apiVersion and kind (not DeploymentSpec and the like).
  if (typeof model !== 'function' || model.kind !== kind || model.apiVersion !== apiVersion) {
    throw new Error(`no Kubernetes schema for ${apiVersion} ${kind} in kubernetes-models`);
  }
  return model;
}

/** Validates an object against its Kubernetes OpenAPI schema; throws with the schema's complaints. */
export async function validateObject(object: K8sObject): Promise<void> {
  const Model = await modelFor(object.apiVersion, object.kind);
  try {
    new Model(object).validate();
  } catch (error) {
    throw new Error(
      `${object.kind} ${object.metadata?.name}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The one object of a kind in a rendered overlay. */
export function only(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0];
}

/** True when every label of a selector is on the labels (a Service's or a PDB's pods). */
export function selects(selector: Record<string, string>, labels: Record<string, string> = {}): boolean {
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** A Kubernetes quantity in base units (cores, bytes): `100m`, `1`, `128Mi`, `1G`. */
export function quantity(text: string | number): number {
  const match = /^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(text));
  if (!match) throw new Error(`not a quantity this check knows: ${text}`);
  const factor: Record<string, number> = {
    '': 1,
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
  };
  return Number(match[1]) * factor[match[2] ?? ''];
}

/** The root Dockerfile's per-service defaults: `ENV PORT=<n>` and `EXPOSE <n>` of its `defaults-<service>` stage. */
export function dockerfileDefaults(service: string): { envPort?: number; expose?: number } {
  const stages = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split(/^FROM\s+/im);
  const stage = stages.find((s) => new RegExp(`^\\S+\\s+AS\\s+defaults-${service}\\s*$`, 'im').test(s));
  if (!stage) return {};
  const envPort = /^ENV\s+(?:.*\s)?PORT=(\d+)/im.exec(stage)?.[1];
  const expose = /^EXPOSE\s+(\d+)/im.exec(stage)?.[1];
  return { envPort: envPort ? Number(envPort) : undefined, expose: expose ? Number(expose) : undefined };
}
