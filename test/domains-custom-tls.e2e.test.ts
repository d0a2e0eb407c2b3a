import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { checkCertificate } from "../services/domains/src/dns/certificate.ts";
import { hostnames } from "../services/domains/src/db/schema.ts";
import type { DomainsService } from "../services/domains/src/service.ts";
import { startCaddy } from "./support/caddy.ts";
import { startTestDns, type TestDnsServer } from "./support/domains-dns.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, userWithToken } from "./support/mcp.ts";
import { collect, type Output } from "./support/processes.ts";
import { freePort, MODES } from "./support/servers.ts";
import { selfSignedCertificate } from "./support/certificates.ts";

// The proof with real components: an authoritative DNS server on loopback the test controls, a real Caddy with
// on-demand TLS whose `ask` is the domains service's endpoint and whose ACME CA is a real Pebble, and Hatch.
// custom_domain → the records added as a person would → domains sees them → Caddy obtains a certificate from Pebble
// → HTTPS through Caddy (Pebble's root trusted) returns the app → custom_domains says live.

const missing = ["caddy", "pebble", "openssl"].filter((tool) => !Bun.which(tool));
if (missing.length > 0)
  process.stdout.write(
    `skipping domains-custom-tls.e2e: ${missing.join(", ")} not installed (apt-get install -y caddy pebble openssl)\n`,
  );

const EDGE = "edge.tls-e2e.test";
const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

/** GET https://<hostname>:<port><path> at 127.0.0.1 with SNI and Host = hostname, trusting only `ca`. */
function httpsGet(hostname: string, port: number, ca: string, path = "/"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, servername: hostname, headers: { Host: hostname }, ca, timeout: 20_000 },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.end();
  });
}

async function waitForPort(port: number, what: string, output: Output): Promise<void> {
  await eventually(
    async () => {
      try {
        const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
        socket.end();
        return true;
      } catch {
        return false;
      }
    },
    `${what} to listen on ${port}\n${output.text}`,
    20_000,
  );
}

for (const mode of MODES) {
  describe.skipIf(missing.length > 0)(`custom domain certificates through Caddy and Pebble (${mode})`, () => {
    let dir: string;
    let dns: TestDnsServer;
    let hatch: TestHatch;
    let domains: DomainsService;
    let client: Client;
    let pebble: Subprocess<"ignore", "pipe", "pipe"> | undefined;
    let caddy: Subprocess<"ignore", "pipe", "pipe"> | undefined;
    let pebbleRoot: string;
    let caddyOut: Output;
    const httpPort = freePort();
    const httpsPort = freePort();

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "hatch-tls-e2e-"));
      dns = await startTestDns();
      dns.add(EDGE, "A", "127.0.0.1");

      // Pebble's own listener certificate (Caddy trusts it with acme_ca_root).
      const listener = selfSignedCertificate(dir, "pebble-listener", "localhost", ["DNS:localhost", "IP:127.0.0.1"]);
      const listenerCert = listener.certPath;
      const listenerKey = listener.keyPath;
      const acmePort = freePort();
      const managementPort = freePort();
      writeFileSync(
        join(dir, "pebble.json"),
        JSON.stringify({
          pebble: {
            listenAddress: `127.0.0.1:${acmePort}`,
            managementListenAddress: `127.0.0.1:${managementPort}`,
            certificate: listenerCert,
            privateKey: listenerKey,
            httpPort,
            tlsPort: httpsPort,
            ocspResponderURL: "",
            externalAccountBindingRequired: false,
          },
        }),
      );
      pebble = Bun.spawn(["pebble", "-config", join(dir, "pebble.json"), "-dnsserver", dns.address], {
        env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", PEBBLE_AUTHZREUSE: "0" },
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      });
      const pebbleOut = collect(pebble.stdout);
      collect(pebble.stderr);
      await waitForPort(managementPort, "pebble", pebbleOut);
      const listenerPem = await Bun.file(listenerCert).text();
      pebbleRoot = await (
        await fetch(`https://127.0.0.1:${managementPort}/roots/0`, { tls: { ca: listenerPem } })
      ).text();
      expect(pebbleRoot).toContain("BEGIN CERTIFICATE");
      const rootFile = join(dir, "pebble-root.pem");
      writeFileSync(rootFile, pebbleRoot);

      hatch = await startTestHatch(mode, {
        serviceEnv: {
          DNS_SERVERS: dns.address,
          DOMAINS_HTTP_PORT: "0",
          DOMAINS_RECHECK_MS: "200",
          DOMAINS_JOB_POLL_MS: "50",
          EDGE_CNAME_TARGET: EDGE,
          EDGE_TLS_ADDRESS: `127.0.0.1:${httpsPort}`,
          EDGE_CA_FILE: rootFile,
        },
      });
      domains = hatch.services.get("domains") as DomainsService;
      const appHostPort = new URL(hatch.appHostUrl).port;

      // The edge: on-demand TLS asks the domains service, obtains from Pebble, proxies to the app host.
      ({ process: caddy, output: caddyOut } = startCaddy(
        dir,
        `{
  admin off
  http_port ${httpPort}
  https_port ${httpsPort}
  skip_install_trust
  storage file_system ${join(dir, "caddy-data")}
  acme_ca https://127.0.0.1:${acmePort}/dir
  acme_ca_root ${listenerCert}
  on_demand_tls {
    ask http://127.0.0.1:${domains.http!.port}/tls/ask
  }
}

https:// {
  tls {
    on_demand
  }
  reverse_proxy 127.0.0.1:${appHostPort}
}
`,
      ));
      await waitForPort(httpsPort, "caddy", caddyOut);

      const user = await userWithToken(hatch, { name: "Tess" });
      const publisher = await connectFormClient(hatch, user.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      await callOk(publisher.client, "publish", {
        name: "Shop Front",
        visibility: "public",
        files: [{ path: "index.html", content: page("Shop Front"), encoding: "utf8" }],
      });
      await publisher.client.close();
      client = await connectClient(hatch, user.accessToken);
    }, 120_000);

    afterAll(async () => {
      await client?.close();
      caddy?.kill();
      pebble?.kill();
      await Promise.all([caddy?.exited, pebble?.exited]);
      await hatch?.stop();
      await dns?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const domainOf = async (hostname: string) =>
      (
        await callOk<{
          domains: { hostname: string; stage: string; problem: string | null; records: { status: string }[] }[];
        }>(client, "custom_domains", { address: "shop-front" })
      ).domains.find((d) => d.hostname === hostname);

    test("a hostname that is not verified gets no certificate: the ask says no", async () => {
      await callOk(client, "custom_domain", { address: "shop-front", hostname: "unproven.tls-e2e.test" });
      dns.add("unproven.tls-e2e.test", "CNAME", EDGE); // routed, but no TXT proof
      expect((await fetch(`http://127.0.0.1:${domains.http!.port}/tls/ask?domain=unproven.tls-e2e.test`)).status).toBe(
        404,
      );
      const check = await checkCertificate("unproven.tls-e2e.test", {
        address: { host: "127.0.0.1", port: httpsPort },
        caPem: pebbleRoot,
        timeoutMs: 15_000,
      });
      expect(check.ok).toBe(false);
      const stuck = await eventually(async () => {
        const d = await domainOf("unproven.tls-e2e.test");
        return d?.problem ? d : undefined;
      }, "the unproven hostname's problem");
      expect(stuck.stage).toBe("dns");
      expect(stuck.problem).toContain("The TXT record _hatch-challenge.unproven.tls-e2e.test is not there yet");
    });

    test("a wrong record gives a clear problem", async () => {
      await callOk(client, "custom_domain", { address: "shop-front", hostname: "wrong.tls-e2e.test" });
      dns.add("wrong.tls-e2e.test", "CNAME", "x.example.net");
      const stuck = await eventually(async () => {
        const d = await domainOf("wrong.tls-e2e.test");
        return d?.problem?.includes("x.example.net") ? d : undefined;
      }, "the wrong CNAME's problem");
      expect(stuck.problem).toContain(
        `the CNAME wrong.tls-e2e.test points to x.example.net, it should point to ${EDGE}`,
      );
    });

    test("records added → verified → Caddy obtains a certificate from Pebble → HTTPS serves the app → live", async () => {
      const connected = await callOk<{ domain: { records: { type: string; name: string; value: string }[] } }>(
        client,
        "custom_domain",
        { address: "shop-front", hostname: "shop.tls-e2e.test" },
      );
      const txt = connected.domain.records.find((r) => r.type === "TXT")!;
      expect(connected.domain.records.find((r) => r.type === "CNAME")).toMatchObject({ name: "shop", value: EDGE });
      // As a person would at their DNS provider:
      dns.add(`${txt.name}.tls-e2e.test`, "TXT", txt.value);
      dns.add("shop.tls-e2e.test", "CNAME", EDGE);
      const live = await eventually(
        async () => {
          const d = await domainOf("shop.tls-e2e.test");
          return d?.stage === "live" ? d : undefined;
        },
        `shop.tls-e2e.test to go live\n${caddyOut.text.slice(-3000)}`,
        90_000,
      );
      expect(live.problem).toBeNull();
      const row = (
        await domains.context.db.select().from(hostnames).where(eq(hostnames.hostname, "shop.tls-e2e.test"))
      )[0]!;
      expect(row.verifiedAt).not.toBeNull();
      expect(row.liveAt).not.toBeNull();
      const response = await httpsGet("shop.tls-e2e.test", httpsPort, pebbleRoot);
      expect(response.status).toBe(200);
      expect(response.body).toContain("<h1>Shop Front</h1>");
      const cert = await checkCertificate("shop.tls-e2e.test", {
        address: { host: "127.0.0.1", port: httpsPort },
        caPem: pebbleRoot,
      });
      expect(cert).toMatchObject({ ok: true, issuer: expect.stringContaining("Pebble") });
      // Pebble's root is not trusted by anyone else: without it the same request fails.
      await expect(httpsGet("shop.tls-e2e.test", httpsPort, "")).rejects.toThrow();
    }, 120_000);
  });
}
