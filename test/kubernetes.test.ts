import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { loadDomainsConfig } from "../services/domains/src/config.ts";

// deploy/kubernetes rendered by `kubectl kustomize` (offline) and every object checked against the Kubernetes API
// schemas that kubernetes-models ships (types, required fields, enums), strictly: a field the schema does not have
// (a typo such as `readinesProbe`) fails too. Then what Hatch needs of it: probes, disruption budgets, autoscaling,
// a shutdown deadline under the grace period, and NATS values matching deploy/nats-auth.conf.

const ROOT = join(import.meta.dir, "..");
const K8S = join(ROOT, "deploy/kubernetes");
const PROCESSES = ["gateway", "apps", "domains", "billing", "orgs"] as const;

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
}

const kubectl = Bun.which("kubectl");
if (!kubectl) {
  if (process.env.CI) throw new Error("kubectl is missing: .ci/run installs Debian's kubernetes-client");
  process.stderr.write("kubernetes.test: kubectl is not installed; skipping the deploy/kubernetes checks.\n");
}

async function render(dir: string): Promise<K8sObject[]> {
  const run = Bun.spawn([kubectl!, "kustomize", dir], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = [
    await new Response(run.stdout).text(),
    await new Response(run.stderr).text(),
    await run.exited,
  ];
  expect(err.split("\n").filter((line) => line && !line.startsWith("# Warning:"))).toEqual([]);
  expect(code).toBe(0);
  return out
    .split(/^---$/m)
    .filter((doc) => doc.trim())
    .map((doc) => Bun.YAML.parse(doc) as K8sObject);
}

/** The schema module of an object's kind, e.g. apps/v1 Deployment → IoK8sApiAppsV1Deployment. */
async function schemaOf(object: K8sObject) {
  const [group, version] = object.apiVersion.includes("/") ? object.apiVersion.split("/") : ["core", object.apiVersion];
  const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);
  const name = `IoK8sApi${cap(group!.split(".")[0]!)}${cap(version!)}${object.kind}`;
  const module = (await import(`kubernetes-models/_schemas/${name}`)) as {
    validate: ((data: unknown) => boolean) & { errors?: unknown[] | null };
  };
  return module.validate;
}

/**
 * Validates against the schema and lists the fields it does not know: every field the validator reads is known; an
 * object whose keys it lists (a map such as labels) allows any key. What remains unread is not in the schema.
 */
async function check(object: K8sObject): Promise<{ errors: unknown[]; unknown: string[] }> {
  const validate = await schemaOf(object);
  const seen = new Map<object, { read: Set<PropertyKey>; listed: boolean; path: string }>();
  const wrap = (value: unknown, path: string): unknown => {
    if (!value || typeof value !== "object") return value;
    const info = { read: new Set<PropertyKey>(), listed: false, path };
    seen.set(value, info);
    const children = new Map<PropertyKey, unknown>();
    return new Proxy(value, {
      get(target, key, receiver) {
        info.read.add(key);
        const child = Reflect.get(target, key, receiver);
        if (typeof key !== "string" || !child || typeof child !== "object") return child;
        if (!children.has(key)) children.set(key, wrap(child, `${path}/${key}`));
        return children.get(key);
      },
      ownKeys(target) {
        info.listed = true;
        return Reflect.ownKeys(target);
      },
    });
  };
  const valid = validate(wrap(structuredClone(object), ""));
  const unknown: string[] = [];
  for (const [value, info] of seen) {
    if (info.listed || Array.isArray(value)) continue;
    for (const key of Object.keys(value)) if (!info.read.has(key)) unknown.push(`${info.path}/${key}`);
  }
  return { errors: valid ? [] : (validate.errors ?? ["invalid"]), unknown };
}

const find = (objects: K8sObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);
const configOf = (objects: K8sObject[]) =>
  objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("hatch-config"))!.data!;

describe.skipIf(!kubectl)("deploy/kubernetes", () => {
  for (const dir of ["base", "overlays/production"]) {
    test(`${dir} renders and every object is valid against the Kubernetes schemas, strictly`, async () => {
      const objects = await render(join(K8S, dir));
      expect(objects.length).toBeGreaterThan(15);
      for (const object of objects) {
        const { errors, unknown } = await check(object);
        expect({ object: `${object.kind}/${object.metadata.name}`, errors, unknown }).toEqual({
          object: `${object.kind}/${object.metadata.name}`,
          errors: [],
          unknown: [],
        });
      }
    });
  }

  test("the strict check fails on a wrong type and on a field the schema does not have", async () => {
    const [gateway] = (await render(join(K8S, "base"))).filter((o) => o.kind === "Deployment");
    const typo = structuredClone(gateway!);
    typo.spec.template.spec.containers[0].readinesProbe = typo.spec.template.spec.containers[0].readinessProbe;
    expect((await check(typo)).unknown).toEqual(["/spec/template/spec/containers/0/readinesProbe"]);
    const wrongType = structuredClone(gateway!);
    wrongType.spec.replicas = "two";
    expect((await check(wrongType)).errors.length).toBeGreaterThan(0);
  });

  test("every process: a Deployment with /readyz and /livez probes on its port, a disruption budget, a deadline under the grace period", async () => {
    const objects = await render(join(K8S, "overlays/production"));
    const config = configOf(objects);
    for (const name of [...PROCESSES, "edge"]) {
      const deployment = find(objects, "Deployment", name);
      expect(deployment, name).toBeDefined();
      expect(deployment!.metadata.namespace).toBe("hatch");
      const pdb = find(objects, "PodDisruptionBudget", name);
      expect(pdb?.spec.selector.matchLabels).toEqual(deployment!.spec.selector.matchLabels);
      expect(pdb?.spec.maxUnavailable).toBe(1);
    }
    for (const name of PROCESSES) {
      const pod = find(objects, "Deployment", name)!.spec.template.spec;
      const [container] = pod.containers;
      expect(container.image).toBe("registry.example.com/hatch:0.1.0");
      expect(container.workingDir).toBe(name === "gateway" ? "/app/gateway" : `/app/services/${name}`);
      expect(container.command).toEqual(["bun", "run", "start"]);
      expect(container.readinessProbe.httpGet.path).toBe("/readyz");
      expect(container.livenessProbe.httpGet.path).toBe("/livez");
      const port = container.ports.find((p: { name: string }) => p.name === container.readinessProbe.httpGet.port);
      expect(port?.containerPort).toBe(name === "gateway" ? 3000 : Number(config.METRICS_PORT));
      expect(container.livenessProbe.httpGet.port).toBe(container.readinessProbe.httpGet.port);
      // The preStop pause and the process's own bounded stop both end before Kubernetes kills it.
      const pause = Number(container.lifecycle.preStop.exec.command[1]) * 1000;
      expect(pause + Number(config.SHUTDOWN_TIMEOUT_MS)).toBeLessThan(pod.terminationGracePeriodSeconds * 1000);
      const env = Object.fromEntries(
        container.env.map((e: { name: string; value?: string; valueFrom?: { secretKeyRef: { key: string } } }) => [
          e.name,
          e.value ?? `secret:${e.valueFrom?.secretKeyRef.key}`,
        ]),
      );
      expect(env.NATS_USER).toBe(name);
      expect(env.NATS_PASSWORD).toBe(`secret:NATS_${name.toUpperCase()}_PASSWORD`);
      expect(env.HATCH_SECRET).toBe("secret:HATCH_SECRET");
      expect(env.DATABASE_URL).toBe("secret:DATABASE_URL");
    }
  });

  test("the gateway, apps and domains scale on load; NATS streams get 3 replicas in production; the edge alone is public", async () => {
    const objects = await render(join(K8S, "overlays/production"));
    for (const name of ["gateway", "apps", "domains"]) {
      const hpa = find(objects, "HorizontalPodAutoscaler", name);
      expect(hpa?.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name });
      expect(hpa?.spec.minReplicas).toBeGreaterThanOrEqual(2);
    }
    const config = configOf(objects);
    expect(config.NATS_REPLICAS).toBe("3");
    expect(config.APPS_PROTOCOL).toBe("https");
    expect(config.S3_BUCKET).toBeTruthy();
    expect(configOf(await render(join(K8S, "base"))).NATS_REPLICAS).toBe("1");
    const publicServices = objects.filter((o) => o.kind === "Service" && o.spec.type === "LoadBalancer");
    expect(publicServices.map((s) => s.metadata.name)).toEqual(["edge"]);
  });

  test("the edge asks the domains service before an on-demand certificate, on the port domains listens on", async () => {
    const objects = await render(join(K8S, "overlays/production"));
    const caddyfile = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("edge-caddyfile"))!.data!
      .Caddyfile!;
    expect(caddyfile).toBe(await Bun.file(join(ROOT, "deploy/Caddyfile")).text());
    const domains = find(objects, "Deployment", "domains")!.spec.template.spec.containers[0];
    const env = Object.fromEntries(
      domains.env
        .filter((e: { value?: string }) => e.value)
        .map((e: { name: string; value: string }) => [e.name, e.value]),
    );
    const settings = loadDomainsConfig({ ...configOf(objects), ...env, HATCH_SECRET: "x".repeat(40) });
    expect(caddyfile).toContain(`ask http://domains:${settings.httpPort}/tls/ask`);
    expect(find(objects, "Service", "domains")?.spec.ports[0].port).toBe(settings.httpPort);
    expect(settings.edgeTlsAddress).toEqual({ host: "edge", port: 443 });
    expect(caddyfile).toContain(`reverse_proxy apps:${find(objects, "Service", "apps")?.spec.ports[0].port}`);
    expect(caddyfile).toContain(`reverse_proxy gateway:${find(objects, "Service", "gateway")?.spec.ports[0].port}`);
  });

  test("the NATS chart values: a 3-node JetStream cluster with the users and permissions of deploy/nats-auth.conf", async () => {
    const values = Bun.YAML.parse(await Bun.file(join(K8S, "nats-values.yaml")).text()) as {
      config: {
        cluster: { enabled: boolean; replicas: number };
        jetstream: { enabled: boolean; fileStore: { pvc: { enabled: boolean } } };
        merge: {
          max_payload: string;
          authorization: {
            users: { user: string; password: string; permissions: Record<string, { allow: string[] } | boolean> }[];
          };
        };
      };
      container: { env: Record<string, { valueFrom: { secretKeyRef: { name: string; key: string } } }> };
    };
    expect(values.config.cluster).toEqual({ enabled: true, replicas: 3 });
    expect(values.config.jetstream.enabled).toBe(true);
    expect(values.config.jetstream.fileStore.pvc.enabled).toBe(true);
    expect(values.config.merge.max_payload).toBe("<< 8MB >>");
    const conf = await Bun.file(join(ROOT, "deploy/nats-auth.conf")).text();
    const fromConf = [
      ...conf.matchAll(
        /user: (\w+)\s+password: \$(\w+)\s+permissions: \{\s+publish: \{ allow: (\[.*?\]) \}\s+subscribe: \{ allow: (\[.*?\]) \}/gs,
      ),
    ].map(([, user, password, publish, subscribe]) => ({
      user: user!,
      password: `<< $${password} >>`,
      permissions: {
        publish: { allow: JSON.parse(publish!) },
        subscribe: { allow: JSON.parse(subscribe!) },
        allow_responses: true,
      },
    }));
    expect(fromConf.map((u) => u.user)).toEqual([...PROCESSES]);
    expect(values.config.merge.authorization.users).toEqual(fromConf);
    for (const name of PROCESSES) {
      const key = `NATS_${name.toUpperCase()}_PASSWORD`;
      expect(values.container.env[key]?.valueFrom.secretKeyRef).toEqual({ name: "hatch-secrets", key });
    }
  });
});
