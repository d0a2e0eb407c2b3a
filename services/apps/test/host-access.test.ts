import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { signViewerTicket } from "@hatch/contracts";
import { appPeople, appsTable } from "../src/db/schema.ts";
import { viewerCookie } from "../src/http/viewer.ts";
import { startTestHost, type TestHost, announceAppChange } from "./support/host.ts";
import { seedApp } from "./support/seed.ts";

const GATEWAY = "http://localhost:39999";
const owner = { id: "user-owner", email: "owner@example.com" };
const ownerViewer = { sub: owner.id, email: owner.email, account: "acct-company" };
const colleague = { sub: "user-colleague", email: "colleague@example.com", account: "acct-company" };
const friend = { sub: "user-friend", email: "Friend@Example.com", emailVerified: true, account: "acct-friend" };
/** Signed up with the friend's address but never opened the verification mail: proves nothing about it. */
const friendUnverified = {
  sub: "user-squatter",
  email: "friend@example.com",
  emailVerified: false,
  account: "acct-squatter",
};
const stranger = { sub: "user-stranger", email: "stranger@example.com", account: "acct-stranger" };

describe("app host: who may open an app", () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost({ gatewayUrl: GATEWAY });
    const files = { "index.html": "<h1>Secret</h1>", "notes.html": "<h1>Notes</h1>", "assets/app-Ab12Cd34.js": "1" };
    const base = { owner, accountId: "acct-company", files };
    await seedApp(t.ctx, { ...base, address: "mine", visibility: "private" });
    await seedApp(t.ctx, { ...base, address: "team", visibility: "org" });
    await seedApp(t.ctx, { ...base, address: "shared", visibility: "people", people: ["friend@example.com"] });
    await seedApp(t.ctx, { ...base, address: "open", visibility: "public" });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A viewer's ticket for one app, for a fresh browser session on the stand-in gateway. */
  function ticketFor(address: string, viewer: typeof stranger, nowMs = Date.now()): string {
    return signViewerTicket(t.ctx.keys.viewer, { sub: viewer.sub, session: t.gateway.signIn(viewer), address }, nowMs);
  }

  /** What the gateway does for a signed-in viewer: a ticket for this app, then the app's /_hatch/auth. */
  async function signIn(
    address: string,
    viewer: typeof stranger,
    path = "/",
  ): Promise<{ cookie: string; location: string; setCookie: string; session: string }> {
    const session = t.gateway.signIn(viewer);
    const ticket = signViewerTicket(t.ctx.keys.viewer, { sub: viewer.sub, session, address });
    const response = await t.get(address, `/_hatch/auth?${new URLSearchParams({ ticket, path })}`);
    expect(response.status).toBe(302);
    const setCookie = response.headers.get("set-cookie") ?? "";
    return { cookie: setCookie.split(";")[0]!, location: response.headers.get("location") ?? "", setCookie, session };
  }

  test("an anonymous viewer of a non-public app is sent to the gateway's sign-in, with the path to come back to", async () => {
    for (const address of ["mine", "team", "shared"]) {
      for (const path of ["/notes?tab=2", "/assets/app-Ab12Cd34.js"]) {
        const response = await t.get(address, path);
        expect(response.status).toBe(302);
        expect(response.headers.get("location")).toBe(
          `${GATEWAY}/apps/signin?${new URLSearchParams({ app: address, path })}`,
        );
        expect(response.headers.get("cache-control")).toBe("no-store");
      }
    }
    const open = await t.get("open", "/");
    expect(open.status).toBe(200);
    expect(open.headers.get("cache-control")).toBe("no-cache");
  });

  test("the ticket sets a host-only, HttpOnly, SameSite=Lax cookie for an hour and returns to the path", async () => {
    const { location, setCookie } = await signIn("mine", ownerViewer, "/notes?tab=2");
    expect(location).toBe(`${t.origin("mine")}/notes?tab=2`);
    expect(setCookie).toStartWith("hatch_viewer=");
    const attributes = setCookie
      .split(";")
      .slice(1)
      .map((a) => a.trim().toLowerCase());
    expect(attributes.sort()).toEqual(["httponly", "max-age=3600", "path=/", "samesite=lax"]);
  });

  test("the owner opens a private app; its files are private to shared caches", async () => {
    const { cookie } = await signIn("mine", ownerViewer);
    const page = await t.get("mine", "/notes", { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe("<h1>Notes</h1>");
    expect(page.headers.get("cache-control")).toBe("private, no-cache");
    const asset = await t.get("mine", "/assets/app-Ab12Cd34.js", { headers: { cookie } });
    expect(asset.headers.get("cache-control")).toBe("private, max-age=31536000, immutable");
    await asset.text();
  });

  test("another signed-in user gets a 403 naming their email, with a way to switch accounts", async () => {
    const { cookie } = await signIn("mine", stranger);
    const response = await t.get("mine", "/notes", { headers: { cookie } });
    expect(response.status).toBe(403);
    const body = await response.text();
    expect(body).toContain("stranger@example.com");
    expect(body).not.toContain("<h1>Notes</h1>");
    const href = `${GATEWAY}/apps/signin?${new URLSearchParams({ app: "mine", path: "/notes", switch: "1" })}`;
    expect(body).toContain(`href="${href.replaceAll("&", "&amp;")}"`);
  });

  test("org: people acting as the app's account may open it, others may not", async () => {
    const inside = await signIn("team", colleague);
    expect((await t.get("team", "/", { headers: { cookie: inside.cookie } })).status).toBe(200);
    const outside = await signIn("team", friend);
    expect((await t.get("team", "/", { headers: { cookie: outside.cookie } })).status).toBe(403);
  });

  test("people: the owner and the verified emails it is shared with (any case), nobody else", async () => {
    for (const [viewer, status] of [
      [ownerViewer, 200],
      [friend, 200],
      [friendUnverified, 403],
      [colleague, 403],
      [stranger, 403],
    ] as const) {
      const { cookie } = await signIn("shared", viewer);
      const response = await t.get("shared", "/", { headers: { cookie } });
      expect({ who: viewer.email, status: response.status }).toEqual({ who: viewer.email, status });
      await response.text();
    }
  });

  test("removing a person takes effect on their next request once the change is announced", async () => {
    const app = await seedApp(t.ctx, {
      owner,
      address: "revoke",
      visibility: "people",
      people: ["friend@example.com"],
      files: { "index.html": "x" },
    });
    const { cookie } = await signIn("revoke", friend);
    expect((await t.get("revoke", "/", { headers: { cookie } })).status).toBe(200);
    await t.ctx.db.delete(appPeople).where(eq(appPeople.appId, app.id));
    await announceAppChange(t.ctx, "revoke");
    expect((await t.get("revoke", "/", { headers: { cookie } })).status).toBe(403);
    await t.ctx.db.update(appsTable).set({ visibility: "public" }).where(eq(appsTable.id, app.id));
    await announceAppChange(t.ctx, "revoke");
    expect((await t.get("revoke", "/")).status).toBe(200);
  });

  test("a cookie of one app is worth nothing on another", async () => {
    const { cookie } = await signIn("team", ownerViewer);
    const response = await t.get("mine", "/", { headers: { cookie } });
    expect(response.status).toBe(302);
  });

  test("a forged or expired cookie counts as no cookie", async () => {
    const { cookie } = await signIn("mine", stranger);
    const [name, value] = cookie.split("=") as [string, string];
    const [body, mac] = value.split(".") as [string, string];
    const claims = JSON.parse(Buffer.from(body, "base64url").toString());
    const forged = `${name}=${Buffer.from(JSON.stringify({ ...claims, sub: owner.id })).toString("base64url")}.${mac}`;
    expect((await t.get("mine", "/", { headers: { cookie: forged } })).status).toBe(302);
    const old = viewerCookie(
      t.ctx.keys.viewer,
      t.ctx.config,
      { sub: owner.id, session: t.gateway.signIn(ownerViewer) },
      "mine",
      Date.now() - 2 * 3_600_000,
    ).split(";")[0]!;
    expect((await t.get("mine", "/", { headers: { cookie: old } })).status).toBe(302);
  });

  test("a ticket works once, for its own app, within its minute", async () => {
    const ticket = ticketFor("mine", ownerViewer);
    const first = await t.get("mine", `/_hatch/auth?ticket=${ticket}&path=/`);
    expect(first.status).toBe(302);
    const replay = await t.get("mine", `/_hatch/auth?ticket=${ticket}&path=/`);
    expect(replay.status).toBe(400);
    expect(replay.headers.get("set-cookie")).toBeNull();
    expect(await replay.text()).toContain("already used");

    const forTeam = ticketFor("team", ownerViewer);
    const wrongApp = await t.get("mine", `/_hatch/auth?ticket=${forTeam}`);
    expect(wrongApp.status).toBe(400);
    expect(wrongApp.headers.get("set-cookie")).toBeNull();
    expect(await wrongApp.text()).toContain("made for another app");

    const expired = ticketFor("mine", ownerViewer, Date.now() - 120_000);
    const late = await t.get("mine", `/_hatch/auth?ticket=${expired}`);
    expect(late.status).toBe(400);
    expect(await late.text()).toContain("expired");

    const missing = await t.get("mine", "/_hatch/auth");
    expect(missing.status).toBe(400);
    await missing.text();
  });

  test("after sign-in the browser only ever goes to a path on the app's own origin", async () => {
    for (const path of ["//evil.example/steal", "/\\evil.example", "https://evil.example/", "/\t/evil.example"]) {
      const { location } = await signIn("mine", ownerViewer, path);
      expect({ path, location }).toEqual({ path, location: `${t.origin("mine")}/` });
    }
  });

  test("the cookie names the session, not the person: it carries no email or account", async () => {
    const { cookie, session } = await signIn("mine", ownerViewer);
    const claims = JSON.parse(Buffer.from(cookie.split("=")[1]!.split(".")[0]!, "base64url").toString());
    expect(claims).toMatchObject({ v: 2, typ: "viewer-cookie", sub: owner.id, session, address: "mine" });
    expect(JSON.stringify(claims)).not.toContain(owner.email);
    expect(JSON.stringify(claims)).not.toContain("acct-company");
  });

  test("when the Hatch session ends, the cookie is cleared and the viewer sent to sign in on the next request", async () => {
    const { cookie, session } = await signIn("mine", ownerViewer);
    expect((await t.get("mine", "/", { headers: { cookie } })).status).toBe(200);
    t.gateway.signOut(session);
    const after = await t.get("mine", "/notes", { headers: { cookie } });
    expect(after.status).toBe(302);
    expect(after.headers.get("location")).toBe(
      `${GATEWAY}/apps/signin?${new URLSearchParams({ app: "mine", path: "/notes" })}`,
    );
    expect(after.headers.get("set-cookie")).toBe("hatch_viewer=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
  });

  test("who the viewer is comes from the gateway, on the next request after a change is broadcast", async () => {
    const mover = { sub: "user-mover", email: "mover@example.com", account: "acct-company" };
    const { cookie } = await signIn("team", mover);
    expect((await t.get("team", "/", { headers: { cookie } })).status).toBe(200);
    t.gateway.changeAccount(mover.sub, "acct-mover");
    const refused = await t.get("team", "/", { headers: { cookie } });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("mover@example.com");
  });

  test("a cookie whose session belongs to someone else counts as signed out", async () => {
    const session = t.gateway.signIn(stranger);
    const cookie = viewerCookie(t.ctx.keys.viewer, t.ctx.config, { sub: owner.id, session }, "mine").split(";")[0]!;
    expect((await t.get("mine", "/", { headers: { cookie } })).status).toBe(302);
  });

  test("a public app never asks the gateway; when the gateway is down a non-public app is refused with a 503 page", async () => {
    const { cookie } = await signIn("team", colleague);
    const askedBefore = t.gateway.asked;
    const open = await t.get("open", "/", { headers: { cookie } });
    expect(open.status).toBe(200);
    await open.text();
    expect(t.gateway.asked).toBe(askedBefore);
    t.gateway.down();
    try {
      const refused = await t.get("team", "/", { headers: { cookie } });
      expect(refused.status).toBe(503);
      const body = await refused.text();
      expect(body).toContain("Hatch could not check who you are; try again in a minute.");
      expect(body).not.toContain("Secret");
      expect((await t.get("open", "/")).status).toBe(200);
    } finally {
      t.gateway.up();
    }
  });

  test("on https the cookie is __Host- prefixed and Secure", () => {
    const cookie = viewerCookie(t.ctx.keys.viewer, { appsProtocol: "https:" }, { sub: owner.id, session: "s" }, "mine");
    expect(cookie).toStartWith("__Host-hatch_viewer=");
    expect(cookie).toContain("; Secure");
    expect(cookie).not.toContain("Domain");
  });
});
