import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deriveKey, signPayload } from "@hatch/contracts";
import { eq, sql } from "drizzle-orm";
import { users } from "../gateway/src/db/schema.ts";
import { invitations } from "../services/orgs/src/db/schema.ts";
import { csrfOf, HostCookieJar } from "./support/cookies.ts";
import { TEST_SECRET, startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf } from "./support/mcp.ts";
import { invitationLink, outboxMails, refused, verificationLink } from "./support/orgs.ts";
import { userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// Issue 13 item 1: anyone can sign up with any address, so an address proves nothing until its owner opens the
// link mailed to it. Until then it claims no invitation by id and sees no app shared with it; the mailed
// invitation link (itself proof of the inbox) keeps working.

const TEST_TIMEOUT_MS = 30_000;
const PASSWORD = "correct horse battery";
const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

/** Signs up through the real page (CSRF and all); returns the browser and where sign-up sent it. */
async function signUp(hatch: TestHatch, email: string, name: string, next = "/") {
  const jar = new HostCookieJar();
  const form = await jar.fetch(`${hatch.baseUrl}/signup?next=${encodeURIComponent(next)}`);
  const done = await jar.post(`${hatch.baseUrl}/signup`, {
    csrf: csrfOf(await form.text()),
    email,
    name,
    password: PASSWORD,
    next,
  });
  expect(done.status).toBe(303);
  return { jar, location: done.headers.get("location") ?? "" };
}

/** Follows a non-public app's sign-in with a browser already signed in on the gateway, until the app's cookie is set. */
async function viewerCookie(jar: HostCookieJar, appUrl: string): Promise<void> {
  let response = await jar.fetch(appUrl);
  for (let hops = 0; hops < 4 && response.status >= 300 && response.status < 400; hops++) {
    const location = new URL(response.headers.get("location")!, appUrl).href;
    if (location === appUrl) return;
    response = await jar.fetch(location);
  }
  throw new Error(`no way back to ${appUrl}: ${response.status}`);
}

async function isVerified(hatch: TestHatch, email: string): Promise<boolean> {
  const [row] = await hatch.gatewayDb
    .select()
    .from(users)
    .where(eq(sql`lower(${users.email})`, email.toLowerCase()));
  return row?.emailVerifiedAt != null;
}

for (const mode of MODES) {
  describe(`email verification (${mode})`, () => {
    let hatch: TestHatch;
    let n = 0;
    const address = (who: string) => `${who}${++n}-${mode}-${process.pid}@example.com`;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
    }, 60_000);
    afterAll(async () => hatch?.stop(), TEST_TIMEOUT_MS);

    test(
      "signing up as an invited address claims neither the invitation by id nor a share until the mailed link is opened",
      async () => {
        const owner = await userWithToken(hatch, { name: "Olga Owner" });
        const ownerAi = await connectClient(hatch, owner.accessToken);
        await callOk(ownerAi, "org_setup", { action: "create", name: "Claim Co" });
        const erin = address("erin");
        await callOk(ownerAi, "org_invite", { emails: [erin], role: "admin" });
        const sharer = await userWithToken(hatch, { name: "Sam Sharer" });
        const sharerAi = await connectClient(hatch, sharer.accessToken);
        const app = await callOk<{ address: string }>(sharerAi, "publish", {
          name: "Erin Only",
          visibility: "private",
          files: [{ path: "index.html", content: page("Erin"), encoding: "utf8" }],
        });
        await callOk(sharerAi, "share", { address: app.address, visibility: "people", add: [erin] });
        const [invitation] = await hatch.databases
          .get("orgs")!
          .select()
          .from(invitations)
          .where(eq(invitations.email, erin));

        // The attacker signs up as erin; sign-up works and mails a link to the real inbox.
        const { jar } = await signUp(hatch, erin, "Not Erin");
        expect(await isVerified(hatch, erin)).toBe(false);
        const home = await (await jar.fetch(`${hatch.baseUrl}/`)).text();
        expect(home).toContain("Your email is not verified yet");
        const ai = await connectClient(
          hatch,
          (await hatch.gateway.auth.issueTokenForScript({ email: erin })).accessToken,
        );
        const listed = await ai.callTool({ name: "org", arguments: {} });
        expect((listed.structuredContent as { invitationsForMe: unknown[] }).invitationsForMe).toEqual([]);
        expect(textOf(listed)).toContain("once the user verifies that email");
        const refusal = await refused(ai, "org_setup", { action: "accept", invitationId: invitation!.id });
        expect(refusal).toContain(`Verify your email first: open the link Hatch mailed to ${erin}`);
        expect(refusal).toContain("or accept through the invitation link");
        expect((await callOk<{ apps: unknown[] }>(ai, "list_tools", { include: "shared" })).apps).toEqual([]);
        expect((await callOk<{ org: unknown }>(ai, "org")).org).toBeNull();
        // Nor does the app host open the app shared with that address.
        const appUrl = `${hatch.appHostUrl.replace("://", `://${app.address}.`)}/`;
        await viewerCookie(jar, appUrl);
        const shut = await jar.fetch(appUrl);
        expect(shut.status).toBe(403);
        expect(await shut.text()).not.toContain("<h1>Erin</h1>");

        // The owner of the inbox opens the link: now all four work (the app from the very next request).
        const opened = await fetch(await verificationLink(hatch, erin));
        expect(opened.status).toBe(200);
        expect(await opened.text()).toContain(`${erin}</strong> is verified`);
        expect(await isVerified(hatch, erin)).toBe(true);
        const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(ai, "org");
        expect(mine.invitationsForMe.map((i) => i.invitationId)).toEqual([invitation!.id]);
        expect(
          (await callOk<{ apps: { address: string }[] }>(ai, "list_tools", { include: "shared" })).apps.map(
            (a) => a.address,
          ),
        ).toEqual([app.address]);
        expect(await callOk(ai, "org_setup", { action: "accept", invitationId: invitation!.id })).toMatchObject({
          status: "joined",
          role: "admin",
        });
        const open = await jar.fetch(appUrl);
        expect(open.status).toBe(200);
        expect(await open.text()).toContain("<h1>Erin</h1>");
        for (const c of [ai, ownerAi, sharerAi]) await c.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "the mailed invitation link works unverified, and verifies the address only when it went to it",
      async () => {
        const owner = await userWithToken(hatch, { name: "Link Owner" });
        const ownerAi = await connectClient(hatch, owner.accessToken);
        await callOk(ownerAi, "org_setup", { action: "create", name: "Link Co" });
        const frank = address("frank");
        const stranger = address("stranger");
        await callOk(ownerAi, "org_invite", { emails: [frank, stranger] });

        const joinWith = async (jar: HostCookieJar, link: string) => {
          const shown = await jar.fetch(link);
          return jar.post(link, { csrf: csrfOf(await shown.text()) });
        };
        const { jar } = await signUp(hatch, frank, "Frank");
        const joined = await joinWith(jar, await invitationLink(hatch, frank));
        expect(joined.status).toBe(200);
        expect(await joined.text()).toContain("You joined Link Co");
        expect(await isVerified(hatch, frank)).toBe(true);

        // Someone else holding a link to another address may join with it, but their own address stays unproven.
        const grace = address("grace");
        const other = await signUp(hatch, grace, "Grace");
        expect((await joinWith(other.jar, await invitationLink(hatch, stranger))).status).toBe(200);
        expect(await isVerified(hatch, grace)).toBe(false);
        await ownerAi.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a link for an email the account no longer has changes nothing; bad, forged and expired links get a clear page",
      async () => {
        const henry = address("henry");
        await signUp(hatch, henry, "Henry");
        const link = await verificationLink(hatch, henry);
        const gateway = hatch.gatewayDb;
        const changed = address("henry-new");
        await gateway.update(users).set({ email: changed }).where(eq(users.email, henry));
        const stale = await fetch(link);
        expect(stale.status).toBe(409);
        expect(await stale.text()).toContain("an email address the account no longer has, so nothing was changed");
        expect(await isVerified(hatch, changed)).toBe(false);

        const token = new URL(link).searchParams.get("token")!;
        const [body, mac] = token.split(".") as [string, string];
        const claims = JSON.parse(Buffer.from(body, "base64url").toString());
        const [user] = await gateway.select().from(users).where(eq(users.email, changed));
        const forged = `${Buffer.from(JSON.stringify({ ...claims, email: changed })).toString("base64url")}.${mac}`;
        const wrongKey = signPayload({ ...claims, email: changed }, deriveKey(TEST_SECRET, "ctx"));
        for (const bad of [forged, wrongKey, "not-a-token", ""]) {
          const response = await fetch(`${hatch.baseUrl}/verify-email?token=${encodeURIComponent(bad)}`);
          expect(response.status).toBe(400);
          const text = await response.text();
          expect(text).toContain("This verification link is not valid");
          expect(text).not.toContain("Error");
        }
        const expired = signPayload(
          { typ: "verify-email", sub: user!.id, email: changed, exp: Math.floor(Date.now() / 1000) - 1 },
          deriveKey(TEST_SECRET, "verify-email"),
        );
        const late = await fetch(`${hatch.baseUrl}/verify-email?token=${expired}`);
        expect(late.status).toBe(410);
        expect(await late.text()).toContain("This verification link expired");
        expect(await isVerified(hatch, changed)).toBe(false);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "with orgs down, sign-up still works and says the mail is not sent yet; resending later sends it, within a limit",
      async () => {
        const ivy = address("ivy");
        await hatch.stopService("orgs");
        let signedUp;
        try {
          signedUp = await signUp(hatch, ivy, "Ivy", "/dashboard/tokens");
        } finally {
          await hatch.startService("orgs");
        }
        const { jar, location } = signedUp;
        expect(location).toBe(`/verify-email?${new URLSearchParams({ unsent: "1", next: "/dashboard/tokens" })}`);
        const status = await (await jar.fetch(`${hatch.baseUrl}${location}`)).text();
        expect(status).toContain("the verification mail could not be sent yet");
        expect((await outboxMails(hatch)).filter((m) => m.to === ivy)).toEqual([]);

        const resend = () =>
          jar.post(`${hatch.baseUrl}/verify-email/resend`, { csrf: csrfOf(status), next: "/dashboard/tokens" });
        expect((await jar.post(`${hatch.baseUrl}/verify-email/resend`, { next: "/" })).status).toBe(403);
        for (let i = 0; i < 5; i++) {
          const sent = await resend();
          expect(sent.status).toBe(200);
          expect(await sent.text()).toContain(`A new verification link went to <strong>${ivy}</strong>`);
        }
        const limited = await resend();
        expect(limited.status).toBe(429);
        expect(await limited.text()).toContain("5 verification mails went to");
        expect((await fetch(await verificationLink(hatch, ivy))).status).toBe(200);
        expect(await (await jar.fetch(`${hatch.baseUrl}/verify-email`)).text()).toContain("Email verified");
      },
      TEST_TIMEOUT_MS,
    );
  });
}

describe("bun run admin user:create", () => {
  test(
    "creates a verified user",
    async () => {
      const dataDir = `${process.env.TMPDIR ?? "/tmp"}/hatch-admin-${process.pid}-${Date.now()}`;
      const env = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "warn" };
      delete (env as Record<string, string | undefined>).DATABASE_URL;
      const run = Bun.spawnSync(
        [
          "bun",
          "scripts/admin.ts",
          "user:create",
          "--email",
          "Admin.Made@example.com",
          "--password",
          PASSWORD,
          "--name",
          "Admin Made",
        ],
        { env, cwd: `${import.meta.dir}/..` },
      );
      expect(run.stderr.toString()).toBe("");
      expect(run.stdout.toString()).toContain("email verified");
      const { openEmbeddedPostgres } = await import("@hatch/platform");
      const pglite = await openEmbeddedPostgres(`${dataDir}/pg`);
      try {
        const rows = await pglite.query<{ verified: boolean }>(
          "select email_verified_at is not null as verified from gateway.users where email = 'Admin.Made@example.com'",
        );
        expect(rows.rows).toEqual([{ verified: true }]);
      } finally {
        await pglite.close();
        await Bun.$`rm -rf ${dataDir}`.quiet();
      }
    },
    TEST_TIMEOUT_MS,
  );
});
