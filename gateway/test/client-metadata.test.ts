import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSpecialPurposeAddress } from "@hatch/platform";
import { DEFAULT_FRESH_MS, freshForMs, MAX_FRESH_MS } from "../src/auth/client-documents.ts";
import { gatewayConfig, loadGatewayConfig } from "../src/config.ts";
import { authorizePath, createHarness, type Harness } from "./oauth-harness.ts";
import { pkcePair } from "./support.ts";
import { selfSignedCertificate } from "../../test/support/certificates.ts";

// A stranger picks the client id URL and the gateway fetches it: only globally routable addresses may be reached,
// the address checked is the address connected to, and the unsafe mode is never inferred from BASE_URL.

const REFUSED = [
  "0.0.0.0",
  "0.1.2.3",
  "10.0.0.1",
  "100.64.0.1",
  "100.127.255.254",
  "127.0.0.1",
  "127.255.255.254",
  "169.254.169.254",
  "172.16.0.1",
  "172.31.255.255",
  "192.0.0.8",
  "192.0.2.1",
  "192.88.99.1",
  "192.168.1.1",
  "198.18.0.1",
  "198.19.255.255",
  "198.51.100.7",
  "203.0.113.9",
  "224.0.0.1",
  "239.255.255.250",
  "240.0.0.1",
  "255.255.255.255",
  "::",
  "::1",
  "::ffff:127.0.0.1",
  "::ffff:7f00:1",
  "::ffff:10.1.2.3",
  "::ffff:169.254.169.254",
  "::127.0.0.1",
  "::7f00:1",
  "::8.8.8.8",
  "::ffff:0:7f00:1",
  "64:ff9b::7f00:1",
  "64:ff9b::127.0.0.1",
  "64:ff9b::a00:1",
  "64:ff9b:1::808:808",
  "100::1",
  "2001::1",
  "2001:0:4136:e378:8000:63bf:3fff:fdd2",
  "2001:10::1",
  "2001:db8::1",
  "2002:7f00:1::",
  "2002:a00:1::1",
  "2002:c0a8:101::1",
  "3fff::1",
  "5f00::1",
  "fc00::1",
  "fd12:3456::1",
  "fe80::1",
  "fe80::1%eth0",
  "febf::1",
  "fec0::1",
  "feff::1",
  "ff02::1",
  "0:0:0:0:0:ffff:7f00:1",
  "1::1",
  "4000::1",
  "not an address",
];
const ALLOWED = [
  "8.8.8.8",
  "93.184.215.14",
  "198.20.0.1",
  "2606:4700:4700::1111",
  "2a00:1450:4001::1",
  "::ffff:8.8.8.8",
  "64:ff9b::808:808",
  "2002:808:808::1",
];

describe("the address classifier", () => {
  test.each(REFUSED)("%s is refused", (address) => {
    expect(isSpecialPurposeAddress(address)).toBe(true);
  });
  test.each(ALLOWED)("%s is allowed", (address) => {
    expect(isSpecialPurposeAddress(address)).toBe(false);
  });
});

const DOCUMENT = (clientId: string) => ({
  client_id: clientId,
  client_name: "Metadata Client",
  redirect_uris: ["http://127.0.0.1:8976/callback"],
  token_endpoint_auth_method: "none",
});

async function signedIn(h: Harness) {
  await h.auth.createUser({ email: "meta@example.com", password: "correct horse battery", name: "Meta" });
  const browser = h.browser();
  await browser.signIn("meta@example.com", "correct horse battery");
  return browser;
}

describe("client ID metadata URLs in the default (safe) mode", () => {
  let h: Harness;
  const resolved: string[] = [];
  const fetched: string[] = [];
  const answers: Record<string, string[]> = {
    "private.example.test": ["93.184.215.14", "10.0.0.5"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
  };
  let browser: Awaited<ReturnType<typeof signedIn>>;
  beforeAll(async () => {
    h = await createHarness({
      allowInsecureClientMetadata: false,
      resolveHost: async (name) => {
        resolved.push(name);
        return answers[name] ?? [];
      },
      fetchClientMetadata: (async (url: string | URL | Request) => {
        fetched.push(String(url));
        return Response.json(DOCUMENT(String(url)));
      }) as typeof fetch,
    });
    browser = await signedIn(h);
  }, 60_000);
  afterAll(() => h.close());

  test.each([
    "https://[::ffff:127.0.0.1]/client.json",
    "https://[::ffff:7f00:1]/client.json",
    "https://[64:ff9b::7f00:1]/client.json",
    "https://[2002:7f00:1::]/client.json",
    "https://[::127.0.0.1]/client.json",
    "https://[fec0::1]/client.json",
    "https://[2001:0:4136:e378::1]/client.json",
    "https://198.18.0.1/client.json",
    "https://0x7f.1/client.json",
    "https://169.254.169.254/latest/meta-data",
    "https://private.example.test/client.json",
    "https://mapped.example.test/client.json",
  ])("%s is refused without being fetched", async (clientId) => {
    const response = await browser.get(authorizePath(clientId, pkcePair().challenge));
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("private or special-purpose address");
    expect(fetched).toEqual([]);
  });

  test("a name that does not resolve is refused", async () => {
    const response = await browser.get(authorizePath("https://nowhere.example.test/client.json", pkcePair().challenge));
    expect(await response.text()).toContain("does not resolve");
  });
});

describe("DNS rebinding: the checked address is the one connected to", () => {
  let dir = "";
  let server: ReturnType<typeof Bun.serve>;
  let ca = "";
  const seen: Array<{ host: string | null }> = [];
  beforeAll(() => {
    // A TLS server whose certificate is only valid for meta.example.test: a fetch to its address passes the
    // certificate check only when the name is sent as the TLS server name.
    dir = mkdtempSync(join(tmpdir(), "hatch-cimd-"));
    const made = selfSignedCertificate(dir, "meta", "meta.example.test", ["DNS:meta.example.test"]);
    ca = made.cert;
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      tls: { cert: ca, key: made.key },
      fetch(request) {
        seen.push({ host: request.headers.get("host") });
        return Response.json(DOCUMENT(`https://meta.example.test:${server.port}/client.json`));
      },
    });
  });
  afterAll(() => {
    server.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  test("the second answer of the resolver (loopback) is never used; the fetch goes to the first, checked one", async () => {
    const PUBLIC = "93.184.215.14";
    let lookups = 0;
    const calls: Array<{ url: string; host: string | null; serverName: string | undefined }> = [];
    const h = await createHarness({
      allowInsecureClientMetadata: false,
      // A rebinding name: public on the first lookup (the check), loopback after.
      resolveHost: async () => (lookups++ === 0 ? [PUBLIC] : ["127.0.0.1"]),
      // The real fetch; only the route to the public address leads to the local test server, and the test CA is trusted.
      fetchClientMetadata: (async (
        url: string | URL | Request,
        init?: RequestInit & { tls?: { serverName?: string } },
      ) => {
        calls.push({
          url: String(url),
          host: new Headers(init?.headers).get("host"),
          serverName: init?.tls?.serverName,
        });
        const routed = String(url).replace(`https://${PUBLIC}:`, "https://127.0.0.1:");
        if (routed === String(url)) throw new Error("the fetch was not made to the checked address");
        return fetch(routed, { ...init, tls: { ...init?.tls, ca } });
      }) as typeof fetch,
    });
    try {
      const browser = await signedIn(h);
      const clientId = `https://meta.example.test:${server.port}/client.json`;
      const response = await browser.get(authorizePath(clientId, pkcePair().challenge));
      expect(await response.text()).toContain("Metadata Client");
      expect(response.status).toBe(200);
      expect(lookups).toBe(1);
      expect(calls).toEqual([
        {
          url: `https://${PUBLIC}:${server.port}/client.json`,
          host: `meta.example.test:${server.port}`,
          serverName: "meta.example.test",
        },
      ]);
      expect(seen.at(-1)).toEqual({ host: `meta.example.test:${server.port}` });
    } finally {
      await h.close();
    }
  });
});

describe("how long a fetched document is kept (its HTTP caching)", () => {
  const NOW = Date.parse("2026-01-01T12:00:00Z");
  test.each([
    [{}, DEFAULT_FRESH_MS],
    [{ "cache-control": "max-age=60" }, 60_000],
    [{ "cache-control": "public, max-age=60, s-maxage=10" }, 10_000],
    [{ "cache-control": 'max-age="60"' }, 60_000],
    [{ "cache-control": "max-age=60", age: "45" }, 15_000],
    [{ "cache-control": "max-age=60", age: "90" }, 0],
    [{ "cache-control": "max-age=soon" }, 0],
    [{ "cache-control": "max-age=600, no-store" }, 0],
    [{ "cache-control": "No-Cache" }, 0],
    [{ "cache-control": "max-age=31536000" }, MAX_FRESH_MS],
    [{ expires: "Thu, 01 Jan 2026 12:10:00 GMT", date: "Thu, 01 Jan 2026 12:00:00 GMT" }, 600_000],
    [{ expires: "Thu, 01 Jan 2026 12:01:00 GMT" }, 60_000],
    [{ expires: "0" }, 0],
    [{ "cache-control": "max-age=30", expires: "Thu, 01 Jan 2026 13:00:00 GMT" }, 30_000],
  ])("%j: %d ms", (headers, ms) => {
    expect(freshForMs(new Headers(headers as Record<string, string>), NOW)).toBe(ms);
  });

  test("a cached document is fetched again once its max-age has passed, on this copy's clock", async () => {
    let fetches = 0;
    const h = await createHarness({
      fetchClientMetadata: (async (url: string | URL | Request) => {
        fetches++;
        return Response.json(DOCUMENT(String(url)), { headers: { "cache-control": "max-age=60" } });
      }) as typeof fetch,
    });
    try {
      const browser = await signedIn(h);
      const path = authorizePath("http://docs.example.test/client.json", pkcePair().challenge);
      expect((await browser.get(path)).status).toBe(200);
      h.clock.now += 59_000;
      expect((await browser.get(path)).status).toBe(200);
      expect(fetches).toBe(1);
      h.clock.now += 2_000;
      expect((await browser.get(path)).status).toBe(200);
      expect(fetches).toBe(2);
    } finally {
      await h.close();
    }
  }, 30_000);
});

describe("the unsafe mode is an explicit setting", () => {
  test("a loopback http BASE_URL (compose's default) does not turn it on", () => {
    expect(gatewayConfig({ secret: "x".repeat(40), port: 3000 }).allowInsecureClientMetadata).toBe(false);
    expect(
      loadGatewayConfig({ HATCH_SECRET: "x".repeat(40), BASE_URL: "http://localhost:3000" })
        .allowInsecureClientMetadata,
    ).toBe(false);
    expect(
      loadGatewayConfig({ HATCH_SECRET: "x".repeat(40), BASE_URL: "http://127.0.0.1:3000" })
        .allowInsecureClientMetadata,
    ).toBe(false);
  });

  test("ALLOW_INSECURE_CLIENT_METADATA=true turns it on", () => {
    expect(
      loadGatewayConfig({ HATCH_SECRET: "x".repeat(40), ALLOW_INSECURE_CLIENT_METADATA: "true" })
        .allowInsecureClientMetadata,
    ).toBe(true);
  });
});
