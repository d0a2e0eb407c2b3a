import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { FILE_CSP } from "../src/data/buckets-http.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";
import {
  expectError,
  sha256Hex,
  signInTo,
  uploaded,
  uploadTo,
  type TestViewer,
  type WireFile,
} from "./support/buckets.ts";

// Uploading, listing and serving bucket files: the upload's name and type, how an untrusted file is served, list
// paging, and that only the app's own pages may change its files.

const owner: TestViewer = { sub: "user-owner", email: "owner@example.com", account: "acct-owner" };
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);

describe("app data: bucket files", () => {
  let t: TestHost;
  let cookie: string;

  beforeAll(async () => {
    t = await startTestHost();
    const all = { read: "anyone", create: "anyone", delete: "anyone" };
    await seedApp(t.ctx, {
      address: "files",
      owner: { id: owner.sub, email: owner.email },
      accountId: owner.account,
      files: { "index.html": "<h1>Files</h1>" },
      config: { buckets: { uploads: all, pages: all, paging: all, other: all } },
    });
    cookie = await signInTo(t, "files", owner);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  test("an upload answers the file; its bytes come back as sent", async () => {
    const before = Date.now();
    const file = await uploaded(t, "files", "uploads", { cookie, name: "  cat.png ", body: PNG, type: "image/png" });
    expect(file).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      name: "cat.png",
      size: PNG.byteLength,
      contentType: "image/png",
      createdAt: expect.any(String),
      createdBy: "owner@example.com",
      url: `/_hatch/files/uploads/${file.id}`,
    });
    expect(Date.parse(file.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    const served = await t.get("files", file.url);
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(PNG);
  });

  test("a file is served sandboxed, never sniffed, by content ETag, revalidated on every use", async () => {
    const file = await uploaded(t, "files", "uploads", { cookie, name: "cat.png", body: PNG, type: "image/png" });
    const served = await t.get("files", file.url);
    expect(served.status).toBe(200);
    expect(
      Object.fromEntries(
        [
          "content-type",
          "content-disposition",
          "content-security-policy",
          "x-content-type-options",
          "cache-control",
          "etag",
          "content-length",
        ].map((h) => [h, served.headers.get(h)]),
      ),
    ).toEqual({
      "content-type": "image/png",
      "content-disposition": `inline; filename="cat.png"; filename*=UTF-8''cat.png`,
      "content-security-policy": FILE_CSP,
      "x-content-type-options": "nosniff",
      "cache-control": "private, no-cache",
      etag: `"${sha256Hex(PNG)}"`,
      "content-length": String(PNG.byteLength),
    });
    expect(FILE_CSP).toStartWith("sandbox; default-src 'none'");
    await served.arrayBuffer();

    const again = await t.get("files", file.url, { headers: { "if-none-match": `"${sha256Hex(PNG)}"` } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    const head = await t.get("files", file.url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(PNG.byteLength));
  });

  test("HTML, SVG and unknown types are attachments; images, audio, video, PDF and plain text are inline", async () => {
    const cases: [string, string, "inline" | "attachment"][] = [
      ["page.html", "text/html", "attachment"],
      ["page.xhtml", "application/xhtml+xml", "attachment"],
      ["logo.svg", "image/svg+xml", "attachment"],
      ["app.js", "text/javascript", "attachment"],
      ["data.bin", "application/octet-stream", "attachment"],
      ["photo.jpg", "image/jpeg", "inline"],
      ["song.mp3", "audio/mpeg", "inline"],
      ["clip.mp4", "video/mp4", "inline"],
      ["paper.pdf", "application/pdf", "inline"],
      ["notes.txt", "text/plain; charset=utf-8", "inline"],
    ];
    for (const [name, type, disposition] of cases) {
      const file = await uploaded(t, "files", "pages", { cookie, name, body: "<script>alert(1)</script>", type });
      const served = await t.get("files", file.url);
      const got = {
        name,
        disposition: served.headers.get("content-disposition")?.split(";")[0],
        type: served.headers.get("content-type"),
        csp: served.headers.get("content-security-policy"),
      };
      expect(got).toEqual({ name, disposition, type, csp: FILE_CSP });
      await served.arrayBuffer();
    }
  });

  test("a name beyond ASCII keeps its exact form in filename* and a safe fallback", async () => {
    const file = await uploaded(t, "files", "uploads", { cookie, name: 'café "menu" (1).txt', body: "x" });
    expect(file.name).toBe('café "menu" (1).txt');
    const served = await t.get("files", file.url);
    expect(served.headers.get("content-disposition")).toBe(
      `inline; filename="caf_ _menu_ (1).txt"; filename*=UTF-8''caf%C3%A9%20%22menu%22%20%281%29.txt`,
    );
    await served.arrayBuffer();
  });

  test("no Content-Type is stored as application/octet-stream; a malformed one is invalid", async () => {
    const response = await t.get("files", "/_hatch/files/uploads?name=raw", {
      method: "POST",
      body: new Blob([new Uint8Array([1, 2])]),
      headers: { cookie },
    });
    const file = (await response.json()) as WireFile;
    expect({ status: response.status, type: file.contentType }).toEqual({
      status: 201,
      type: "application/octet-stream",
    });
    for (const type of ["image", "text/html; charset", "a/b; c", "a/b/c", `image/png; ${"x".repeat(200)}=1`]) {
      const message = await expectError(await uploadTo(t, "files", "uploads", { cookie, type }), 400, "invalid");
      expect(message).toContain("Content-Type");
    }
  });

  test("a missing, empty, control-character or over-long name is invalid, and nothing is stored", async () => {
    const before = await listAll("uploads");
    expect(await expectError(await uploadTo(t, "files", "uploads", { cookie, name: null }), 400, "invalid")).toContain(
      "Name the file",
    );
    expect(await expectError(await uploadTo(t, "files", "uploads", { cookie, name: "   " }), 400, "invalid")).toContain(
      "Name the file",
    );
    for (const name of ["a\nb.txt", "tab\there", "nul\u0000", "bidi\u202Etxt.exe"]) {
      expect(await expectError(await uploadTo(t, "files", "uploads", { cookie, name }), 400, "invalid")).toContain(
        "control characters",
      );
    }
    const long = "é".repeat(DATA_LIMITS.maxFileNameLength + 1);
    expect(await expectError(await uploadTo(t, "files", "uploads", { cookie, name: long }), 400, "invalid")).toContain(
      `${DATA_LIMITS.maxFileNameLength} characters`,
    );
    expect(await listAll("uploads")).toEqual(before);
    // Exactly the longest name is fine (counted in characters, not bytes).
    const longest = await uploaded(t, "files", "uploads", { cookie, name: "é".repeat(DATA_LIMITS.maxFileNameLength) });
    expect([...longest.name].length).toBe(DATA_LIMITS.maxFileNameLength);
  });

  test("list: newest first, a page at a time by cursor, until next is null", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await uploaded(t, "files", "paging", { cookie, name: `f${i}.txt`, body: `file ${i}` })).id);
    const seen: string[] = [];
    let after: string | null = null;
    const pages: number[] = [];
    do {
      const query: string = `?limit=2${after ? `&after=${encodeURIComponent(after)}` : ""}`;
      const page = (await (await t.get("files", `/_hatch/files/paging${query}`)).json()) as {
        files: WireFile[];
        next: string | null;
      };
      pages.push(page.files.length);
      seen.push(...page.files.map((f) => f.id));
      after = page.next;
    } while (after);
    expect(pages).toEqual([2, 2, 1]);
    expect(seen).toEqual([...ids].reverse());
    const whole = (await (await t.get("files", "/_hatch/files/paging")).json()) as {
      files: WireFile[];
      next: string | null;
    };
    expect({ count: whole.files.length, next: whole.next }).toEqual({ count: 5, next: null });
  });

  test("list: a bad limit or a cursor that is not this bucket's is invalid", async () => {
    for (const limit of ["0", "-1", "abc", "1.5", String(DATA_LIMITS.maxListLimit + 1), ""]) {
      const message = await expectError(await t.get("files", `/_hatch/files/paging?limit=${limit}`), 400, "invalid");
      expect(message).toContain("limit");
    }
    expect((await t.get("files", `/_hatch/files/paging?limit=${DATA_LIMITS.maxListLimit}`)).status).toBe(200);
    const page = (await (await t.get("files", "/_hatch/files/paging?limit=1")).json()) as { next: string };
    await expectError(await t.get("files", `/_hatch/files/other?after=${page.next}`), 400, "invalid");
    const forged = (cursor: unknown) => Buffer.from(JSON.stringify(cursor)).toString("base64url");
    const bad = [
      "not-a-cursor",
      forged({ b: "paging", at: "2024-02-31T00:00:00.000000Z", id: "abc" }),
      forged({ b: "paging", at: "yesterday", id: "abc" }),
      forged({ b: "paging", at: "2024-02-01T00:00:00.000000Z", id: "'; drop table x" }),
      forged(["paging"]),
    ];
    for (const after of bad)
      await expectError(
        await t.get("files", `/_hatch/files/paging?after=${encodeURIComponent(after)}`),
        400,
        "invalid",
      );
  });

  test("only the app's own pages may upload or remove: another origin is refused", async () => {
    const evil = { origin: t.origin("evil") };
    const before = await listAll("uploads");
    await expectError(await uploadTo(t, "files", "uploads", { cookie, headers: evil }), 403, "forbidden");
    await expectError(await uploadTo(t, "files", "uploads", { cookie, headers: { origin: "null" } }), 403, "forbidden");
    await expectError(
      await uploadTo(t, "files", "uploads", { cookie, headers: { "sec-fetch-site": "same-site" } }),
      403,
      "forbidden",
    );
    expect(await listAll("uploads")).toEqual(before);
    const file = await uploaded(t, "files", "uploads", {
      cookie,
      headers: { origin: t.origin("files"), "sec-fetch-site": "same-origin" },
    });
    await expectError(
      await t.get("files", file.url, { method: "DELETE", headers: { cookie, ...evil } }),
      403,
      "forbidden",
    );
    expect((await t.get("files", file.url)).status).toBe(200);
    const removed = await t.get("files", file.url, {
      method: "DELETE",
      headers: { cookie, origin: t.origin("files") },
    });
    expect(await removed.json()).toEqual({ id: file.id, removed: true });
  });

  async function listAll(bucket: string): Promise<string[]> {
    const page = (await (await t.get("files", `/_hatch/files/${bucket}?limit=100`)).json()) as { files: WireFile[] };
    return page.files.map((f) => f.id);
  }
});
