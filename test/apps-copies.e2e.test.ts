import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createNatsBus, deleteEventsStream } from "@hatch/platform";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Subprocess } from "bun";
import { clusterBlobDir, startCluster, type Cluster } from "../scripts/cluster-lib.ts";
import { startFakeS3, type FakeS3 } from "../services/apps/test/support/fake-s3.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, userWithToken } from "./support/mcp.ts";
import { collect, type Output } from "./support/processes.ts";
import { freePort, freshDatabase, MODES, realServers, testBlobDir, uniqueName } from "./support/servers.ts";

// Several apps copies and their files: copies on the object store all serve what any of them published; a copy on
// its own disk that lacks the published files refuses to start, saying what to set; a file missing from the store
// answers 503 with a page that says so, never 500.

const ROOT = join(import.meta.dir, "..");
const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");
const page = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body>${title}</body></html>`;

for (const mode of MODES) {
  describe(`a published file missing from the disk store (${mode})`, () => {
    let hatch: TestHatch;
    let client: Client;
    const blobDir = testBlobDir();

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { BLOB_DIR: blobDir } });
      client = (
        await connectFormClient(hatch, (await userWithToken(hatch)).accessToken, () => ({
          action: "accept",
          content: { name: "Missing Files", visibility: "public" },
        }))
      ).client;
    }, 60_000);
    afterAll(async () => {
      await client?.close();
      await hatch?.stop();
    });

    test("answers 503 with a page that says the files are not available, not 500", async () => {
      const script = `console.log(${JSON.stringify(crypto.randomUUID())});`;
      const published = await callOk<{ url: string }>(client, "publish", {
        files: [
          { path: "index.html", content: page("Missing Files"), encoding: "utf8" },
          { path: "app.js", content: script, encoding: "utf8" },
        ],
      });
      // The file leaves this copy's disk (another copy's disk never had it: the same for this copy).
      rmSync(join(blobDir, sha256(script).slice(0, 2), sha256(script)));
      const response = await fetch(`${published.url}app.js`);
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("30");
      const text = await response.text();
      expect(text).toContain("files are not available</h1>");
      expect(text).toContain("Try again in a moment");
      // The page itself is still there.
      expect((await fetch(published.url)).status).toBe(200);
    });
  });
}

test("bun run cluster keeps files under an absolute DATA_DIR itself, not under the checkout", () => {
  expect(clusterBlobDir({ DATA_DIR: "/srv/hatch" })).toBe("/srv/hatch/blobs");
  expect(clusterBlobDir({})).toBe(join(ROOT, ".data", "blobs"));
  expect(clusterBlobDir({ DATA_DIR: "tmp/data" })).toBe(join(ROOT, "tmp/data", "blobs"));
  expect(clusterBlobDir({ DATA_DIR: "/srv/hatch", BLOB_DIR: "/mnt/files" })).toBe("/mnt/files");
});

describe.skipIf(!realServers)("apps copies as separate processes", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let s3: FakeS3;
  let cluster: Cluster;
  let client: Client;
  let childEnv: Record<string, string>;
  const busPrefix = uniqueName("copies");
  const copies: Subprocess[] = [];
  const firstPort = freePort();

  /** Another apps copy, started as services/apps/src/main.ts is; resolves once it is ready or has exited. */
  async function startCopy(
    env: Record<string, string>,
  ): Promise<{ child: Subprocess; output: Output; errors: Output; code: number | null }> {
    const child = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: join(ROOT, "services/apps"),
      env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    copies.push(child);
    const output = collect(child.stdout);
    const errors = collect(child.stderr);
    // Its output ends when it exits: then the exit code.
    const code = await output.waitFor('"msg":"service ready"').then(
      () => null,
      () => child.exited,
    );
    return { child, output, errors, code };
  }

  beforeAll(async () => {
    database = await freshDatabase(realServers!.databaseUrl);
    s3 = startFakeS3();
    const port = freePort();
    const s3Env = {
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    };
    cluster = await startCluster({
      natsUrl: realServers!.natsUrl,
      databaseUrl: database.url,
      secret: TEST_SECRET,
      busPrefix,
      port,
      appPort: firstPort,
      logLevel: "warn",
      stdout: "ignore",
      env: s3Env,
    });
    childEnv = {
      PATH: process.env.PATH ?? "",
      NATS_URL: realServers!.natsUrl,
      DATABASE_URL: database.url,
      HATCH_SECRET: TEST_SECRET,
      BUS_PREFIX: busPrefix,
      PORT: String(port),
      LOG_LEVEL: "info",
      HATCH_PARENT_PID: String(process.pid),
    };
    const hatch = { mcpUrl: `${cluster.baseUrl}/mcp` } as TestHatch;
    const admin = async (...args: string[]) => {
      const child = Bun.spawn(["bun", "run", "admin", ...args], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: database.url, HATCH_SECRET: TEST_SECRET, PORT: String(port) },
        stdout: "pipe",
        stderr: "pipe",
      });
      const stdout = await new Response(child.stdout).text();
      expect(await child.exited).toBe(0);
      return stdout;
    };
    await admin("user:create", "--email", "copies@example.com", "--password", "long enough pw", "--name", "Copies");
    const token = (await admin("token:issue", "--email", "copies@example.com")).trim().split("\n").pop()!;
    client = (
      await connectFormClient(hatch, token, () => ({
        action: "accept",
        content: { name: "Two Copies", visibility: "public" },
      }))
    ).client;
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    for (const child of copies) child.kill("SIGTERM");
    await Promise.all(copies.map((child) => child.exited));
    await cluster?.stop();
    const bus = await createNatsBus({ url: realServers!.natsUrl, prefix: busPrefix });
    await deleteEventsStream(bus).catch(() => {});
    await bus.drain();
    await s3?.stop();
    await database?.drop();
  }, 60_000);

  test("two copies on the object store both serve an app published through either", async () => {
    const secondPort = freePort();
    const second = await startCopy({
      ...childEnv,
      APP_PORT: String(secondPort),
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    expect(second.code).toBeNull();
    const script = `console.log(${JSON.stringify(crypto.randomUUID())});`;
    // The gateway's call goes to one copy of the two (one queue group): the other never saw the files arrive.
    const published = await callOk<{ address: string }>(client, "publish", {
      files: [
        { path: "index.html", content: page("Two Copies"), encoding: "utf8" },
        { path: "app.js", content: script, encoding: "utf8" },
      ],
    });
    for (const port of [firstPort, secondPort]) {
      const origin = `http://${published.address}.localhost:${port}`;
      const index = await fetch(`${origin}/`);
      expect(index.status).toBe(200);
      expect(await index.text()).toContain("Two Copies");
      const asset = await fetch(`${origin}/app.js`);
      expect(asset.status).toBe(200);
      expect(await asset.text()).toBe(script);
    }
    // Both copies cached version 1 just now; the apps event of version 2 drops it on each (no hand broadcast).
    await callOk(client, "publish", {
      address: published.address,
      files: [{ path: "index.html", content: page("Version Two"), encoding: "utf8" }],
    });
    for (const port of [firstPort, secondPort]) {
      const origin = `http://${published.address}.localhost:${port}`;
      let text = "";
      // The copy that published has dropped it before the answer; the other hears the event a moment later.
      for (let i = 0; i < 50 && !text.includes("Version Two"); i++) {
        if (i > 0) await Bun.sleep(100);
        text = await (await fetch(`${origin}/`)).text();
      }
      expect(text).toContain("Version Two");
    }
  }, 90_000);

  test("a copy on its own disk, which lacks the published files, refuses to start and says what to set", async () => {
    const third = await startCopy({ ...childEnv, APP_PORT: String(freePort()), BLOB_DIR: testBlobDir() });
    expect(third.code).toBe(2);
    await third.errors.ended;
    expect(third.errors.text).toContain("apps: Invalid configuration:");
    expect(third.errors.text).toContain("Several apps copies need the object store: set S3_BUCKET");
    expect(third.errors.text).not.toContain("    at ");
  }, 90_000);
});
