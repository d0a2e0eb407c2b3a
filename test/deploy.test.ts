import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from "@hatch/platform";
import { loadDomainsConfig } from "../services/domains/src/config.ts";
import { eventually } from "./support/eventually.ts";
import { freePort } from "./support/servers.ts";

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
  ports?: string[];
  volumes?: string[];
}

const compose = Bun.YAML.parse(await Bun.file(join(ROOT, "compose.yaml")).text()) as {
  services: Record<string, ComposeService>;
};
const services = compose.services;

test("compose runs the gateway and every service from its own folder with `bun run start`", () => {
  for (const name of ["gateway", "orgs", "apps", "domains", "billing"]) {
    const service = services[name]!;
    const folder = name === "gateway" ? "gateway" : `services/${name}`;
    expect(service.working_dir).toBe(`/app/${folder}`);
    expect(service.command).toEqual(["bun", "run", "start"]);
    expect(existsSync(join(ROOT, folder, "src/main.ts"))).toBe(true);
    for (const key of ["NATS_URL", "DATABASE_URL", "HATCH_SECRET", "NATS_PASSWORD"])
      expect(service.environment?.[key]).toBeTruthy();
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
      ...Object.fromEntries(
        ["GATEWAY", "APPS", "DOMAINS", "BILLING", "ORGS"].map((name) => [`NATS_${name}_PASSWORD`, "z".repeat(16)]),
      ),
    },
    stderr: "pipe",
  });
  const stderr = await new Response(check.stderr).text();
  expect(stderr).toBe("");
  expect(await check.exited).toBe(0);
});

/** A compose value as the container sees it with nothing set by the operator: `${X:-default}` → default. */
function withDefaults(environment: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environment).map(([key, value]) => [
      key,
      value
        .replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, "$1")
        .replace(/\$\{[A-Z0-9_]+:\?[^}]*\}/g, "set-by-the-operator-".padEnd(40, "x")),
    ]),
  );
}

test("the domains service runs several copies, each serving the edge's TLS ask on the port the Caddyfile asks", async () => {
  const domains = services.domains!;
  expect(domains.deploy?.replicas).toBeGreaterThanOrEqual(2);
  // Copies cannot share a published host port: the edge reaches them on the compose network only.
  expect(domains.ports).toBeUndefined();
  const env = domains.environment!;
  expect(env.DOMAINS_HTTP_HOST).toBe("0.0.0.0");
  expect(env.EDGE_TLS_ADDRESS).toBe("edge:443");
  // Every setting compose passes is one the service accepts, with the operator's variables left unset.
  const config = loadDomainsConfig(withDefaults(env));
  expect(config.httpPort).toBe(Number(env.DOMAINS_HTTP_PORT));
  expect(config.httpHost).toBe("0.0.0.0");
  expect(config.edgeTlsAddress).toEqual({ host: "edge", port: 443 });
  expect(config.registrar.kind).toBe("simulated");
  expect(config.dnsServers).toEqual([]);
  expect(config.edgeCnameTarget).toBe("edge.apps.localhost");
  // Its health is the ask listener answering; the edge waits on it.
  expect(JSON.stringify(domains.healthcheck)).toContain(`127.0.0.1:${env.DOMAINS_HTTP_PORT}/tls/ask`);
  expect(services.edge?.depends_on?.domains?.condition).toBe("service_healthy");

  const caddyfile = await Bun.file(join(ROOT, "deploy/Caddyfile")).text();
  expect(caddyfile).toContain(`ask http://domains:${env.DOMAINS_HTTP_PORT}/tls/ask`);
  expect(caddyfile).toMatch(/https:\/\/ \{\s*tls \{\s*on_demand\s*\}\s*reverse_proxy apps:3001\s*\}/);
});

test("the edge publishes HTTPS and keeps its certificates in a volume", () => {
  const edge = services.edge!;
  expect(edge.ports).toEqual(expect.arrayContaining(["80:80", "443:443"]));
  expect(edge.volumes).toEqual(expect.arrayContaining(["edge-data:/data"]));
});

test("caddy adapts the Caddyfile: HTTP routing of the apps domain and the gateway, on-demand TLS asking the domains service", async () => {
  if (!Bun.which("caddy")) {
    process.stderr.write(
      "deploy.test: caddy is not installed; skipping the `caddy adapt` check of deploy/Caddyfile.\n",
    );
    return;
  }
  const port = services.domains!.environment!.DOMAINS_HTTP_PORT;
  const adapt = Bun.spawn(["caddy", "adapt", "--config", "deploy/Caddyfile", "--adapter", "caddyfile"], {
    cwd: ROOT,
    env: { ...process.env, APPS_DOMAIN: "apps.example.net" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([new Response(adapt.stdout).text(), new Response(adapt.stderr).text()]);
  expect(await adapt.exited, stderr).toBe(0);
  const config = JSON.parse(stdout) as {
    apps: {
      http: {
        servers: Record<string, { listen: string[]; routes: unknown[]; automatic_https?: { disable?: boolean } }>;
      };
      tls: {
        automation: {
          policies: Array<{ on_demand?: boolean; subjects?: string[] }>;
          on_demand: { ask?: string; permission?: { endpoint?: string } };
        };
      };
    };
  };
  // Caddy 2.6 writes `ask`; 2.8 (compose's image) writes the same as an http permission module.
  const onDemand = config.apps.tls.automation.on_demand;
  expect(onDemand.ask ?? onDemand.permission?.endpoint).toBe(`http://domains:${port}/tls/ask`);
  expect(config.apps.tls.automation.policies.some((policy) => policy.on_demand === true && !policy.subjects)).toBe(
    true,
  );

  const servers = Object.values(config.apps.http.servers);
  const https = servers.find((server) => server.listen.includes(":443"));
  const http = servers.find((server) => server.listen.includes(":80"));
  expect(https, "a server on :443").toBeDefined();
  expect(https!.automatic_https?.disable).not.toBe(true);
  expect(JSON.stringify(https!.routes)).toContain('"dial":"apps:3001"');
  expect(JSON.stringify(https!.routes)).not.toContain("gateway:3000");
  expect(http, "a server on :80").toBeDefined();
  const plain = JSON.stringify(http!.routes);
  // Version previews (`v<N>--<address>.<apps domain>`) are app host origins too, one label below the apps domain like
  // an app's: the one wildcard matches both (and the one wildcard certificate covers both).
  expect(plain).toContain('"host":["apps.example.net","*.apps.example.net"]');
  expect(plain).toContain('"dial":"apps:3001"');
  expect(plain).toContain('"dial":"gateway:3000"');
});

test("a process trusts X-Forwarded-For only when the edge is the one way in", () => {
  for (const [name, service] of Object.entries(services)) {
    if (service.environment?.TRUST_PROXY !== "true") continue;
    expect(
      service.ports,
      `${name} trusts X-Forwarded-For, so it must not be reachable around the edge`,
    ).toBeUndefined();
  }
  // The app host is behind the edge alone: without trusting it, every anonymous viewer would be the edge's address.
  expect(services.apps?.environment?.TRUST_PROXY).toBe("true");
  // The gateway's copies are behind the edge too (issue 25): no published port, so it reads the edge's header.
  expect(services.gateway?.ports).toBeUndefined();
  expect(services.gateway?.environment?.TRUST_PROXY).toBe("true");
});

test("the edge's X-Forwarded-For ends with the address it saw, whatever the client sent", async () => {
  if (!Bun.which("caddy")) {
    process.stderr.write("deploy.test: caddy is not installed; skipping the X-Forwarded-For check.\n");
    return;
  }
  // Trusting the header's last entry (TRUST_PROXY) is safe only if Caddy, as deploy/Caddyfile configures it (no
  // trusted_proxies), puts the connection's address there rather than passing on a forged one.
  expect(await Bun.file(join(ROOT, "deploy/Caddyfile")).text()).not.toContain("trusted_proxies");
  const upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => new Response(request.headers.get("x-forwarded-for") ?? ""),
  });
  const dir = mkdtempSync(join(tmpdir(), "hatch-edge-"));
  const port = freePort();
  writeFileSync(
    join(dir, "Caddyfile"),
    `{\n\tadmin off\n\tauto_https off\n\tstorage file_system ${join(dir, "data")}\n}\n:${port} {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
  );
  const caddy = Bun.spawn(["caddy", "run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    const seen = await eventually(
      () =>
        fetch(`http://127.0.0.1:${port}/`, { headers: { "X-Forwarded-For": "203.0.113.9, 198.51.100.7" } })
          .then((response) => response.text())
          .catch(() => undefined),
      "caddy to answer",
    );
    expect(seen.split(",").at(-1)?.trim()).toBe("127.0.0.1");
    expect(seen).not.toContain("198.51.100.7");
  } finally {
    caddy.kill();
    await caddy.exited;
    await upstream.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

test("compose runs NATS as a 3-node JetStream cluster and two gateway copies behind the edge", () => {
  const nodes = ["nats", "nats-2", "nats-3"];
  const names = new Set<string>();
  for (const node of nodes) {
    const command = services[node]?.command ?? [];
    expect(command).toContain("/etc/nats/nats-auth.conf");
    expect(command).toContain("-js");
    const flag = (name: string) => command[command.indexOf(name) + 1];
    expect(flag("--cluster_name")).toBe("hatch");
    expect(flag("--routes")).toBe(nodes.map((n) => `nats://${n}:6222`).join(","));
    names.add(flag("--server_name")!);
    // Each node keeps its own JetStream data.
    expect(services[node]?.volumes?.[0]).toMatch(/^nats-data(-\d)?:\/data$/);
  }
  expect(names.size).toBe(3);
  expect(new Set(nodes.map((n) => services[n]?.volumes?.[0])).size).toBe(3);
  for (const name of ["gateway", "orgs", "apps", "domains", "billing"]) {
    expect(services[name]?.environment?.NATS_REPLICAS).toBe("3");
    for (const node of nodes) expect(services[name]?.depends_on?.[node]?.condition).toBe("service_healthy");
  }
  const gateway = services.gateway!;
  expect(gateway.deploy?.replicas).toBeGreaterThanOrEqual(2);
  expect(gateway.ports).toBeUndefined();
  expect(gateway.environment?.TRUST_PROXY).toBe("true");
  expect(services.edge?.depends_on?.gateway?.condition).toBe("service_healthy");
});
