import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { count, countDistinct, eq, gte, inArray } from "drizzle-orm";
import { outbox as appsOutbox } from "../services/apps/src/db/schema.ts";
import { activity, invitations } from "../services/orgs/src/db/schema.ts";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { dayOffset, mailCount, outboxMails, refused, seedApp, today } from "./support/orgs.ts";
import { MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
type OrgOut = {
  org: { id: string; name: string; memberCount: number } | null;
  role: string | null;
  /** What the user may do (org's capabilities that are true). */
  may: string[];
  invitationsForMe: { invitationId: string; org: { name: string }; role: string }[];
};

// Organizations end to end: real MCP clients of several users through the gateway, the orgs and apps
// services on the bus, over every mode. The tests build on each other, in order.
// bunfig's test timeout is not applied (Bun 1.4.5 keeps 5 s); these tests wait on events and browsers.
const TEST_TIMEOUT_MS = 30_000;

for (const mode of MODES) {
  describe(`organizations through the gateway (${mode})`, () => {
    let hatch: TestHatch;
    let alice: User, bob: User, carol: User, dave: User;
    let a: Client, b: Client, c: Client, d: Client;
    let orgId = "";
    /** The app Dave publishes in the organization. */
    let site = "";

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice Owner" });
      bob = await userWithToken(hatch, { name: "Bob Admin" });
      carol = await userWithToken(hatch, { name: "Carol Manager" });
      dave = await userWithToken(hatch, { name: "Dave Member" });
      [a, b, c, d] = await Promise.all([
        connectClient(hatch, alice.accessToken),
        connectClient(hatch, bob.accessToken),
        connectClient(hatch, carol.accessToken),
        connectClient(hatch, dave.accessToken),
      ]);
    }, 60_000);
    afterAll(async () => {
      for (const client of [a, b, c, d]) await client?.close();
      await hatch?.stop();
    });

    /** Joins `client`'s user to the organization through the invitation `org` lists for them. */
    async function join(client: Client, orgName: string) {
      const mine = await callOk<OrgOut>(client, "org");
      const invitation = mine.invitationsForMe.find((i) => i.org.name === orgName);
      expect(invitation).toBeDefined();
      return callOk<{ status: string; role: string }>(client, "org_setup", {
        action: "accept",
        invitationId: invitation!.invitationId,
      });
    }

    test(
      "org_setup create: the caller owns a company account from the very next call",
      async () => {
        const created = await callOk<{ status: string; role: string; org: { id: string } }>(a, "org_setup", {
          action: "create",
          name: "Acme",
        });
        expect(created).toMatchObject({ status: "created", role: "owner" });
        expect(await callOk(a, "whoami")).toMatchObject({ kind: "company" });
        const mine = await callOk<OrgOut>(a, "org");
        expect(mine.org).toMatchObject({ id: created.org.id, name: "Acme", memberCount: 1 });
        expect(mine.may).toEqual([
          "invite",
          "manageMembers",
          "pauseApps",
          "readActivity",
          "setCompanyDomain",
          "manageBilling",
          "transferOwnership",
        ]);
        orgId = created.org.id;
        expect(await refused(a, "org_setup", { action: "create", name: "Second" })).toContain(
          "already act in the organization Acme",
        );
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "50 people invited in one call get 50 mails; 51 are refused and nothing is sent",
      async () => {
        await callOk(a, "org_invite", { emails: [bob.email], role: "admin" });
        await callOk(a, "org_invite", { emails: [carol.email], role: "manager" });
        const before = await mailCount(hatch);
        const fifty = [dave.email, ...Array.from({ length: 49 }, (_, i) => `guest${i}-${mode}@example.com`)];
        const invited = await callOk<{ invited: string[]; skipped: unknown[] }>(a, "org_invite", {
          emails: fifty,
          role: "member",
          message: "Welcome aboard",
        });
        expect(invited.invited).toHaveLength(50);
        expect(invited.skipped).toEqual([]);
        expect(new Set(invited.invited)).toEqual(new Set(fifty.map((e) => e.toLowerCase())));
        expect((await mailCount(hatch)) - before).toBe(50);
        const mails = await outboxMails(hatch);
        expect(new Set(mails.map((m) => m.to))).toEqual(new Set(fifty.map((e) => e.toLowerCase())));
        expect(mails.find((m) => m.to === dave.email)?.body).toContain("Welcome aboard");

        const text = await refused(a, "org_invite", {
          emails: [...fifty.map((e) => `x${e}`), "one-too-many@example.com"],
        });
        expect(text).toContain("At most 50 people");
        expect(await mailCount(hatch)).toBe(before + 50);
        const again = await callOk<{ invited: unknown[]; skipped: { email: string; reason: string }[] }>(
          a,
          "org_invite",
          { emails: [dave.email] },
        );
        expect(again.invited).toEqual([]);
        expect(again.skipped[0]?.reason).toContain("already invited");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "invited people find their invitation with org and join with org_setup accept",
      async () => {
        expect(await join(b, "Acme")).toMatchObject({ status: "joined", role: "admin" });
        expect(await join(c, "Acme")).toMatchObject({ status: "joined", role: "manager" });
        expect(await join(d, "Acme")).toMatchObject({ status: "joined", role: "member" });
        expect(await callOk(d, "whoami")).toMatchObject({ kind: "company" });
        const listing = await callOk<{ members: { email: string; role: string }[]; invitations: unknown[] }>(
          a,
          "org_members",
        );
        expect(listing.members.map((m) => [m.email, m.role])).toEqual([
          [alice.email, "owner"],
          [bob.email, "admin"],
          [carol.email, "manager"],
          [dave.email, "member"],
        ]);
        expect(listing.invitations).toHaveLength(49);
        expect((await callOk<{ invitations: unknown[] }>(d, "org_members")).invitations).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a member without share_public cannot create a public app by publishing; nothing is created",
      async () => {
        const files = [{ path: "index.html", content: "<h1>Acme</h1>", encoding: "utf8" }];
        const text = await refused(d, "publish", { name: "Acme Site", visibility: "public", files });
        expect(text).toContain("does not allow making apps public");
        expect(text).toContain("(forbidden)");
        expect((await callOk<{ apps: unknown[] }>(d, "list_tools")).apps).toEqual([]);
        // Same refusal when the manifest needs uploads: before any upload is asked for.
        const manifest = [
          { path: "index.html", sha256: new Bun.CryptoHasher("sha256").update("<h1>new</h1>").digest("hex"), size: 12 },
        ];
        expect(await refused(d, "publish", { name: "Acme Site", visibility: "public", manifest })).toContain(
          "(forbidden)",
        );
        // With the permission, the member may; the next test publishes that way.
        await callOk(a, "org_member_update", { email: dave.email, action: "update", permissions: ["share_public"] });
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a member cannot pause apps or read the activity log; a manager pauses (the app answers 503) and unpauses",
      async () => {
        // Publishing an app as public still asks the user themselves (here: a form they confirm).
        const member = await connectFormClient(hatch, dave.accessToken, () => ({
          action: "accept",
          content: { confirm: true },
        }));
        const published = await callOk<{ address: string; url: string }>(member.client, "publish", {
          name: "Acme Site",
          visibility: "public",
          files: [{ path: "index.html", content: "<h1>Acme</h1>", encoding: "utf8" }],
        });
        expect(member.asked).toEqual([expect.stringContaining('Make the new app "Acme Site" public?')]);
        await member.client.close();
        site = published.address;
        const address = site;
        expect((await fetch(published.url)).status).toBe(200);
        expect(await refused(d, "org_app_pause", { address, paused: true })).toContain("(forbidden)");
        expect(await refused(d, "org_activity")).toContain("(forbidden)");
        expect((await callOk<{ apps: { address: string }[] }>(d, "org_apps")).apps.map((x) => x.address)).toEqual([
          address,
        ]);

        expect(await callOk(c, "org_app_pause", { address, paused: true, reason: "spam reports" })).toEqual({
          address,
          paused: true,
          changed: true,
        });
        expect(await callOk(c, "org_app_pause", { address, paused: true })).toEqual({
          address,
          paused: true,
          changed: false,
        });
        const paused = await fetch(published.url);
        expect(paused.status).toBe(503);
        expect(await paused.text()).toContain("paused");
        expect(
          (await callOk<{ apps: { address: string; paused: boolean }[] }>(c, "org_apps", { paused: true })).apps,
        ).toMatchObject([{ address, paused: true }]);
        expect(await callOk(b, "org_app_pause", { address, paused: false })).toEqual({
          address,
          paused: false,
          changed: true,
        });
        expect((await fetch(published.url)).status).toBe(200);
        expect(await refused(c, "org_app_pause", { address: "no-such-app", paused: true })).toContain("(not_found)");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "roles: an admin cannot transfer ownership, a manager cannot raise anyone above themselves",
      async () => {
        expect(await refused(b, "org_member_update", { email: dave.email, action: "transfer_ownership" })).toContain(
          "Only the owner",
        );
        expect(
          await refused(d, "org_member_update", { email: carol.email, action: "update", role: "member" }),
        ).toContain("(forbidden)");
        expect(await refused(c, "org_member_update", { email: dave.email, action: "update", role: "admin" })).toContain(
          "cannot make anyone admin",
        );
        expect(
          await refused(c, "org_member_update", { email: dave.email, action: "update", permissions: ["billing"] }),
        ).toContain("billing");
        expect(await refused(c, "org_member_update", { email: alice.email, action: "remove" })).toContain(
          "owner and cannot be removed",
        );
        const updated = await callOk<{ member: { role: string; permissions: string[] } }>(b, "org_member_update", {
          email: dave.email,
          action: "update",
          permissions: ["custom_domains"],
        });
        expect(updated.member).toEqual(
          expect.objectContaining({ role: "member", permissions: ["publish", "custom_domains"] }),
        );
        expect(
          await refused(b, "org_invite", { emails: ["x@example.com"], permissions: ["billing", "nonsense"] }),
        ).toContain("Invalid arguments");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "removal shows the apps that will move, asks who receives them, and the removed person loses access at once",
      async () => {
        const eve = await userWithToken(hatch, { name: "Eve Leaver" });
        const e = await connectClient(hatch, eve.accessToken);
        await callOk(a, "org_invite", { emails: [eve.email] });
        await join(e, "Acme");
        for (const [address, name] of [
          [`eve-one-${mode}`, "Eve One"],
          [`eve-two-${mode}`, "Eve Two"],
        ] as const) {
          await seedApp(hatch, {
            address,
            name,
            accountId: orgId,
            owner: { id: eve.id, email: eve.email, name: eve.name },
          });
        }
        expect((await callOk<{ apps: unknown[] }>(e, "org_apps")).apps.length).toBeGreaterThan(0);

        const declining = await connectFormClient(hatch, alice.accessToken, () => ({ action: "decline" }));
        expect(
          textOf(
            await declining.client.callTool({
              name: "org_member_update",
              arguments: { email: eve.email, action: "remove" },
            }),
          ),
        ).toContain("nothing was changed");
        expect(await callOk(e, "whoami")).toMatchObject({ kind: "company" });
        await declining.client.close();

        const { client, asked, schemas } = await connectFormClient(hatch, alice.accessToken, () => ({
          action: "accept",
          content: { appsRecipient: carol.email },
        }));
        const removed = await callOk<{
          status: string;
          member: null;
          appsToMove: { address: string; name: string }[];
          appsRecipient: string;
        }>(client, "org_member_update", { email: eve.email, action: "remove" });
        expect(asked).toHaveLength(1);
        expect(asked[0]).toContain("Eve One");
        expect(asked[0]).toContain("Eve Two");
        expect(
          (schemas[0] as { properties: { appsRecipient: { enum: string[] } } }).properties.appsRecipient.enum,
        ).toEqual([alice.email, bob.email, carol.email, dave.email]);
        expect(removed).toEqual({
          status: "removed",
          member: null,
          appsToMove: [
            { address: `eve-one-${mode}`, name: "Eve One" },
            { address: `eve-two-${mode}`, name: "Eve Two" },
          ],
          appsRecipient: carol.email,
        });
        await client.close();

        expect(await callOk(e, "whoami")).toMatchObject({ kind: "personal" });
        expect(await refused(e, "org_apps")).toContain("not in an organization");
        const carols = await callOk<{ apps: { address: string; owner: { email: string } }[] }>(a, "org_apps", {
          owner: carol.email,
        });
        expect(carols.apps.map((x) => x.address)).toEqual([`eve-one-${mode}`, `eve-two-${mode}`]);
        expect(
          (await callOk<{ members: { email: string }[] }>(a, "org_members")).members.map((m) => m.email),
        ).not.toContain(eve.email);
        await e.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "without form elicitation, removal gives a confirm link where the signed-in manager picks the recipient",
      async () => {
        const gina = await userWithToken(hatch, { name: "Gina Gone" });
        const g = await connectClient(hatch, gina.accessToken);
        await callOk(a, "org_invite", { emails: [gina.email] });
        await join(g, "Acme");
        await seedApp(hatch, {
          address: `gina-app-${mode}`,
          name: "Gina App",
          accountId: orgId,
          owner: { id: gina.id, email: gina.email, name: gina.name },
        });

        const asked = await callOk<{
          status: string;
          appsToMove: { address: string }[];
          userAction: { kind: string; url: string };
        }>(a, "org_member_update", { email: gina.email, action: "remove" });
        expect(asked).toMatchObject({
          status: "needs_user",
          appsToMove: [{ address: `gina-app-${mode}` }],
          userAction: { kind: "open_link" },
        });
        expect(await callOk(g, "whoami")).toMatchObject({ kind: "company" });

        const path = new URL(asked.userAction.url).pathname;
        const browser = new Browser((p, init) => fetch(`${hatch.baseUrl}${p}`, { ...init, redirect: "manual" }));
        expect((await browser.signIn(alice.email, "correct horse battery")).status).toBe(303);
        const form = await (await browser.get(path)).text();
        expect(form).toContain("Gina App");
        const done = await browser.post(path, { csrf: csrfOf(form), action: "confirm", "f.appsRecipient": dave.email });
        expect(done.status).toBe(200);
        expect(await done.text()).toContain(`Removed ${gina.email}`);
        expect(await callOk(g, "whoami")).toMatchObject({ kind: "personal" });
        expect(
          (await callOk<{ apps: { address: string }[] }>(a, "org_apps", { owner: dave.email })).apps.map(
            (x) => x.address,
          ),
        ).toContain(`gina-app-${mode}`);
        await g.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the activity log: newest first, who, which app, what and through which client; filtered by date, person, app and action",
      async () => {
        const address = site;
        const all = await eventually(async () => {
          const log = await callOk<Activity>(a, "org_activity");
          return log.entries.filter((x) => x.action === "member.removed").length === 2 &&
            log.entries.filter((x) => x.action === "app.moved").length === 3
            ? log
            : undefined;
        }, "removal and moves in the log");
        const times = all.entries.map((x) => x.date);
        expect([...times].sort().reverse()).toEqual(times);
        expect(all.entries.find((x) => x.action === "org.created")).toBeUndefined(); // older than the newest 50
        expect(all.entries.length).toBe(50);
        expect(all.hasMore).toBe(true);

        const paused = await a.callTool({ name: "org_activity", arguments: { action: "app.paused" } });
        expect((paused.structuredContent as Activity).entries).toEqual([
          { date: expect.any(String), person: carol.email, app: address, action: "app.paused" },
        ]);
        const line = textOf(paused).split("\n")[1]!;
        for (const said of [`Carol Manager <${carol.email}>`, address, "spam reports", "(via claude-code)"])
          expect(line).toContain(said);
        const byBob = await callOk<Activity>(a, "org_activity", { person: bob.email });
        expect(byBob.entries.map((x) => x.action).sort()).toEqual(["app.unpaused", "member.joined", "member.updated"]);
        const aboutSite = await callOk<Activity>(a, "org_activity", { app: address });
        expect(aboutSite.entries.every((x) => x.app === address)).toBe(true);
        expect(aboutSite.entries.map((x) => x.action).filter((x) => x.endsWith("paused"))).toEqual([
          "app.unpaused",
          "app.paused",
        ]);
        expect((await callOk<Activity>(a, "org_activity", { from: dayOffset(1) })).entries).toEqual([]);
        expect((await callOk<Activity>(a, "org_activity", { to: dayOffset(-1) })).entries).toEqual([]);
        expect(
          (await callOk<Activity>(a, "org_activity", { from: today(), to: today(), action: "member.removed" })).entries,
        ).toHaveLength(2);
        const one = await callOk<Activity>(a, "org_activity", { action: "invitation.created", limit: 1 });
        expect(one.entries).toHaveLength(1);
        expect(one.hasMore).toBe(true);
        // hasMore is left out when nothing older matches.
        expect(await callOk<Activity>(c, "org_activity", { action: "org.created" })).toEqual({
          entries: [expect.objectContaining({ person: alice.email, action: "org.created" })],
        });
        expect(await refused(a, "org_activity", { from: today(), to: dayOffset(-1) })).toContain("swap them");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "stop orgs, act through the apps service, start orgs again: every entry appears exactly once",
      async () => {
        const address = site;
        const appsDb = hatch.databases.get("apps")!;
        await callOk(a, "org_apps"); // the gateway now holds Alice's session, so apps calls work while orgs is down
        await hatch.stopService("orgs");
        let written: { id: string; subject: string }[];
        try {
          expect(await refused(b, "whoami")).toContain("(unavailable)");
          const marker = new Date();
          for (const paused of [true, false, true, false]) await callOk(a, "org_app_pause", { address, paused });
          // The pauses' events (the app host's counted opens may be written meanwhile: app.opened).
          written = (
            await appsDb
              .select({ id: appsOutbox.id, subject: appsOutbox.subject })
              .from(appsOutbox)
              .where(gte(appsOutbox.createdAt, marker))
          ).filter((row) => /\.(un)?paused$/.test(row.subject));
          expect(written).toHaveLength(4);
        } finally {
          // Started again whatever happened above: the tests after this one need orgs.
          await hatch.startService("orgs");
        }

        const orgsDb = hatch.databases.get("orgs")!;
        const ids = written.map((w) => w.id);
        const recorded = await eventually(async () => {
          const rows = await orgsDb
            .select({ id: activity.eventId })
            .from(activity)
            .where(inArray(activity.eventId, ids));
          return rows.length === ids.length ? rows : undefined;
        }, "the four events in the activity log");
        expect(recorded.map((r) => r.id).sort()).toEqual([...ids].sort());
        const log = await callOk<Activity>(a, "org_activity", { app: address });
        expect(log.entries.map((x) => x.action).filter((x) => x.endsWith("paused"))).toEqual([
          "app.unpaused",
          "app.paused",
          "app.unpaused",
          "app.paused",
          "app.unpaused",
          "app.paused",
        ]);
        const [total] = await orgsDb
          .select({ n: count(), distinct: countDistinct(activity.eventId) })
          .from(activity)
          .where(eq(activity.accountId, orgId));
        expect(total?.n).toBe(total?.distinct);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "another organization's manager can neither see nor pause our apps, nor read our log",
      async () => {
        const frank = await userWithToken(hatch, { name: "Frank Other" });
        const f = await connectClient(hatch, frank.accessToken);
        await callOk(f, "org_setup", { action: "convert", name: "Other Co" });
        expect(await callOk(f, "whoami")).toMatchObject({ kind: "company" });
        expect((await callOk<{ apps: unknown[] }>(f, "org_apps")).apps).toEqual([]);
        expect(await refused(f, "org_app_pause", { address: site, paused: true })).toContain("(not_found)");
        const theirs = await callOk<Activity>(f, "org_activity");
        expect(theirs.entries.map((x) => x.action)).toEqual(["org.converted"]);
        expect(await refused(f, "org_member_update", { email: dave.email, action: "remove" })).toContain("(not_found)");
        await f.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "revoked and expired invitations cannot be accepted; the owner transfers ownership and stays an admin",
      async () => {
        const guest = `guest0-${mode}@example.com`;
        const revoked = await callOk<{ revoked: string[]; skipped: unknown[] }>(c, "org_invite", {
          action: "revoke",
          emails: [guest, "never-invited@example.com"],
        });
        expect(revoked).toMatchObject({
          revoked: [guest],
          skipped: [{ email: "never-invited@example.com", reason: "no pending invitation" }],
        });
        const late = await userWithToken(hatch, { name: "Late Guest" });
        const orgsDb = hatch.databases.get("orgs")!;
        await callOk(a, "org_invite", { emails: [late.email] });
        await orgsDb
          .update(invitations)
          .set({ expiresAt: new Date(Date.now() - 1000) })
          .where(eq(invitations.email, late.email));
        const l = await connectClient(hatch, late.accessToken);
        expect((await callOk<OrgOut>(l, "org")).invitationsForMe).toEqual([]);
        const [row] = await orgsDb
          .select({ id: invitations.id })
          .from(invitations)
          .where(eq(invitations.email, late.email));
        expect(await refused(l, "org_setup", { action: "accept", invitationId: row!.id })).toContain("expired");
        expect(await refused(d, "org_setup", { action: "accept", invitationId: row!.id })).toContain(
          "no pending invitation",
        );
        await l.close();

        const moved = await callOk<{ status: string; member: { email: string; role: string } }>(
          a,
          "org_member_update",
          { email: bob.email, action: "transfer_ownership" },
        );
        expect(moved).toMatchObject({ status: "transferred", member: { email: bob.email, role: "owner" } });
        const nowAdmin = await callOk<OrgOut>(a, "org");
        expect(nowAdmin.role).toBe("admin");
        expect(nowAdmin.may).toContain("setCompanyDomain");
        expect(nowAdmin.may).not.toContain("transferOwnership");
        expect((await callOk<OrgOut>(b, "org")).may).toContain("transferOwnership");
        expect(await refused(a, "org_member_update", { email: bob.email, action: "remove" })).toContain(
          "owner and cannot be removed",
        );
      },
      TEST_TIMEOUT_MS,
    );
  });
}

/** org_activity's structured content; the text says each entry in words, with the person's name and the client. */
type Activity = {
  entries: { date: string; person?: string; app?: string; action: string }[];
  hasMore?: true;
};
