import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appOrigin, previewOrigin } from "../services/apps/src/config.ts";
import { checkCertificate } from "../services/domains/src/dns/certificate.ts";
import { selfSignedCertificate } from "./support/certificates.ts";

// The certificate story of version previews (issue 27): a preview is served on `v<N>--<address>.<apps domain>`, one
// label below the apps domain like an app, so the apps domain's one wildcard certificate (`*.<apps domain>`) covers
// it and no certificate is ever obtained per version (the domains service's on-demand `ask` says no to names under
// the apps domain: test/domains-custom.e2e.test.ts). The proof: a TLS listener with such a wildcard certificate, and
// the domains service's own certificate check (the one its certificate stage runs) against it with the preview's
// hostname as SNI: trusted. The form used before (`<address>.v<N>.preview.<apps domain>`) is not, which is why it went.

const APPS_DOMAIN = "apps.preview-tls.test";
const missing = !Bun.which("openssl");
if (missing) process.stdout.write("skipping version-preview-tls: openssl is not installed\n");

describe.skipIf(missing)("a version preview is covered by the apps domain's wildcard certificate", () => {
  let dir: string;
  let server: ReturnType<typeof Bun.serve>;
  let ca: string;
  const config = { appsProtocol: "https:", appsDomain: APPS_DOMAIN } as const;
  const check = (hostname: string) =>
    checkCertificate(hostname, { address: { host: "127.0.0.1", port: server.port! }, caPem: ca, timeoutMs: 10_000 });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "hatch-preview-tls-"));
    const made = selfSignedCertificate(dir, "wildcard", `*.${APPS_DOMAIN}`, [
      `DNS:${APPS_DOMAIN}`,
      `DNS:*.${APPS_DOMAIN}`,
    ]);
    ca = made.cert;
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: made.cert, key: made.key },
      fetch: () => new Response("edge"),
    });
  });
  afterAll(() => {
    server?.stop(true);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the preview's hostname and the app's are trusted; the old two-level form was not", async () => {
    const preview = new URL(previewOrigin(config, "notes", 3)!).hostname;
    expect(preview).toBe(`v3--notes.${APPS_DOMAIN}`);
    expect(await check(preview)).toMatchObject({ ok: true });
    expect(await check(new URL(appOrigin(config, "notes")).hostname)).toMatchObject({ ok: true });
    const old = await check(`notes.v3.preview.${APPS_DOMAIN}`);
    expect(old).toMatchObject({ ok: false, problem: expect.stringContaining("ALTNAME") });
  });
});
