import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gatewayConfig, loadGatewayConfig } from "@hatch/gateway";
import { callRpc } from "@hatch/platform";
import { isToolError, MailOutboxSchema, rpcMethods } from "@hatch/contracts";
import { csrfOf, HostCookieJar } from "./support/cookies.ts";
import { TEST_SECRET, startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { invitationLink, verificationLink } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Issue 13 item 7: the dev outbox holds live links (invitations, email verification). Only `bun run dev` serves
// it, only to a signed-in user, and orgs answers with that user's own mail only.

const TEST_TIMEOUT_MS = 30_000;

async function signUp(hatch: TestHatch, email: string, name: string) {
  const jar = new HostCookieJar();
  const form = await jar.fetch(`${hatch.baseUrl}/signup`);
  const done = await jar.post(`${hatch.baseUrl}/signup`, {
    csrf: csrfOf(await form.text()),
    email,
    name,
    password: "correct horse battery",
    next: "/",
  });
  expect(done.status).toBe(303);
  return jar;
}

describe("dev pages setting", () => {
  test("off by default and in `bun run start`'s config, whatever NODE_ENV says; scripts/dev.ts turns it on", async () => {
    expect(gatewayConfig({ secret: TEST_SECRET }).devPages).toBe(false);
    for (const NODE_ENV of ["development", "test", undefined]) {
      expect(loadGatewayConfig({ HATCH_SECRET: TEST_SECRET, NODE_ENV, DEV_PAGES: "true" }).devPages).toBe(false);
    }
    expect(await Bun.file(`${import.meta.dir}/../scripts/dev.ts`).text()).toContain("devPages: true");
  });
});

for (const mode of EMBEDDED_MODES) {
  describe(`/dev/outbox (${mode})`, () => {
    let plain: TestHatch;
    let dev: TestHatch;

    beforeAll(async () => {
      plain = await startTestHatch(mode);
      dev = await startTestHatch(mode, { gatewayConfig: { devPages: true } });
    }, 60_000);
    afterAll(async () => {
      await plain?.stop();
      await dev?.stop();
    }, TEST_TIMEOUT_MS);

    test(
      "not served without the dev setting, even to a signed-in user",
      async () => {
        expect((await fetch(`${plain.baseUrl}/dev/outbox`)).status).toBe(404);
        const jar = await signUp(plain, `plain-${mode}-${process.pid}@example.com`, "Plain");
        expect((await jar.fetch(`${plain.baseUrl}/dev/outbox`)).status).toBe(404);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "anonymous visitors are sent to sign in; each user sees only mail to their own email",
      async () => {
        const anonymous = await fetch(`${dev.baseUrl}/dev/outbox`, { redirect: "manual" });
        expect(anonymous.status).toBe(303);
        expect(anonymous.headers.get("location")).toBe(`/signin?next=${encodeURIComponent("/dev/outbox")}`);

        const a = `ann-${mode}-${process.pid}@example.com`;
        const b = `ben-${mode}-${process.pid}@example.com`;
        const owner = await userWithToken(dev, { name: "Outbox Owner" });
        const ai = await connectClient(dev, owner.accessToken);
        await callOk(ai, "org_setup", { action: "create", name: "Outbox Co" });
        await callOk(ai, "org_invite", { emails: [b] });
        const annJar = await signUp(dev, a, "Ann");
        const benJar = await signUp(dev, b, "Ben");
        const benInvite = await invitationLink(dev, b);
        const benVerify = await verificationLink(dev, b);

        const annPage = await (await annJar.fetch(`${dev.baseUrl}/dev/outbox`)).text();
        expect(annPage).toContain(`To ${a}`);
        expect(annPage).toContain((await verificationLink(dev, a)).replaceAll("&", "&amp;"));
        expect(annPage).not.toContain(b);
        expect(annPage).not.toContain(new URL(benInvite).pathname);
        expect(annPage).not.toContain(new URL(benVerify).searchParams.get("token")!);

        // Ben verifies his email first (an unverified account sees only its verification mail, below).
        expect((await benJar.fetch(benVerify)).status).toBe(200);
        const benPage = await (await benJar.fetch(`${dev.baseUrl}/dev/outbox`)).text();
        expect(benPage).toContain(`href="${benInvite}"`);
        expect(benPage).toContain("Outbox Owner invited you to Outbox Co");
        expect(benPage).not.toContain(a);

        // The filtering is orgs' own: without a signed context, its rpc answers nothing.
        const bare = await callRpc(dev.bus, "orgs", rpcMethods.orgs.mailOutbox, {}, MailOutboxSchema).catch(
          (error: unknown) => error,
        );
        expect(isToolError(bare) && bare.code).toBe("forbidden");
        await ai.close();
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "an unverified account sees only its verification mail, not the invitations to its address",
      async () => {
        // Issue 23 item 6: anyone can sign up with an address they do not own; until they open the
        // verification link, the outbox must not hand them the invitations mailed to it.
        const victim = `vic-${mode}-${process.pid}@example.com`;
        const owner = await userWithToken(dev, { name: "Inviting Owner" });
        const ai = await connectClient(dev, owner.accessToken);
        await callOk(ai, "org_setup", { action: "create", name: "Invite Co" });
        await callOk(ai, "org_invite", { emails: [victim] });
        const invite = await invitationLink(dev, victim);

        const squatter = await signUp(dev, victim, "Squatter");
        const verify = await verificationLink(dev, victim);
        const before = await (await squatter.fetch(`${dev.baseUrl}/dev/outbox`)).text();
        expect(before).toContain(verify.replaceAll("&", "&amp;"));
        expect(before).toContain("Verify your email for Hatch");
        expect(before).not.toContain(new URL(invite).pathname);
        expect(before).not.toContain("invited you to Invite Co");
        expect(before).toContain("Only the verification mail");

        // Once the address is proven, the invitation to it is theirs to see.
        expect((await squatter.fetch(verify)).status).toBe(200);
        const after = await (await squatter.fetch(`${dev.baseUrl}/dev/outbox`)).text();
        expect(after).toContain(`href="${invite}"`);
        expect(after).toContain("invited you to Invite Co");
        await ai.close();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
