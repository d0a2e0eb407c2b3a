import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { and, eq, sql } from "drizzle-orm";
import { issueConfirm, type CallContext } from "@hatch/contracts";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { createS3BlobStore } from "../src/blobs/s3.ts";
import { appsTable, blobs, bucketFiles, dataUsage } from "../src/db/schema.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { deleteToolTool } from "../src/tools/delete-tool.ts";
import { startFakeS3, type FakeS3 } from "./support/fake-s3.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp, type SeededApp } from "./support/seed.ts";
import {
  expectError,
  sha256Hex,
  signInTo,
  uploaded,
  uploadTo,
  type TestViewer,
  type WireFile,
} from "./support/buckets.ts";

// Where a bucket file's bytes and counts go: size limits (declared and streamed), the app's file count and bytes,
// content stored once, and removal of content nobody uses (a file, or a whole app with delete_tool), on both stores.

const owner: TestViewer = { sub: "user-owner", email: "owner@example.com", name: "Olga", account: "acct-owner" };
const MAX = 1000;
const ALL = { read: "anyone", create: "anyone", delete: "anyone" };

for (const kind of ["disk", "s3"] as const) {
  describe(`app data: bucket storage (${kind} store)`, () => {
    let t: TestHost;
    let fake: FakeS3 | null = null;
    let app: SeededApp;
    let cookie: string;

    beforeAll(async () => {
      t = await startTestHost();
      if (kind === "s3") {
        fake = startFakeS3();
        t.ctx.blobs = createS3BlobStore({
          bucket: fake.bucket,
          endpoint: fake.endpoint,
          region: fake.region,
          accessKeyId: fake.accessKeyId,
          secretAccessKey: fake.secretAccessKey,
        });
      }
      app = await seedApp(t.ctx, {
        address: "store",
        owner: { id: owner.sub, email: owner.email },
        accountId: owner.account,
        files: { "index.html": "<h1>Store</h1>" },
        config: { buckets: { small: { ...ALL, maxFileSize: MAX }, big: ALL } },
      });
      cookie = await signInTo(t, "store", owner);
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      await fake?.stop();
    });

    /** Nothing of this content anywhere: no file row, no blobs row, not in the store. */
    async function expectNothingOf(bytes: string | Uint8Array): Promise<void> {
      const sha256 = sha256Hex(bytes);
      const rows = await t.ctx.db.select().from(bucketFiles).where(eq(bucketFiles.sha256, sha256));
      const registered = await t.ctx.db.select().from(blobs).where(eq(blobs.sha256, sha256));
      expect({ rows: rows.length, registered: registered.length, stored: await t.ctx.blobs.has(sha256) }).toEqual({
        rows: 0,
        registered: 0,
        stored: false,
      });
    }

    async function usage(appId = app.id) {
      const [row] = await t.ctx.db.select().from(dataUsage).where(eq(dataUsage.appId, appId));
      return row ? { files: row.files, fileBytes: row.fileBytes } : null;
    }

    test("a file over the bucket's maxFileSize by Content-Length is refused before its bytes are read", async () => {
      const bytes = "x".repeat(MAX + 1);
      const message = await expectError(await uploadTo(t, "store", "small", { cookie, body: bytes }), 413, "too_large");
      expect(message).toContain("This file is 1001 bytes");
      expect(message).toContain("at most 1000 bytes");
      await expectNothingOf(bytes);
      // A Content-Length of 25 MB and only three bytes sent: the answer comes without waiting for the rest.
      const head = await rawHead(
        t.port,
        `POST /_hatch/files/small?name=big HTTP/1.1\r\nHost: store.localhost:${t.port}\r\nContent-Type: text/plain\r\nContent-Length: ${DATA_LIMITS.maxFileSize}\r\n\r\nabc`,
      );
      expect(head).toStartWith("HTTP/1.1 413");
    });

    test("a streamed body without Content-Length is cut off just past the limit; nothing is kept", async () => {
      const chunk = new Uint8Array(400).fill(7);
      const finite = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 3; i++) controller.enqueue(chunk);
          controller.close();
        },
      });
      const message = await expectError(
        await uploadTo(t, "store", "small", { cookie, body: finite, type: "application/octet-stream" }),
        413,
        "too_large",
      );
      expect(message).toContain("larger than that");
      await expectNothingOf(new Uint8Array(1200).fill(7));
      // A body that never ends is answered all the same: the host stops reading it.
      const endless = new ReadableStream<Uint8Array>({
        pull: (controller) => controller.enqueue(new Uint8Array(65_536)),
      });
      await expectError(await uploadTo(t, "store", "small", { cookie, body: endless }), 413, "too_large");
      expect(await usage()).toBeNull();
    });

    test("exactly maxFileSize is accepted, streamed or not", async () => {
      const exact = new Uint8Array(MAX).fill(9);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(exact.slice(0, 600));
          controller.enqueue(exact.slice(600));
          controller.close();
        },
      });
      const streamed = await uploaded(t, "store", "small", { cookie, body: stream, type: "application/octet-stream" });
      expect(streamed.size).toBe(MAX);
      expect(new Uint8Array(await (await t.get("store", streamed.url)).arrayBuffer())).toEqual(exact);
      await removeFile(streamed);
    });

    test("the app's file count and bytes are counted with each upload and removal", async () => {
      const a = await uploaded(t, "store", "big", { cookie, body: "aaaa" });
      const b = await uploaded(t, "store", "small", { cookie, body: "bbbbbb" });
      expect(await usage()).toEqual({ files: 2, fileBytes: 10 });
      await removeFile(a);
      expect(await usage()).toEqual({ files: 1, fileBytes: 6 });
      await removeFile(b);
      expect(await usage()).toEqual({ files: 0, fileBytes: 0 });
    });

    test("an app holding the most files it may is refused, and nothing is stored", async () => {
      const full = await seedFull({ files: DATA_LIMITS.maxFilesPerApp, fileBytes: 0 });
      const message = await expectError(
        await uploadTo(t, full.address, "files", { body: "one too many" }),
        429,
        "limit_exceeded",
      );
      expect(message).toContain(`${DATA_LIMITS.maxFilesPerApp} files`);
      await expectNothingOf("one too many");
      expect(await usage(full.id)).toEqual({ files: DATA_LIMITS.maxFilesPerApp, fileBytes: 0 });
    });

    test("an app's files may not go over its bytes: the last byte fits, one more does not", async () => {
      const nearly = await seedFull({ files: 5, fileBytes: DATA_LIMITS.maxFileBytesPerApp - 10 });
      const message = await expectError(
        await uploadTo(t, nearly.address, "files", { body: "elevenbytes" }),
        429,
        "limit_exceeded",
      );
      expect(message).toContain("10 bytes are left");
      await expectNothingOf("elevenbytes");
      await uploaded(t, nearly.address, "files", { body: "tenbytes!!" });
      expect(await usage(nearly.id)).toEqual({ files: 6, fileBytes: DATA_LIMITS.maxFileBytesPerApp });
    });

    test("uploads at the same time never pass the count; the refused ones leave no bytes", async () => {
      const almost = await seedFull({ files: DATA_LIMITS.maxFilesPerApp - 1, fileBytes: 0 });
      const bodies = [1, 2, 3, 4, 5].map((i) => `racer ${i} ${kind}`);
      const answers = await Promise.all(bodies.map((body) => uploadTo(t, almost.address, "files", { body })));
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 429, 429, 429, 429]);
      const winner = bodies[answers.findIndex((r) => r.status === 201)]!;
      for (const body of bodies) if (body !== winner) await expectNothingOf(body);
      expect(await t.ctx.blobs.has(sha256Hex(winner))).toBe(true);
      expect(await usage(almost.id)).toEqual({ files: DATA_LIMITS.maxFilesPerApp, fileBytes: winner.length });
    });

    test("the same content is stored once and removed with its last file", async () => {
      const content = `same content ${kind}`;
      const sha256 = sha256Hex(content);
      const first = await uploaded(t, "store", "big", { cookie, body: content, name: "one.txt" });
      const second = await uploaded(t, "store", "small", { cookie, body: content, name: "two.txt" });
      expect(await t.ctx.db.select().from(blobs).where(eq(blobs.sha256, sha256))).toHaveLength(1);
      await removeFile(first);
      expect(await t.ctx.blobs.has(sha256)).toBe(true);
      expect(await (await t.get("store", second.url)).text()).toBe(content);
      await removeFile(second);
      await expectNothingOf(content);
    });

    test("removing a file while the same content is uploaded again never leaves the new file without its bytes", async () => {
      for (let round = 0; round < 10; round++) {
        const content = `coming and going ${kind} ${round}`;
        const old = await uploaded(t, "store", "big", { cookie, body: content });
        const [removed, again] = await Promise.all([
          t.get("store", old.url, { method: "DELETE", headers: { cookie } }),
          uploadTo(t, "store", "big", { cookie, body: content }),
        ]);
        expect({ round, removed: removed.status, again: again.status }).toEqual({ round, removed: 200, again: 201 });
        const file = (await again.json()) as WireFile;
        expect({ round, served: await (await t.get("store", file.url)).text() }).toEqual({ round, served: content });
        await removeFile(file);
        await expectNothingOf(content);
      }
    });

    // Needs a second connection to hold the app row while the upload waits for it: real Postgres only.
    test.skipIf(!process.env.TEST_DATABASE_URL)(
      "content removed between an upload's first look and its transaction is stored again",
      async () => {
        const content = `removed under an upload ${kind}`;
        const sha256 = sha256Hex(content);
        const old = await uploaded(t, "store", "big", { cookie, body: content });
        let release = () => {};
        const held = new Promise<void>((resolve) => (release = resolve));
        let locked = () => {};
        const rowLocked = new Promise<void>((resolve) => (locked = resolve));
        const holding = t.ctx.db.transaction(async (tx) => {
          await tx.select({ id: appsTable.id }).from(appsTable).where(eq(appsTable.id, app.id)).for("update");
          locked();
          await held;
        });
        // The row is held before the upload starts: otherwise the upload may take it first and never wait.
        await rowLocked;
        // The upload has seen the content registered (so it sends no bytes) and now waits for the app row.
        const pending = uploadTo(t, "store", "big", { cookie, body: content });
        await eventually(async () => {
          const rows = await t.ctx.db.execute(
            sql`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%for key share%'`,
          );
          return [...(rows as unknown as Iterable<unknown>)].length > 0;
        }, "the upload to wait for the app row");
        // Meanwhile a removal of the last file with this content commits and takes the bytes.
        await t.ctx.db.delete(bucketFiles).where(eq(bucketFiles.id, old.id));
        await t.ctx.db.delete(blobs).where(eq(blobs.sha256, sha256));
        await t.ctx.blobs.delete(sha256);
        release();
        await holding;
        const response = await pending;
        const file = (await response.json()) as WireFile;
        expect(response.status).toBe(201);
        expect(await (await t.get("store", file.url)).text()).toBe(content);
        await removeFile(file);
      },
    );

    test("removing a file keeps content a published version uses", async () => {
      const content = `<h1>also a page ${kind}</h1>`;
      await seedApp(t.ctx, { address: `page-${kind}`, files: { "index.html": content } });
      const file = await uploaded(t, "store", "big", { cookie, body: content, type: "text/html" });
      await removeFile(file);
      expect(await t.ctx.blobs.has(sha256Hex(content))).toBe(true);
      expect(
        await t.ctx.db
          .select()
          .from(blobs)
          .where(eq(blobs.sha256, sha256Hex(content))),
      ).toHaveLength(1);
    });

    test("delete_tool removes the app's files and their unused content, keeping content another app still uses", async () => {
      const doomed = await seedApp(t.ctx, {
        address: `doomed-${kind}`,
        owner: { id: owner.sub, email: owner.email },
        files: { "index.html": `<h1>doomed ${kind}</h1>` },
        config: { buckets: { files: ALL } },
      });
      const survivor = await seedApp(t.ctx, {
        address: `survivor-${kind}`,
        files: { "index.html": `kept by a version ${kind}` },
        config: { buckets: { files: ALL } },
      });
      const onlyHere = `only in the doomed app ${kind}`;
      const inVersion = `kept by a version ${kind}`;
      const inOtherBucket = `kept by another bucket ${kind}`;
      for (const body of [onlyHere, inVersion, inOtherBucket]) await uploaded(t, doomed.address, "files", { body });
      await uploaded(t, survivor.address, "files", { body: inOtherBucket });

      const outcome = await deleteApp(doomed.address);
      expect(outcome).toMatchObject({ data: { status: "deleted" } });
      expect(await t.ctx.db.select().from(bucketFiles).where(eq(bucketFiles.appId, doomed.id))).toHaveLength(0);
      expect(await usage(doomed.id)).toBeNull();
      await expectNothingOf(onlyHere);
      await expectNothingOf(`<h1>doomed ${kind}</h1>`);
      for (const kept of [inVersion, inOtherBucket]) {
        expect({ kept, stored: await t.ctx.blobs.has(sha256Hex(kept)) }).toEqual({ kept, stored: true });
        expect(
          await t.ctx.db
            .select()
            .from(blobs)
            .where(eq(blobs.sha256, sha256Hex(kept))),
        ).toHaveLength(1);
      }
      // (The store itself: the site's own cache was made with the disk store before the S3 one was swapped in.)
      expect(await (await t.ctx.blobs.get(sha256Hex(inVersion)))?.text()).toBe(inVersion);
      const [survivorFile] = await t.ctx.db
        .select()
        .from(bucketFiles)
        .where(and(eq(bucketFiles.appId, survivor.id), eq(bucketFiles.sha256, sha256Hex(inOtherBucket))));
      expect(await (await t.get(survivor.address, `/_hatch/files/files/${survivorFile!.id}`)).text()).toBe(
        inOtherBucket,
      );
    });

    if (kind === "s3") {
      test("an S3 file is streamed through the app host, never a redirect to the store", async () => {
        const file = await uploaded(t, "store", "big", { cookie, body: "through the host" });
        const served = await t.get("store", file.url);
        expect(served.status).toBe(200);
        expect(await served.text()).toBe("through the host");
        expect(
          fake!.objects.has(`blobs/${sha256Hex("through the host").slice(0, 2)}/${sha256Hex("through the host")}`),
        ).toBe(true);
      });
    }

    async function removeFile(file: WireFile): Promise<void> {
      const response = await t.get("store", file.url, { method: "DELETE", headers: { cookie } });
      expect(await response.json()).toEqual({ id: file.id, removed: true });
    }

    /** An app whose counters say it already holds this much (as if it had uploaded it). */
    async function seedFull(counted: { files: number; fileBytes: number }): Promise<SeededApp> {
      const seeded = await seedApp(t.ctx, { files: { "index.html": "full" }, config: { buckets: { files: ALL } } });
      await t.ctx.db.insert(dataUsage).values({ appId: seeded.id, ...counted });
      return seeded;
    }

    /** delete_tool as the owner, with a confirmation the user gave. */
    async function deleteApp(address: string) {
      const ctx: CallContext = {
        v: 1,
        sub: owner.sub,
        email: owner.email,
        name: "Olga",
        account: owner.account,
        permissions: [],
        scope: "write",
        client: { kind: "cli", name: "test", elicitation: { form: true, url: false } },
        grant: "test",
        rid: "test",
        iat: 0,
        exp: 0,
      };
      const input = { address };
      const { claims } = issueConfirm(t.ctx.keys.confirm, { sub: owner.sub, tool: "delete_tool", input });
      return deleteToolTool(t.ctx).handler({
        ctx,
        input,
        answer: { confirm: true },
        confirmation: claims,
        requestId: "test",
        log: t.ctx.logger,
      });
    }
  });
}

/** Sends a request exactly as written and returns the answer's head (status line and headers), not waiting for more. */
function rawHead(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1");
      const end = data.indexOf("\r\n\r\n");
      if (end >= 0) {
        socket.destroy();
        resolve(data.slice(0, end));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error(`no answer: ${data.slice(0, 200)}`)));
  });
}
