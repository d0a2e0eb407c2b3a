import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startFakeS3, type FakeS3 } from "../services/apps/test/support/fake-s3.ts";
import { buildCounterApp, publishFolder } from "./support/app-folder.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// The whole publish → serve → delete path with files in an S3-compatible store (a local fake that checks
// every request's SigV4 signature), instead of the default folder.

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

for (const mode of EMBEDDED_MODES) {
  describe(`apps with an S3 file store (${mode})`, () => {
    let s3: FakeS3;
    let hatch: TestHatch;
    let client: Client;

    beforeAll(async () => {
      s3 = startFakeS3();
      hatch = await startTestHatch(mode, {
        serviceEnv: {
          S3_BUCKET: s3.bucket,
          S3_ENDPOINT: s3.endpoint,
          S3_REGION: s3.region,
          S3_ACCESS_KEY_ID: s3.accessKeyId,
          S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        },
      });
      ({ client } = await connectFormClient(hatch, (await userWithToken(hatch)).accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      })));
    }, 60_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
      await s3?.stop();
    });

    test("published files land in the bucket, are served from it, and leave it on delete", async () => {
      const folder = await buildCounterApp("S3 Counter");
      const published = await publishFolder(client, folder, { name: "S3 Counter", visibility: "public" });
      expect(published.uploads).toBe(folder.size);
      for (const bytes of folder.values()) {
        const key = `blobs/${sha256(bytes).slice(0, 2)}/${sha256(bytes)}`;
        expect(s3.objects.get(key)).toEqual(bytes);
      }
      const page = await fetch(published.url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("S3 Counter");
      const script = [...folder.keys()].find((p) => p.endsWith(".js"))!;
      const asset = await fetch(`${published.url}${script}`);
      expect(asset.status).toBe(200);
      expect(new Uint8Array(await asset.arrayBuffer())).toEqual(folder.get(script)!);

      // The owner's client can show forms; it confirms the delete, and every file leaves the bucket.
      expect(await callOk(client, "delete_tool", { address: published.address })).toMatchObject({ status: "deleted" });
      expect([...s3.objects.keys()]).toEqual([]);
      expect((await fetch(published.url)).status).toBe(404);
    });
  });
}
