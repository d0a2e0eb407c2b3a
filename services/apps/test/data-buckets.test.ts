import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";
import {
  expectError,
  pageHeaders,
  signInTo,
  uploaded,
  uploadTo,
  type TestViewer,
  type WireFile,
} from "./support/buckets.ts";

// Who may upload, read and remove files of a bucket: each rule word of service.json `buckets`, for an anonymous
// viewer, a signed-in stranger, a member of the owner's organization and the owner, over real HTTP.

const owner: TestViewer = {
  sub: "user-owner",
  email: "owner@example.com",
  name: "Olga Owner",
  account: "acct-company",
};
const member: TestViewer = { sub: "user-member", email: "member@example.com", account: "acct-company" };
const stranger: TestViewer = { sub: "user-stranger", email: "stranger@example.com", account: "acct-stranger" };
type Who = "anonymous" | "stranger" | "member" | "owner";
const WHO: Who[] = ["anonymous", "stranger", "member", "owner"];

const BUCKETS = {
  open: { read: "anyone", create: "anyone", delete: "anyone" },
  members: { read: "signed_in", create: "signed_in", delete: "signed_in" },
  team: { read: "org", create: "org", delete: "org" },
  // Nothing named: every operation is the owner's only.
  mine: {},
  own: { read: "creator", create: "signed_in", delete: "creator" },
};

/** Who each rule word lets through (the `own` bucket's creator rule is tested on its own). */
const ALLOWED: Record<"open" | "members" | "team" | "mine", Record<Who, boolean>> = {
  open: { anonymous: true, stranger: true, member: true, owner: true },
  members: { anonymous: false, stranger: true, member: true, owner: true },
  team: { anonymous: false, stranger: false, member: true, owner: true },
  mine: { anonymous: false, stranger: false, member: false, owner: true },
};

describe("app data: bucket rules", () => {
  let t: TestHost;
  const cookies: Record<Who, string | null> = { anonymous: null, stranger: null, member: null, owner: null };

  beforeAll(async () => {
    t = await startTestHost();
    await seedApp(t.ctx, {
      address: "rules",
      owner: { id: owner.sub, email: owner.email },
      accountId: "acct-company",
      files: { "index.html": "<h1>Rules</h1>" },
      config: { buckets: BUCKETS },
    });
    cookies.stranger = await signInTo(t, "rules", stranger);
    cookies.member = await signInTo(t, "rules", member);
    cookies.owner = await signInTo(t, "rules", owner);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const get = (path: string, who: Who, init: RequestInit = {}) =>
    t.get("rules", path, { ...init, headers: pageHeaders(cookies[who], init.headers as Record<string, string>) });

  test("create: each rule word lets exactly its viewers upload", async () => {
    for (const [bucket, allowed] of Object.entries(ALLOWED)) {
      for (const who of WHO) {
        const response = await uploadTo(t, "rules", bucket, { cookie: cookies[who], name: `${who}.txt` });
        const outcome = { bucket, who, status: response.status };
        expect(outcome).toEqual({ bucket, who, status: allowed[who] ? 201 : 403 });
        const body = await response.json();
        if (allowed[who]) expect(body.createdBy).toBe(who === "anonymous" ? null : `${who}@example.com`);
        else expect(body.error.code).toBe("forbidden");
      }
    }
  });

  test("a refusal tells an anonymous viewer to sign in and a signed-in one who may", async () => {
    const anonymous = await expectError(await uploadTo(t, "rules", "members", {}), 403, "forbidden");
    expect(anonymous).toContain("Sign in");
    const signedIn = await expectError(
      await uploadTo(t, "rules", "team", { cookie: cookies.stranger }),
      403,
      "forbidden",
    );
    expect(signedIn).toContain("members of the app owner's organization");
    expect(signedIn).toContain("stranger@example.com");
    const ownerOnly = await expectError(
      await uploadTo(t, "rules", "mine", { cookie: cookies.member }),
      403,
      "forbidden",
    );
    expect(ownerOnly).toContain("the app's owner");
  });

  test("read: each rule word lets exactly its viewers list and open files", async () => {
    for (const [bucket, allowed] of Object.entries(ALLOWED)) {
      const file = await uploaded(t, "rules", bucket, {
        cookie: cookies.owner,
        name: "shared.txt",
        body: `in ${bucket}`,
      });
      for (const who of WHO) {
        const listed = await get(`/_hatch/files/${bucket}`, who);
        const opened = await get(file.url, who);
        const outcome = { bucket, who, list: listed.status, open: opened.status };
        expect(outcome).toEqual({ bucket, who, list: allowed[who] ? 200 : 403, open: allowed[who] ? 200 : 403 });
        if (allowed[who]) {
          expect(((await listed.json()) as { files: WireFile[] }).files.map((f) => f.id)).toContain(file.id);
          expect(await opened.text()).toBe(`in ${bucket}`);
        } else {
          await expectError(listed, 403, "forbidden");
          await expectError(opened, 403, "forbidden");
        }
      }
    }
  });

  test("delete: each rule word lets exactly its viewers remove a file", async () => {
    for (const [bucket, allowed] of Object.entries(ALLOWED)) {
      for (const who of WHO) {
        const file = await uploaded(t, "rules", bucket, { cookie: cookies.owner, name: `for-${who}.txt` });
        const response = await get(file.url, who, { method: "DELETE" });
        expect({ bucket, who, status: response.status }).toEqual({ bucket, who, status: allowed[who] ? 200 : 403 });
        if (allowed[who]) expect(await response.json()).toEqual({ id: file.id, removed: true });
        else await expectError(response, 403, "forbidden");
        const after = await get(file.url, "owner");
        expect({ bucket, who, after: after.status }).toEqual({ bucket, who, after: allowed[who] ? 404 : 200 });
        await after.arrayBuffer();
      }
    }
  });

  test("creator: each signed-in viewer lists, opens and removes only their own files; the owner is not special", async () => {
    const mineFile = await uploaded(t, "rules", "own", {
      cookie: cookies.stranger,
      name: "stranger.txt",
      body: "stranger's",
    });
    const ownerFile = await uploaded(t, "rules", "own", { cookie: cookies.owner, name: "owner.txt", body: "owner's" });
    const listOf = async (who: Who) =>
      ((await (await get("/_hatch/files/own", who)).json()) as { files: WireFile[] }).files.map((f) => f.id);
    expect(await listOf("stranger")).toEqual([mineFile.id]);
    expect(await listOf("owner")).toEqual([ownerFile.id]);
    expect(await listOf("member")).toEqual([]);
    await expectError(await get("/_hatch/files/own", "anonymous"), 403, "forbidden");

    expect(await (await get(mineFile.url, "stranger")).text()).toBe("stranger's");
    // Someone else's file is as good as missing, for the owner too.
    await expectError(await get(mineFile.url, "owner"), 404, "not_found");
    await expectError(await get(mineFile.url, "member"), 404, "not_found");
    await expectError(await get(mineFile.url, "anonymous"), 403, "forbidden");

    await expectError(await get(mineFile.url, "owner", { method: "DELETE" }), 403, "forbidden");
    await expectError(await get(mineFile.url, "member", { method: "DELETE" }), 403, "forbidden");
    await expectError(await get(mineFile.url, "anonymous", { method: "DELETE" }), 403, "forbidden");
    expect((await get(mineFile.url, "stranger", { method: "DELETE" })).status).toBe(200);
    await expectError(await get(mineFile.url, "stranger"), 404, "not_found");
    expect(await listOf("owner")).toEqual([ownerFile.id]);
  });

  test("an unknown bucket is not_found and names the declared ones", async () => {
    const message = await expectError(
      await uploadTo(t, "rules", "photos", { cookie: cookies.owner }),
      404,
      "not_found",
    );
    expect(message).toContain('no bucket "photos"');
    expect(message).toContain("declares: members, mine, open, own, team.");
    await expectError(await get("/_hatch/files/photos", "owner"), 404, "not_found");
    await expectError(await get("/_hatch/files/photos/abcdefghijklmnop", "owner"), 404, "not_found");
    // Not even a bucket name: not echoed.
    const odd = await expectError(await get("/_hatch/files/%3Cb%3E", "owner"), 404, "not_found");
    expect(odd).not.toContain("<b>");
    await expectError(await get("/_hatch/files/", "owner"), 404, "not_found");
  });

  test("an app with no version has no buckets", async () => {
    await seedApp(t.ctx, { address: "empty-app", owner: { id: owner.sub, email: owner.email } });
    const cookie = await signInTo(t, "empty-app", owner);
    const message = await expectError(await uploadTo(t, "empty-app", "open", { cookie }), 404, "not_found");
    expect(message).toContain("declares no buckets");
  });

  test("a file id that cannot be one, or that names no file, is not_found", async () => {
    await expectError(await get("/_hatch/files/open/no-such-file-id", "owner"), 404, "not_found");
    await expectError(await get("/_hatch/files/open/bad%20id", "owner"), 404, "not_found");
    await expectError(await get("/_hatch/files/open/a/b", "owner"), 404, "not_found");
    await expectError(await get("/_hatch/files/open/no-such-file-id", "owner", { method: "DELETE" }), 404, "not_found");
  });

  test("a file of one bucket is not found through another", async () => {
    const file = await uploaded(t, "rules", "open", { cookie: cookies.owner });
    await expectError(await get(`/_hatch/files/members/${file.id}`, "owner"), 404, "not_found");
    await expectError(await get(`/_hatch/files/members/${file.id}`, "owner", { method: "DELETE" }), 404, "not_found");
    expect((await get(file.url, "owner")).status).toBe(200);
  });

  test("other methods are refused with 405 and Allow", async () => {
    const file = await uploaded(t, "rules", "open", { cookie: cookies.owner });
    const put = await get("/_hatch/files/open", "owner", { method: "PUT", body: "x" });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, POST");
    await put.arrayBuffer();
    const post = await get(file.url, "owner", { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, DELETE");
    await post.arrayBuffer();
  });
});
