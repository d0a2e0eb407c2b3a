import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ViewerIdentity } from "@hatch/contracts";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { allBy, DataClient, member, owner, ownerSeed, stranger } from "./support/collections.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

// Who may do what to a collection: each rule word for each operation, by the viewer the app host verified.

const files = { "index.html": "<h1>Rules</h1>" };
type Who = "anonymous" | "stranger" | "member" | "owner";
const viewers: Record<Who, ViewerIdentity | null> = { anonymous: null, stranger, member, owner };

/** Who each rule word lets through (besides `creator`, tested on its own). */
const allowed: Record<string, Who[]> = {
  anyone: ["anonymous", "stranger", "member", "owner"],
  signed_in: ["stranger", "member", "owner"],
  org: ["member", "owner"],
  owner: ["owner"],
};

describe("app data: rules", () => {
  let t: TestHost;
  let db: DataClient;
  beforeAll(async () => {
    t = await startTestHost();
    db = new DataClient(t);
    const collections = {
      ...Object.fromEntries(Object.keys(allowed).map((rule) => [rule, allBy(rule)])),
      // Unnamed operations are the owner's.
      unnamed: {},
      mine: { read: "creator", create: "signed_in", update: "creator", delete: "creator" },
      board: { read: "anyone", create: "signed_in", update: "creator", delete: "creator" },
    };
    await seedApp(t.ctx, { ...ownerSeed, address: "rules", files, config: { collections } });
    await seedApp(t.ctx, {
      ...ownerSeed,
      address: "private",
      visibility: "private",
      files,
      config: { collections: { open: allBy("anyone") } },
    });
    await seedApp(t.ctx, {
      ...ownerSeed,
      address: "paused",
      paused: true,
      files,
      config: { collections: { open: allBy("anyone") } },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** Every operation as one viewer, on a document the owner added: the statuses. */
  async function statuses(collection: string, viewer: ViewerIdentity | null): Promise<Record<string, number>> {
    const fresh = async () => (await db.add("rules", collection, { n: 1 }, owner)).body.id as string;
    return {
      create: (await db.add("rules", collection, { n: 2 }, viewer)).status,
      list: (await db.list("rules", collection, {}, viewer)).status,
      get: (await db.read("rules", collection, await fresh(), viewer)).status,
      update: (await db.update("rules", collection, await fresh(), { n: 3 }, viewer)).status,
      remove: (await db.remove("rules", collection, await fresh(), viewer)).status,
    };
  }

  for (const [rule, who] of Object.entries(allowed)) {
    test(`${rule}: ${who.join(", ")} may do everything, others are forbidden`, async () => {
      for (const name of Object.keys(viewers) as Who[]) {
        const ok = who.includes(name);
        const expected = ok
          ? { create: 201, list: 200, get: 200, update: 200, remove: 200 }
          : { create: 403, list: 403, get: 403, update: 403, remove: 403 };
        expect({ rule, name, ...(await statuses(rule, viewers[name])) }).toEqual({ rule, name, ...expected });
      }
    });
  }

  test("an operation the collection does not name is the owner's only", async () => {
    expect(await statuses("unnamed", owner)).toEqual({ create: 201, list: 200, get: 200, update: 200, remove: 200 });
    expect(await statuses("unnamed", member)).toEqual({ create: 403, list: 403, get: 403, update: 403, remove: 403 });
  });

  test("refusals say what to do: sign in, or who may", async () => {
    const anonymous = await db.list("rules", "signed_in", {}, null);
    expect(anonymous.body.error).toEqual({
      code: "forbidden",
      message: "Sign in to read this collection (hatch.signIn()).",
    });
    const outsider = await db.add("rules", "org", { n: 1 }, stranger);
    expect(outsider.body.error).toEqual({
      code: "forbidden",
      message: `Only members of the app owner's organization may add documents to org here; you are signed in as ${stranger.email}.`,
    });
    const notOwner = await db.remove("rules", "owner", "whatever", member);
    expect(notOwner.body.error.message).toBe(
      `Only the app's owner may remove documents of owner here; you are signed in as ${member.email}.`,
    );
  });

  test("creator: each viewer reads and changes only their own documents; the owner is not special", async () => {
    const { body: memberDoc } = await db.add("rules", "mine", { text: "member's" }, member);
    const { body: strangerDoc } = await db.add("rules", "mine", { text: "stranger's" }, stranger);
    const idsOf = async (viewer: ViewerIdentity) =>
      (await db.list("rules", "mine", {}, viewer)).body.documents.map((d: { id: string }) => d.id);
    expect(await idsOf(member)).toEqual([memberDoc.id]);
    expect(await idsOf(stranger)).toEqual([strangerDoc.id]);
    expect(await idsOf(owner)).toEqual([]);
    expect((await db.read("rules", "mine", memberDoc.id, member)).status).toBe(200);
    // Someone else's document under a creator read rule is as good as missing.
    for (const viewer of [stranger, owner]) {
      expect((await db.read("rules", "mine", memberDoc.id, viewer)).status).toBe(404);
      expect((await db.update("rules", "mine", memberDoc.id, { text: "mine now" }, viewer)).status).toBe(404);
      expect((await db.remove("rules", "mine", memberDoc.id, viewer)).status).toBe(404);
    }
    expect((await db.list("rules", "mine", {}, null)).status).toBe(403);
    expect((await db.read("rules", "mine", memberDoc.id, null)).status).toBe(403);
    expect((await db.add("rules", "mine", { text: "anon" }, null)).status).toBe(403);
    expect((await db.update("rules", "mine", memberDoc.id, { text: "edited" }, member)).body.text).toBe("edited");
    expect((await db.remove("rules", "mine", memberDoc.id, member)).status).toBe(200);
    expect((await db.read("rules", "mine", strangerDoc.id, stranger)).body.text).toBe("stranger's");
  });

  test("creator changes where everyone reads: someone else's document is forbidden, not hidden", async () => {
    const { body: doc } = await db.add("rules", "board", { text: "hello" }, member);
    expect((await db.read("rules", "board", doc.id, stranger)).status).toBe(200);
    const edit = await db.update("rules", "board", doc.id, { text: "defaced" }, stranger);
    expect(edit.status).toBe(403);
    expect(edit.body.error.message).toBe(
      `Only whoever created it may change this document here; you are signed in as ${stranger.email}.`,
    );
    expect((await db.remove("rules", "board", doc.id, owner)).status).toBe(403);
    expect((await db.update("rules", "board", doc.id, { text: "x" }, null)).status).toBe(403);
    expect((await db.read("rules", "board", doc.id, null)).body.text).toBe("hello");
  });

  test("a non-public app refuses a viewer who may not open it, whatever the rules say", async () => {
    const anonymous = await db.list("private", "open", {}, null);
    expect(anonymous.status).toBe(403);
    expect(anonymous.body.error).toEqual({ code: "forbidden", message: "Sign in to use this app (hatch.signIn())." });
    const outsider = await db.add("private", "open", { n: 1 }, stranger);
    expect(outsider.status).toBe(403);
    expect(outsider.body.error.message).toBe(
      `You are signed in as ${stranger.email}, and this app is not shared with that account.`,
    );
    expect((await db.list("private", "open", {}, member)).status).toBe(403);
    expect((await db.add("private", "open", { n: 1 }, owner)).status).toBe(201);
  });

  test("a paused app's data is unavailable", async () => {
    for (const answer of [
      await db.list("paused", "open", {}, owner),
      await db.add("paused", "open", { n: 1 }, owner),
    ]) {
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe("unavailable");
      expect(answer.body.error.message).toContain("paused");
    }
  });

  test("changes only from the app's own pages: another app's origin, or a cross-site fetch, is refused", async () => {
    const before = (await db.list("rules", "anyone", { limit: 100 })).body.documents.length;
    const cases: Record<string, string>[] = [
      { origin: t.origin("private") },
      { origin: "https://evil.example" },
      { origin: t.origin("rules"), "sec-fetch-site": "same-site" },
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of cases) {
      const { origin, ...rest } = headers;
      const answer = await db.call("rules", "/_hatch/db/anyone", {
        method: "POST",
        body: { n: 1 },
        viewer: owner,
        origin: origin ?? null,
        headers: rest,
      });
      expect({ headers, status: answer.status }).toEqual({ headers, status: 403 });
      expect(answer.body.error.message).toBe("Data of this app can only be changed from the app's own pages.");
    }
    const { body: doc } = await db.add("rules", "anyone", { n: 1 });
    const patch = await db.call("rules", `/_hatch/db/anyone/${doc.id}`, {
      method: "PATCH",
      body: { n: 2 },
      origin: t.origin("private"),
    });
    const remove = await db.call("rules", `/_hatch/db/anyone/${doc.id}`, {
      method: "DELETE",
      origin: t.origin("private"),
    });
    expect([patch.status, remove.status]).toEqual([403, 403]);
    expect((await db.read("rules", "anyone", doc.id)).body.n).toBe(1);
    expect((await db.list("rules", "anyone", { limit: 100 })).body.documents.length).toBe(before + 1);
    // A program (no Origin, no Sec-Fetch-Site) carries nobody else's cookie: it may write under the rules.
    expect((await db.call("rules", "/_hatch/db/anyone", { method: "POST", body: { n: 1 }, origin: null })).status).toBe(
      201,
    );
  });

  test("requests per viewer per minute: the one past the limit is 429 with Retry-After", async () => {
    await seedApp(t.ctx, {
      ...ownerSeed,
      address: "chatty",
      files,
      config: { collections: { open: allBy("anyone") } },
    });
    const url = `${t.origin("chatty")}/_hatch/db/open?limit=1`;
    const headers = { cookie: db.cookie("chatty", member) };
    let sent = 0;
    const worker = async () => {
      while (sent < DATA_LIMITS.requestsPerViewerPerMinute) {
        sent++;
        const response = await fetch(url, { headers });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    const refused = await db.list("chatty", "open", {}, member);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("limit_exceeded");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Counted per viewer: another viewer of the same app is not affected.
    expect((await db.list("chatty", "open", {}, stranger)).status).toBe(200);
  });
});
