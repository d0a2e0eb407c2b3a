import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createLogger, eventStreamFor } from "@hatch/platform";
import { PLAN_TABLE, type HatchEvent } from "@hatch/contracts";
import type { Browser } from "playwright-core";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES, uniqueName } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;

// Plan limits where the action happens: a new app past the plan's apps, an invitation past its seats. Each is
// refused with needs_payment, says which limit, carries the billing settings page, and changes nothing.
for (const mode of MODES) {
  describe(`plan limits (${mode})`, () => {
    let hatch: TestHatch;
    let owner: User;
    let ai: Client;
    let browser: Browser | undefined;
    /** The first app the free plan allowed (custom domains are tried on it). */
    let firstApp = "";
    // What the run logged and answered the AI (the local checkout page itself names the test card): no card number.
    const seen: string[] = [];

    beforeAll(async () => {
      hatch = await startTestHatch(mode, {
        serviceEnv: { BILLING_ENFORCE_LIMITS: "true" },
        logWrite: (line) => seen.push(line),
      });
      owner = await userWithToken(hatch, { name: "Lim" });
      let n = 0;
      ({ client: ai } = await connectFormClient(hatch, owner.accessToken, () => ({
        action: "accept",
        content: { name: `Limited ${mode} ${++n}`, visibility: "private" },
      })));
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await ai?.close();
      await hatch?.stop();
    });

    const publishNew = () =>
      ai.callTool({
        name: "publish",
        arguments: { files: [{ path: "index.html", content: "<h1>hi</h1>", encoding: "utf8" }] },
      });

    test("the free plan's apps: the next new app is refused with needs_payment and the settings page; versions still publish", async () => {
      const allowed = PLAN_TABLE.free.limits.apps!;
      const addresses: string[] = [];
      for (let i = 0; i < allowed; i++) {
        const result = await publishNew();
        expect(result.isError).not.toBe(true);
        addresses.push((result.structuredContent as { address: string }).address);
      }
      const refused = await publishNew();
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain(`The free plan allows ${allowed} apps, and this account has ${allowed}.`);
      expect(textOf(refused)).toContain(`${hatch.baseUrl}/dashboard/billing`);
      expect(textOf(refused)).toMatch(/\(needs_payment\)$/);
      const listed = await callOk<{ apps: { address: string }[] }>(ai, "list_tools");
      expect(listed.apps.map((a) => a.address).sort()).toEqual(addresses.sort());
      // A new version of an existing app is not a new app.
      const again = await ai.callTool({
        name: "publish",
        arguments: { address: addresses[0], files: [{ path: "index.html", content: "<h1>v2</h1>", encoding: "utf8" }] },
      });
      expect(again.isError).not.toBe(true);
      firstApp = addresses[0]!;
    }, 60_000);

    test("the free plan's custom domains: connecting one is refused with the settings page and nothing is held", async () => {
      const hostname = `app.limits-${mode}.example.com`;
      const refused = await ai.callTool({ name: "custom_domain", arguments: { address: firstApp, hostname } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toStartWith("The free plan does not include custom domains. Nothing was changed.");
      expect(textOf(refused)).toContain(`${hatch.baseUrl}/dashboard/billing`);
      expect(textOf(refused)).toMatch(/\(needs_payment\)$/);
      const listed = await callOk<{ domains: unknown[] }>(ai, "custom_domains", { address: firstApp });
      expect(listed.domains).toEqual([]);
    }, 60_000);

    test.skipIf(!hasChromium)(
      "the person upgrades to Pro through the settings link in a browser; the next new app is published",
      async () => {
        const refused = await publishNew();
        const link = /(http\S+\/dashboard\/billing)\b/.exec(textOf(refused))?.[1];
        expect(link).toBe(`${hatch.baseUrl}/dashboard/billing`);
        const { url } = await callOk<{ url: string }>(ai, "billing", { manage: true });
        browser = await launchChromium();
        const page = await (await browser.newContext()).newPage();
        await page.goto(url);
        await page.waitForURL((next) => next.pathname === "/signin");
        await page.getByLabel("Email").fill(owner.email);
        await page.getByLabel("Password").fill("correct horse battery");
        await Promise.all([
          page.waitForURL((next) => next.pathname === "/dashboard/billing/checkout"),
          page.getByRole("button", { name: "Sign in" }).click(),
        ]);
        await page.getByLabel("Card number").fill("4242 4242 4242 4242");
        await page.getByRole("radio", { name: /Pro/ }).check();
        await Promise.all([
          page.waitForURL((next) => next.pathname === "/dashboard/billing"),
          page.getByRole("button", { name: "Save" }).click(),
        ]);
        expect(await callOk<{ plan: string; cardOnFile: boolean }>(ai, "billing")).toMatchObject({
          plan: "pro",
          cardOnFile: true,
        });
        const published = await publishNew();
        expect(published.isError).not.toBe(true);
        seen.push(
          JSON.stringify(published),
          JSON.stringify(await ai.callTool({ name: "billing", arguments: { manage: true } })),
        );

        const events: HatchEvent[] = [];
        const consumer = eventStreamFor(hatch.bus).consume({
          name: uniqueName("card-leak"),
          filter: "events.>",
          logger: createLogger({ level: "error" }),
          handler: async (e) => void events.push(e),
        });
        const deadline = Date.now() + 10_000;
        while (!events.some((e) => e.service === "billing" && e.verb === "plan_changed") && Date.now() < deadline)
          await Bun.sleep(50);
        await consumer.stop();
        expect(events.some((e) => e.service === "billing" && e.verb === "plan_changed")).toBe(true);
        const haystack = [...seen, ...events.map((e) => JSON.stringify(e))].join("\n");
        expect(haystack).toContain("pro");
        expect(haystack.replace(/\s/g, "")).not.toContain("4242424242424242");
        expect(haystack).not.toContain("4242 4242");

        // Pro includes custom domains: the one the free plan refused connects now (once domains has heard of the change).
        const hostname = `app.limits-${mode}.example.com`;
        const connected = await eventually(async () => {
          const result = await ai.callTool({ name: "custom_domain", arguments: { address: firstApp, hostname } });
          return result.isError ? undefined : (result.structuredContent as { status: string; hostname: string });
        }, "custom_domain to connect on the Pro plan");
        expect(connected).toMatchObject({ status: "connected", hostname });
      },
      60_000,
    );

    test("the free plan's seats: an invitation past them is refused and nothing is sent", async () => {
      await callOk(ai, "org_setup", { action: "create", name: `Limits ${mode}` });
      const seats = PLAN_TABLE.free.limits.seats!;
      const emails = Array.from({ length: seats }, (_, i) => `seat${i}-${mode}-${process.pid}@example.com`);
      const refused = await ai.callTool({
        name: "org_invite",
        arguments: { action: "invite", emails, role: "member" },
      });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain(`allows ${seats} people`);
      expect(textOf(refused)).toMatch(/\(needs_payment\)$/);
      const members = await callOk<{ invitations: unknown[] }>(ai, "org_members");
      expect(members.invitations).toEqual([]);
      const fits = await callOk<{ invited: unknown[] }>(ai, "org_invite", {
        action: "invite",
        emails: emails.slice(0, seats - 1),
        role: "member",
      });
      expect(fits.invited).toHaveLength(seats - 1);
    }, 60_000);
  });
}
