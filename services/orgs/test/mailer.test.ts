import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, openEmbeddedPostgres, openServiceDatabase, type Database } from "@hatch/platform";
import type { PGlite } from "@electric-sql/pglite";
import { eq } from "drizzle-orm";
import { loadOrgsConfig } from "../src/config.ts";
import { mails } from "../src/db/schema.ts";
import { createMailer } from "../src/mail/mailer.ts";
import { ORGS_MIGRATIONS } from "../src/service.ts";
import { freePort } from "../../../test/support/servers.ts";
import { parseMail, startFakeSmtp, type FakeSmtp } from "../../../test/support/fake-smtp.ts";

describe("mailer", () => {
  let client: PGlite;
  let db: Database;
  const logger = createLogger({ level: "silent" });
  beforeAll(async () => {
    client = await openEmbeddedPostgres();
    db = (await openServiceDatabase({ kind: "pglite", client }, { schema: "orgs", migrationsFolder: ORGS_MIGRATIONS }))
      .db;
  });
  afterAll(async () => client?.close());

  test("without SMTP, mails are kept for the outbox and never sent", async () => {
    const mailer = createMailer({ db, config: loadOrgsConfig({}), logger });
    expect(mailer.mode).toBe("outbox");
    await db.transaction((tx) =>
      mailer.queue(tx, [
        { to: "kept@example.com", subject: "Kept", body: "link" },
        { to: "other@example.com", subject: "Not yours", body: "other link" },
      ]),
    );
    await mailer.kick();
    // The outbox answers per recipient (case-insensitive): one person never reads another's links.
    expect((await mailer.outbox(50, "Kept@Example.com")).map((m) => m.subject)).toEqual(["Kept"]);
  });

  test("a mail queued while the server is down is retried later and then sent; its body is not kept", async () => {
    const port = freePort();
    const config = loadOrgsConfig({ SMTP_URL: `smtp://127.0.0.1:${port}`, BASE_URL: "https://hatch.example" });
    const mailer = createMailer({ db, config, logger });
    await db.transaction((tx) =>
      mailer.queue(tx, [{ to: "later@example.com", subject: "Later", body: "https://hatch.example/invite/abc" }]),
    );
    await mailer.kick();
    const [failed] = await db.select().from(mails).where(eq(mails.to, "later@example.com"));
    expect(failed).toMatchObject({ status: "pending", attempts: 1 });
    expect(failed!.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
    expect(failed!.lastError).toBeTruthy();

    let fake: FakeSmtp | undefined;
    try {
      fake = await startFakeSmtp({ port });
      await mailer.kick();
      expect(fake.received).toHaveLength(0); // not due yet
      await db
        .update(mails)
        .set({ nextAttemptAt: new Date(Date.now() - 1000) })
        .where(eq(mails.to, "later@example.com"));
      await mailer.kick();
      expect(fake.received.map((r) => r.to)).toEqual([["later@example.com"]]);
      expect(parseMail(fake.received[0]!.data).headers.from).toBe("Hatch <no-reply@hatch.example>");
      const [sent] = await db.select().from(mails).where(eq(mails.to, "later@example.com"));
      expect(sent).toMatchObject({ status: "sent", body: null, attempts: 2 });
    } finally {
      await mailer.stop();
      await fake?.close();
    }
  });

  test("a temporary (4xx) refusal is retried later with its reason kept; a permanent (5xx) one is given up", async () => {
    const fake = await startFakeSmtp({ defer: (to) => to.startsWith("busy@"), refuse: (to) => to.startsWith("gone@") });
    const config = loadOrgsConfig({ SMTP_URL: fake.url, BASE_URL: "https://hatch.example" });
    const mailer = createMailer({ db, config, logger });
    try {
      await db.transaction((tx) =>
        mailer.queue(tx, [
          { to: "busy@example.com", subject: "Busy", body: "b" },
          { to: "gone@example.com", subject: "Gone", body: "g" },
        ]),
      );
      await mailer.kick();
      const [busy] = await db.select().from(mails).where(eq(mails.to, "busy@example.com"));
      expect(busy).toMatchObject({ status: "pending", attempts: 1 });
      expect(busy!.lastError).toContain("450");
      expect(busy!.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
      const [gone] = await db.select().from(mails).where(eq(mails.to, "gone@example.com"));
      expect(gone).toMatchObject({ status: "failed", attempts: 1 });
      expect(gone!.lastError).toContain("550");
      expect(fake.received).toHaveLength(0);
    } finally {
      await mailer.stop();
      await fake.close();
    }
  });
});
