import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eventStreamFor } from "@hatch/platform";
import { newEvent, type HatchEvent } from "@hatch/contracts";
import type { AppsService } from "@hatch/apps";
import { eq } from "drizzle-orm";
import { countUsage } from "../services/billing/src/usage.ts";
import { usage } from "../services/billing/src/db/schema.ts";
import { accountOf } from "./support/ai.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, userWithToken } from "./support/mcp.ts";
import { MODES, uniqueName } from "./support/servers.ts";

const month = () => `${new Date().toISOString().slice(0, 7)}-01`;

/** Waits until `check` holds, failing with what it last saw. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)}`);
    await Bun.sleep(100);
    value = await read();
  }
  return value;
}

// Usage this month comes from other services' events, through billing's durable consumer: opens from the app host's
// stats, AI tokens from apps.ai.used. Billing being down loses nothing, and nothing counts twice.
for (const mode of MODES) {
  describe(`billing usage from events (${mode})`, () => {
    let hatch: TestHatch;
    let ai: Client;
    const account = uniqueName("acct");

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
    }, 60_000);
    afterAll(async () => {
      await ai?.close();
      await hatch?.stop();
    });

    const usageOf = async (accountId: string) => {
      const [row] = await hatch.databases.get("billing")!.select().from(usage).where(eq(usage.accountId, accountId));
      return row ? { opens: row.opens, aiTokens: row.aiTokens, month: row.month } : null;
    };

    const event = (verb: "opened" | "used", details: Record<string, unknown>): HatchEvent =>
      newEvent("apps", null, {
        entity: verb === "opened" ? "app" : "ai",
        verb,
        summary: "usage",
        app: "some-app",
        account,
        org: null,
        details,
      });

    test("events published while billing is down are each counted once when it is back", async () => {
      await hatch.stopService("billing");
      const stream = eventStreamFor(hatch.bus);
      const events = [
        event("opened", { opens: 2, day: new Date().toISOString().slice(0, 10) }),
        event("opened", { opens: 5, day: new Date().toISOString().slice(0, 10) }),
        event("used", { inputTokens: 10, outputTokens: 5 }),
        event("used", { inputTokens: 7, outputTokens: 3 }),
      ];
      for (const e of events) await stream.publish(e);
      expect(await usageOf(account)).toBeNull();
      await hatch.startService("billing");
      const counted = await until(
        () => usageOf(account),
        (row) => row !== null && row.opens === 7 && row.aiTokens === 25,
      );
      expect(counted).toEqual({ opens: 7, aiTokens: 25, month: month() });

      // A redelivered event (the stream is at-least-once) changes nothing.
      for (const e of events) expect(await countUsage(hatch.databases.get("billing")!, e)).toBe(false);
      expect(await usageOf(account)).toEqual({ opens: 7, aiTokens: 25, month: month() });
    }, 60_000);

    test("a refunded purchase takes its domain off the month it was bought in; a refunded renewal does not", async () => {
      const db = hatch.databases.get("billing")!;
      const buyer = uniqueName("acct");
      const domainEvent = (verb: "bought" | "refunded", details: Record<string, unknown>): HatchEvent =>
        newEvent("domains", null, {
          entity: "domain",
          verb,
          summary: "usage",
          app: null,
          account: buyer,
          org: null,
          details: { domain: "example-usage.com", ...details },
        });
      const domainsOf = async () => {
        const rows = await db.select().from(usage).where(eq(usage.accountId, buyer));
        return rows.map((row) => ({ month: row.month, domains: row.domains }));
      };
      const boughtAt = new Date().toISOString();
      expect(await countUsage(db, domainEvent("bought", {}))).toBe(true);
      expect(await countUsage(db, domainEvent("bought", {}))).toBe(true);
      expect(await domainsOf()).toEqual([{ month: month(), domains: 2 }]);
      expect(await countUsage(db, domainEvent("refunded", { purpose: "renewal", boughtAt }))).toBe(false);
      const refund = domainEvent("refunded", { purpose: "purchase", boughtAt });
      expect(await countUsage(db, refund)).toBe(true);
      expect(await countUsage(db, refund)).toBe(false);
      expect(await domainsOf()).toEqual([{ month: month(), domains: 1 }]);
    });

    test("opens of a published app reach billing through the app host's stats", async () => {
      const owner = await userWithToken(hatch, { name: "Opal" });
      ({ client: ai } = await connectFormClient(hatch, owner.accessToken, () => ({
        action: "accept",
        content: { name: `Usage ${mode}`, visibility: "public", confirm: true },
      })));
      const published = await callOk<{ url: string; address: string }>(ai, "publish", {
        files: [{ path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" }],
      });
      for (let i = 0; i < 3; i++) expect((await fetch(published.url)).status).toBe(200);
      await (hatch.services.get("apps") as AppsService).host.flushStats();
      const personal = await accountOf(hatch, owner);
      const counted = await until(
        () => usageOf(personal),
        (row) => row !== null && row.opens >= 3,
      );
      expect(counted?.opens).toBe(3);
    }, 60_000);
  });
}
