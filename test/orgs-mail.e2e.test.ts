import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { mails } from "../services/orgs/src/db/schema.ts";
import { csrfOf, HostCookieJar } from "./support/cookies.ts";
import { eventually } from "./support/eventually.ts";
import { decodeHeader, parseMail, startFakeSmtp, type FakeSmtp } from "./support/fake-smtp.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// With SMTP_URL set, invitations leave as real SMTP mail (here to a local server that speaks the protocol).
// bunfig's test timeout is not applied (Bun 1.4.5 keeps 5 s); these tests wait on events and browsers.
const TEST_TIMEOUT_MS = 30_000;

for (const mode of MODES) {
  describe(`invitation mail by SMTP (${mode})`, () => {
    let hatch: TestHatch;
    let smtp: FakeSmtp;
    const logs: string[] = [];

    beforeAll(async () => {
      smtp = await startFakeSmtp({
        credentials: { user: "hatch", password: "mail secret" },
        refuse: (to) => to.startsWith("bounce"),
      });
      hatch = await startTestHatch(mode, {
        serviceEnv: { SMTP_URL: smtp.url, MAIL_FROM: "Hatch Test <hatch@example.com>" },
        gatewayConfig: { devPages: true },
        logWrite: (line) => logs.push(line),
      });
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
      await smtp?.close();
    }, TEST_TIMEOUT_MS);

    test(
      "each invitation is one mail with a working link; a refused address is given up; nothing stays in an outbox",
      async () => {
        const owner = await userWithToken(hatch, { name: "Zoë Owner" });
        const client = await connectClient(hatch, owner.accessToken);
        await callOk(client, "org_setup", { action: "create", name: "Mail Co" });
        const result = await client.callTool({
          name: "org_invite",
          arguments: { emails: ["one@example.com", "two@example.com", "bounce@example.com"] },
        });
        expect(textOf(result)).not.toContain("dev/outbox");
        await eventually(() => smtp.received.length === 2, "two delivered mails");
        expect(smtp.received.map((r) => r.to[0]).sort()).toEqual(["one@example.com", "two@example.com"]);
        expect(smtp.received.every((r) => r.from === "hatch@example.com" && r.auth === "hatch")).toBe(true);
        const mail = parseMail(smtp.received.find((r) => r.to[0] === "one@example.com")!.data);
        expect(decodeHeader(mail.headers.subject!)).toBe("Zoë Owner invited you to Mail Co on Hatch");
        const link = mail.body.match(/http:\/\/\S+\/invite\/[A-Za-z0-9_-]+/)?.[0];
        expect(link?.startsWith(`${hatch.baseUrl}/invite/`)).toBe(true);
        const page = await fetch(link!);
        expect(page.status).toBe(200);
        expect(await page.text()).toContain("Mail Co");

        const db = hatch.databases.get("orgs")!;
        const rows = await eventually(async () => {
          const all = await db.select().from(mails);
          return all.every((m) => m.status === "sent" || m.status === "failed") ? all : undefined;
        }, "every mail settled");
        expect(rows.filter((m) => m.status === "sent").every((m) => m.body === null)).toBe(true);
        expect((await db.select().from(mails).where(eq(mails.to, "bounce@example.com")))[0]).toMatchObject({
          status: "failed",
          attempts: 1,
        });
        expect(logs.some((l) => l.includes("mail given up") && l.includes("550"))).toBe(true);
        // Neither the SMTP password nor an invitation token reaches a log line.
        const tokens = smtp.received.map(
          (r) => parseMail(r.data).body.match(/\/invite\/([A-Za-z0-9_-]+)/)?.[1] ?? "missing",
        );
        for (const secret of ["mail secret", ...tokens]) expect(logs.some((l) => l.includes(secret))).toBe(false);
        const jar = new HostCookieJar();
        const signIn = await jar.fetch(`${hatch.baseUrl}/signin`);
        await jar.post(`${hatch.baseUrl}/signin`, {
          csrf: csrfOf(await signIn.text()),
          email: owner.email,
          password: "correct horse battery",
          next: "/",
        });
        const outbox = await jar.fetch(`${hatch.baseUrl}/dev/outbox`);
        expect(await outbox.text()).toContain("sent by SMTP");
        await client.close();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
