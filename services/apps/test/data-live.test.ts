import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { subjects, type ViewerIdentity } from "@hatch/contracts";
import { DATA_LIMITS } from "../src/spec/data-rules.ts";
import { encodeJson } from "@hatch/platform";
import { appsTable } from "../src/db/schema.ts";
import { viewerCookie } from "../src/http/viewer.ts";
import { allBy, DataClient, member, owner, ownerSeed, stranger } from "./support/collections.ts";
import { startTestHost, type TestHost, announceAppChange } from "./support/host.ts";
import { seedApp, type SeededApp } from "./support/seed.ts";

// Live changes: GET /_hatch/db/<c>/_changes as server-sent events, read with fetch and a stream reader.

const files = { "index.html": "<h1>Live</h1>" };
const config = {
  collections: {
    todos: allBy("anyone"),
    other: allBy("anyone"),
    mine: { read: "creator", create: "signed_in", update: "creator", delete: "creator" },
    members: { read: "signed_in", create: "signed_in" },
  },
};

/** The frames of one event stream, as a browser's EventSource would split them. */
class EventStream {
  private buffer = "";
  private readonly decoder = new TextDecoder();
  private reading: ReadableStreamDefaultReader<Uint8Array> | null = null;

  constructor(readonly response: Response) {}

  /** Taken on first use, so a refused answer's JSON body can still be read. */
  private get reader(): ReadableStreamDefaultReader<Uint8Array> {
    return (this.reading ??= this.response.body!.getReader());
  }

  /** The next frame's text (without the blank line), or null when the server ended the stream. */
  async frame(): Promise<string | null> {
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end >= 0) {
        const frame = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        return frame;
      }
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  /** The next change event's data, skipping comments (pings). */
  async change(): Promise<{ type: string; id: string; document?: Record<string, unknown> }> {
    for (;;) {
      const frame = await this.frame();
      if (frame === null) throw new Error("the stream ended");
      const lines = frame.split("\n").filter((line) => !line.startsWith(":"));
      if (!lines.length) continue;
      expect(lines[0]).toBe("event: change");
      expect(lines).toHaveLength(2);
      return JSON.parse(lines[1]!.slice("data: ".length));
    }
  }

  /** Reads until the server ends the stream; true when it did. */
  async ended(): Promise<boolean> {
    while ((await this.frame()) !== null);
    return true;
  }

  async close(): Promise<void> {
    if (this.response.bodyUsed && !this.reading) return;
    await this.reader.cancel().catch(() => {});
  }
}

describe("app data: live changes", () => {
  let t: TestHost;
  let db: DataClient;
  let app: SeededApp;
  const open: EventStream[] = [];
  beforeAll(async () => {
    // A short ping, so the checks made at each ping happen within a test.
    t = await startTestHost({ livePingMs: 100 });
    db = new DataClient(t);
    app = await seedApp(t.ctx, { ...ownerSeed, address: "live", files, config });
  }, 60_000);
  afterAll(async () => {
    for (const stream of open) await stream.close();
    await t?.close();
  });

  async function subscribe(
    address: string,
    collection: string,
    viewer: ViewerIdentity | null,
    cookie?: string,
  ): Promise<EventStream> {
    const headers: Record<string, string> = cookie ? { cookie } : viewer ? { cookie: db.cookie(address, viewer) } : {};
    const response = await t.get(address, `/_hatch/db/${collection}/_changes`, { headers });
    const stream = new EventStream(response);
    if (response.status === 200) open.push(stream);
    return stream;
  }

  test("a stream starts with retry and a ready comment, as text/event-stream", async () => {
    const stream = await subscribe("live", "todos", null);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(stream.response.headers.get("cache-control")).toBe("no-store");
    expect(await stream.frame()).toBe("retry: 3000\n: ready");
    await stream.close();
  });

  test("another client's add, update and remove arrive on an open stream, in order", async () => {
    const stream = await subscribe("live", "todos", member);
    await stream.frame();
    const { body: added } = await db.add("live", "todos", { title: "Milk" }, stranger);
    expect(await stream.change()).toEqual({ type: "added", id: added.id, document: added });
    const { body: updated } = await db.update("live", "todos", added.id, { done: true }, owner);
    expect(await stream.change()).toEqual({ type: "updated", id: added.id, document: updated });
    await db.remove("live", "todos", added.id, null);
    expect(await stream.change()).toEqual({ type: "removed", id: added.id });
    await stream.close();
  });

  test("only this collection's changes, and only committed ones", async () => {
    const stream = await subscribe("live", "todos", null);
    await stream.frame();
    await db.add("live", "other", { title: "elsewhere" });
    const other = await seedApp(t.ctx, { ...ownerSeed, address: "live-other", files, config });
    await db.add("live-other", "todos", { title: "another app" });
    expect((await db.add("live", "todos", { text: "x".repeat(DATA_LIMITS.maxDocumentBytes) })).status).toBe(413);
    expect((await db.update("live", "todos", "missing", { a: 1 })).status).toBe(404);
    const { body: added } = await db.add("live", "todos", { title: "here" });
    expect(await stream.change()).toEqual({ type: "added", id: added.id, document: added });
    expect(other.id).not.toBe(app.id);
    await stream.close();
  });

  test("a change published by another app host instance arrives too", async () => {
    const stream = await subscribe("live", "todos", null);
    await stream.frame();
    const document = {
      id: "fromElsewhere",
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      createdBy: null,
      n: 1,
    };
    t.ctx.bus.publish(
      subjects.appsDataChanged,
      encodeJson({ appId: app.id, collection: "todos", type: "added", id: document.id, creator: null, document }),
    );
    expect(await stream.change()).toEqual({ type: "added", id: document.id, document });
    await stream.close();
  });

  test("under a creator read rule a stream carries only the viewer's own documents' changes", async () => {
    const stream = await subscribe("live", "mine", member);
    await stream.frame();
    const { body: theirs } = await db.add("live", "mine", { text: "stranger's" }, stranger);
    await db.update("live", "mine", theirs.id, { text: "edited" }, stranger);
    await db.remove("live", "mine", theirs.id, stranger);
    const { body: own } = await db.add("live", "mine", { text: "member's" }, member);
    expect(await stream.change()).toEqual({ type: "added", id: own.id, document: own });
    await db.remove("live", "mine", own.id, member);
    expect(await stream.change()).toEqual({ type: "removed", id: own.id });
    await stream.close();
  });

  test("the read rule decides who may open a stream", async () => {
    const anonymous = await subscribe("live", "members", null);
    expect(anonymous.response.status).toBe(403);
    expect(await anonymous.response.json()).toEqual({
      error: { code: "forbidden", message: "Sign in to follow changes of this collection (hatch.signIn())." },
    });
    expect((await subscribe("live", "mine", null)).response.status).toBe(403);
    const unknown = await subscribe("live", "nope", member);
    expect(unknown.response.status).toBe(404);
    await unknown.response.text();
    const post = await db.call("live", "/_hatch/db/todos/_changes", { method: "POST" });
    expect(post.status).toBe(405);
  });

  test(`at most ${DATA_LIMITS.subscriptionsPerViewer} open streams per viewer; closing one makes room`, async () => {
    await seedApp(t.ctx, { ...ownerSeed, address: "many", files, config });
    const streams: EventStream[] = [];
    for (let n = 0; n < DATA_LIMITS.subscriptionsPerViewer; n++) {
      const stream = await subscribe("many", n % 2 ? "todos" : "other", member);
      expect(stream.response.status).toBe(200);
      await stream.frame();
      streams.push(stream);
    }
    const refused = await subscribe("many", "todos", member);
    expect(refused.response.status).toBe(429);
    const error = ((await refused.response.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("limit_exceeded");
    expect(error.message).toContain("unsubscribe");
    // Another viewer has their own allowance.
    const other = await subscribe("many", "todos", stranger);
    expect(other.response.status).toBe(200);
    await other.close();
    await streams.pop()!.close();
    // The server hears of the closed stream when the connection goes; ask until it has (bounded).
    let again = await subscribe("many", "todos", member);
    for (let tries = 0; again.response.status === 429 && tries < 100; tries++) {
      await again.response.text();
      await Bun.sleep(20);
      again = await subscribe("many", "todos", member);
    }
    expect(again.response.status).toBe(200);
    await again.close();
    for (const stream of streams) await stream.close();
  });

  test("pings keep the stream open; a viewer who signed out loses the stream at the next ping", async () => {
    const session = t.gateway.signIn(member);
    const cookie = viewerCookie(t.ctx.keys.viewer, t.ctx.config, { sub: member.sub, session }, "live").split(";")[0]!;
    const stream = await subscribe("live", "members", member, cookie);
    expect(stream.response.status).toBe(200);
    await stream.frame();
    expect(await stream.frame()).toBe(": ping");
    t.gateway.signOut(session);
    expect(await stream.ended()).toBe(true);
  });

  test("pausing the app ends its open streams", async () => {
    const paused = await seedApp(t.ctx, { ...ownerSeed, address: "to-pause", files, config });
    const stream = await subscribe("to-pause", "todos", null);
    await stream.frame();
    await t.ctx.db.update(appsTable).set({ paused: true }).where(eq(appsTable.id, paused.id));
    await announceAppChange(t.ctx, "to-pause");
    expect(await stream.ended()).toBe(true);
    expect((await subscribe("to-pause", "todos", null)).response.status).toBe(503);
  });

  test("stopping the app host ends open streams", async () => {
    const local = await startTestHost();
    try {
      await seedApp(local.ctx, { ...ownerSeed, address: "stop", files, config });
      const response = await local.get("stop", "/_hatch/db/todos/_changes");
      const stream = new EventStream(response);
      await stream.frame();
      await local.host.stop();
      expect(await stream.ended().catch(() => true)).toBe(true);
    } finally {
      await local.close().catch(() => {});
    }
  }, 60_000);
});
