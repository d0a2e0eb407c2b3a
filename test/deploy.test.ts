import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from "@hatch/shared";

const ROOT = join(import.meta.dir, "..");

interface ComposeService {
  image?: string;
  build?: unknown;
  working_dir?: string;
  command?: string[];
  healthcheck?: unknown;
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  environment?: Record<string, string>;
  stop_grace_period?: string;
}

const compose = Bun.YAML.parse(await Bun.file(join(ROOT, "compose.yaml")).text()) as { services: Record<string, ComposeService> };
const services = compose.services;

test("compose runs the gateway and every service from its own folder with `bun run start`", () => {
  for (const name of ["gateway", "orgs", "apps", "domains", "billing"]) {
    const service = services[name]!;
    const folder = name === "gateway" ? "gateway" : `services/${name}`;
    expect(service.working_dir).toBe(`/app/${folder}`);
    expect(service.command).toEqual(["bun", "run", "start"]);
    expect(existsSync(join(ROOT, folder, "src/main.ts"))).toBe(true);
    for (const key of ["NATS_URL", "DATABASE_URL", "HATCH_SECRET", "NATS_PASSWORD"]) expect(service.environment?.[key]).toBeTruthy();
    // Each process is its own NATS user, whose permissions deploy/nats-auth.conf sets (test/nats-permissions.test.ts).
    expect(service.environment?.NATS_USER).toBe(name);
  }
  expect(services.nats?.command).toContain("/etc/nats/nats-auth.conf");
  expect(services.domains?.deploy?.replicas).toBeGreaterThan(1);
});

test("Docker waits longer than a Hatch process's own shutdown deadline before it kills it", () => {
  for (const name of ["gateway", "orgs", "apps", "domains", "billing"]) {
    const grace = /^(\d+)s$/.exec(services[name]?.stop_grace_period ?? "");
    expect(grace, `${name}: stop_grace_period in seconds`).not.toBeNull();
    expect(Number(grace![1]) * 1000).toBeGreaterThan(DEFAULT_SHUTDOWN_TIMEOUT_MS);
  }
});

test("the apps service keeps files in the object store and the edge routes the apps domain to its app host", async () => {
  const apps = services.apps!.environment!;
  expect(apps.S3_ENDPOINT).toBe("http://objects:9000");
  expect(apps.S3_BUCKET).toBeTruthy();
  expect(apps.APP_HOST).toBe("0.0.0.0");
  expect(services.apps?.depends_on?.["objects-init"]?.condition).toBe("service_healthy");
  const caddyfile = await Bun.file(join(ROOT, "deploy/Caddyfile")).text();
  expect(caddyfile).toContain("@apps host {$APPS_DOMAIN} *.{$APPS_DOMAIN}");
  expect(caddyfile).toContain(`reverse_proxy apps:${apps.APP_PORT}`);
});

test("every dependency has a healthcheck, waits on health, and every image tag is pinned", () => {
  for (const [name, service] of Object.entries(services)) {
    for (const [dependency, how] of Object.entries(service.depends_on ?? {})) {
      expect(`${name} → ${dependency}: ${how.condition}`).toBe(`${name} → ${dependency}: service_healthy`);
      expect(services[dependency]?.healthcheck).toBeDefined();
    }
    if (service.image && !service.build) {
      expect(service.image).toMatch(/:[\w.-]+$/);
      expect(service.image).not.toMatch(/:latest$/);
    }
  }
});

test("docker-compose accepts the file (when docker-compose is installed)", async () => {
  if (!Bun.which("docker-compose")) return;
  const check = Bun.spawn(["docker-compose", "-f", "compose.yaml", "config", "-q"], {
    cwd: ROOT,
    env: {
      ...process.env,
      HATCH_SECRET: "x".repeat(32),
      S3_SECRET_ACCESS_KEY: "y".repeat(16),
      ...Object.fromEntries(["GATEWAY", "APPS", "DOMAINS", "BILLING", "ORGS"].map((name) => [`NATS_${name}_PASSWORD`, "z".repeat(16)])),
    },
    stderr: "pipe",
  });
  const stderr = await new Response(check.stderr).text();
  expect(stderr).toBe("");
  expect(await check.exited).toBe(0);
});
