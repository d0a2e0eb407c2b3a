import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOL_CONTRACTS } from "@hatch/contracts";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { csrfOf, HostCookieJar, signInToApp, signedInJar } from "./support/cookies.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { joinOrg } from "./support/orgs.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// Words for people: an owner, a manager, a member and a person in no organization each read every dashboard page
// (crawled from /dashboard by its links) and what the pages say after forms (an invitation sent, one refused for a
// mistyped address, one past the plan's seats): no tool names, no "(give them the link)", no schema paths, no
// development-server notes; every page has the sub-menu and the skip link, and every URL in the text is a link.

const PASSWORD = "correct horse battery";
const MAX_PAGES = 80;

/** Tool names that are not plain English words (org, share, publish, billing, rollback also are): anywhere is wrong. */
const CODE_NAMES = TOOL_CONTRACTS.map((t) => t.name).filter((n) => n.includes("_") || n === "whoami");
/** The plain-word names are wrong only where they read as a tool: "(share)", "the share tool". */
const WORD_NAMES = TOOL_CONTRACTS.map((t) => t.name).filter((n) => !CODE_NAMES.includes(n));
const FORBIDDEN: [string, RegExp][] = [
  ["a tool name", new RegExp(`\\b(?:${CODE_NAMES.join("|")})\\b`)],
  ["a tool name", new RegExp(`\\((?:${WORD_NAMES.join("|")})\\b|\\b(?:${WORD_NAMES.join("|")}) tool\\b`)],
  ["words for an AI", /\(give them the link\)|\bthe user (can|adds|moves|picks)\b/i],
  ["a schema path", /\b[a-z][A-Za-z]*(?:\.[A-Za-z0-9]+)*\.\d+(?:\.[A-Za-z]+)*:/],
  ["a development-server note", /bun run dev|\/dev\/outbox|dev outbox|SMTP_URL|no mail server is configured/i],
];

/** The text a person reads on a page (no markup, scripts or styles). */
function textOf(page: string): string {
  return page
    .replace(/<(script|style)\b[\s\S]*?<\/\1>/g, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ");
}

/** What is wrong with one page's words and frame. */
function problemsOf(where: string, page: string): string[] {
  const text = textOf(page);
  const problems = FORBIDDEN.flatMap(([what, pattern]) => {
    const found = pattern.exec(text);
    return found ? [`${where}: ${what}: "…${text.slice(Math.max(0, found.index - 60), found.index + 60)}…"`] : [];
  });
  if (!page.includes('aria-label="Dashboard"')) problems.push(`${where}: no sub-menu`);
  if (!/<a class="skip" href="#main">/.test(page)) problems.push(`${where}: no skip link`);
  // A URL in the text is a link: nothing but links (and code the person copies, a wildcard pattern) shows one.
  const bare = textOf(page.replace(/<a\b[\s\S]*?<\/a>/g, " ").replace(/<(code|pre)\b[\s\S]*?<\/\1>/g, " ")).match(
    /https?:\/\/[^\s*]+/,
  );
  if (bare) problems.push(`${where}: a URL that is not a link: ${bare[0]}`);
  return problems;
}

for (const mode of EMBEDDED_MODES) {
  describe(`dashboard words for people (${mode})`, () => {
    let hatch: TestHatch;
    const people: Record<"owner" | "manager" | "member" | "loner", { email: string; ai: Client }> = {} as never;
    let appAddress = "";

    beforeAll(async () => {
      // Plan limits on: the free plan's three seats are full once the manager and the member joined.
      hatch = await startTestHatch(mode, { serviceEnv: { BILLING_ENFORCE_LIMITS: "true" } });
      for (const role of ["owner", "manager", "member", "loner"] as const) {
        const user = await userWithToken(hatch, { name: `Words ${role}`, email: `words-${role}-${mode}@example.com` });
        people[role] = { email: user.email, ai: await connectClient(hatch, user.accessToken) };
      }
      await callOk(people.owner.ai, "org_setup", { action: "create", name: "Words Co" });
      await joinOrg(people.owner.ai, people.manager.ai, people.manager.email, { role: "manager" });
      await joinOrg(people.owner.ai, people.member.ai, people.member.email);
      for (const role of ["owner", "member", "loner"] as const) {
        const published = await callOk<{ address?: string }>(people[role].ai, "publish", {
          name: `words-${role}-${mode}`,
          visibility: "private",
          files: [{ path: "index.html", content: "<h1>Words</h1>" }],
        });
        expect(published.address).toBeString();
        if (role === "owner") appAddress = published.address!;
      }
      // Some activity beyond one page, so the log says there is more.
      for (let i = 0; i < 3; i++)
        await callOk(people.owner.ai, "share", { address: appAddress, add: [`friend${i}@example.com`] });
    }, 120_000);
    afterAll(async () => {
      for (const person of Object.values(people)) await person.ai?.close();
      await hatch?.stop();
    });

    const signedIn = (email: string) => signedInJar(hatch.baseUrl, email, PASSWORD);

    /** Pages that answered with a server error while crawling (none may). */
    const failed: string[] = [];

    /** Every dashboard page reachable from /dashboard by links, with its HTML. */
    async function crawl(jar: HostCookieJar): Promise<Map<string, string>> {
      const pages = new Map<string, string>();
      const queue = ["/dashboard"];
      const seen = new Set(queue);
      while (queue.length && pages.size < MAX_PAGES) {
        const path = queue.shift()!;
        const response = await jar.fetch(`${hatch.baseUrl}${path}`);
        if (!(response.headers.get("content-type") ?? "").startsWith("text/html")) {
          await response.body?.cancel();
          continue;
        }
        const page = await response.text();
        if (response.status >= 500) failed.push(`${path}: status ${response.status}`);
        pages.set(path, page);
        for (const [, href = ""] of page.matchAll(/href="([^"#]+)"/g)) {
          const link = href.replaceAll("&amp;", "&");
          if (!link.startsWith("/dashboard") || seen.has(link)) continue;
          seen.add(link);
          queue.push(link);
        }
      }
      return pages;
    }

    test("an owner, a manager, a member and a person in no organization read no tool, AI or developer words", async () => {
      const problems: string[] = [];
      for (const role of ["owner", "manager", "member", "loner"] as const) {
        const pages = await crawl(await signedIn(people[role].email));
        for (const [path, page] of pages) problems.push(...problemsOf(`${role} ${path}`, page));
        for (const path of ["/dashboard", "/dashboard/org", "/dashboard/settings", "/dashboard/tokens"])
          if (!pages.has(path)) problems.push(`${role}: ${path} was not reached by links`);
        if ((role === "owner" || role === "member") && ![...pages.keys()].some((p) => p.startsWith("/dashboard/apps/")))
          problems.push(`${role}: no app page reached`);
      }
      expect(problems).toEqual([]);
      expect(failed).toEqual([]);
    }, 120_000);

    test("what the pages say after invitations: sent, a mistyped address, past the plan's seats", async () => {
      const jar = await signedIn(people.owner.email);
      const org = `${hatch.baseUrl}/dashboard/org`;
      const csrf = csrfOf(await (await jar.fetch(org)).text());
      const problems: string[] = [];

      const mistyped = await jar.post(`${org}/invite`, {
        csrf,
        emails: "ok@example.com, not-an-email",
        role: "member",
      });
      expect(mistyped.status).toBe(400);
      const mistypedPage = await mistyped.text();
      expect(textOf(mistypedPage)).toContain('"not-an-email"');
      // What was typed is still in the field.
      expect(mistypedPage).toContain('value="ok@example.com, not-an-email"');
      problems.push(...problemsOf("a mistyped invitation", mistypedPage));

      const full = await jar.post(`${org}/invite`, { csrf, emails: "fourth@example.com", role: "member" });
      expect(full.status).toBe(400);
      const fullPage = await full.text();
      expect(textOf(fullPage)).toContain("seat");
      expect(fullPage).toMatch(/<a href="http[^"]+\/dashboard\/billing\?seats=4">/);
      problems.push(...problemsOf("an invitation past the seats", fullPage));

      // Revoking nothing is still an answer the org page shows in words.
      const revoked = await jar.post(`${org}/invitations/revoke`, { csrf, email: "nobody@example.com" });
      expect(revoked.status).toBe(303);
      problems.push(...problemsOf("after a revoke", await (await jar.fetch(org)).text()));

      // An organization with seats to spare: the invitation goes out, and the page says so in words.
      const founder = await userWithToken(hatch, { name: "Founder", email: `words-founder-${mode}@example.com` });
      const founderAi = await connectClient(hatch, founder.accessToken);
      await callOk(founderAi, "org_setup", { action: "create", name: "Second Co" });
      await founderAi.close();
      const second = await signedIn(founder.email);
      const sent = await second.post(`${org}/invite`, {
        csrf: csrfOf(await (await second.fetch(org)).text()),
        emails: "newcomer@example.com",
        role: "member",
      });
      expect(sent.status).toBe(303);
      const sentPage = await (await second.fetch(org)).text();
      expect(textOf(sentPage)).toContain("Invited 1 person to Second Co");
      problems.push(...problemsOf("after an invitation", sentPage));
      expect(problems).toEqual([]);
    }, 60_000);

    test("a manager's role menu offers roles up to manager; a member sees none", async () => {
      const managerPage = await (
        await (await signedIn(people.manager.email)).fetch(`${hatch.baseUrl}/dashboard/org`)
      ).text();
      const options = [...managerPage.matchAll(/<select name="role">([\s\S]*?)<\/select>/g)].flatMap((m) =>
        [...(m[1] ?? "").matchAll(/<option value="([a-z]+)"/g)].map((o) => o[1]),
      );
      expect(options.length).toBeGreaterThan(0);
      expect(new Set(options)).toEqual(new Set(["member", "manager"]));
      const ownerPage = await (
        await (await signedIn(people.owner.email)).fetch(`${hatch.baseUrl}/dashboard/org`)
      ).text();
      expect(ownerPage).toContain('<option value="admin"');
      const memberPage = await (
        await (await signedIn(people.member.email)).fetch(`${hatch.baseUrl}/dashboard/org`)
      ).text();
      expect(memberPage).not.toContain('<select name="role">');
    }, 60_000);

    test("an unverified person: a banner on the dashboard, and an app shared with them says to verify", async () => {
      const unverified = await userWithToken(hatch, {
        name: "Una Verified",
        email: `words-unverified-${mode}@example.com`,
        verified: false,
      });
      await callOk(people.loner.ai, "share", {
        address: `words-loner-${mode}`,
        visibility: "people",
        add: [unverified.email],
      });
      const jar = await signedIn(unverified.email);
      const dashboard = await (await jar.fetch(`${hatch.baseUrl}/dashboard`)).text();
      expect(dashboard).toContain("data-unverified");
      expect(textOf(dashboard)).toContain("Verify your email.");
      const verified = await (await (await signedIn(people.owner.email)).fetch(`${hatch.baseUrl}/dashboard`)).text();
      expect(verified).not.toContain("data-unverified");

      const appUrl = `${hatch.appHostUrl.replace("://", `://words-loner-${mode}.`)}/`;
      await signInToApp(hatch, jar, appUrl, unverified.email);
      const refused = await jar.fetch(appUrl);
      expect(refused.status).toBe(403);
      const text = textOf(await refused.text());
      expect(text).toContain("Verify your email to open this app");
      expect(text).not.toContain("not shared");
    }, 60_000);
  });
}
