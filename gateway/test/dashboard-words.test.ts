import { describe, expect, test } from "bun:test";
import { checkLimit } from "@hatch/platform";
import { isToolError, PLAN_TABLE, type Entitlements } from "@hatch/contracts";
import { payWords } from "../src/pages/billing-page.ts";
import { refusalForPeople } from "../src/pages/dashboard/domains.ts";
import { forPeople, linked } from "../src/pages/dashboard/words.ts";

// forPeople() on the texts services really write for an AI (limits, invitations), and linked() on URLs in a notice.

const entitlements: Entitlements = {
  accountId: "acct_1",
  plan: "free",
  state: "active",
  seats: 1,
  limits: PLAN_TABLE.free.limits,
  settingsUrl: "https://hatch.example/dashboard/billing",
};

function refusal(limit: "apps" | "seats" | "customDomains", used: number): string {
  try {
    checkLimit(entitlements, limit, used);
  } catch (error) {
    if (isToolError(error)) return error.message;
  }
  throw new Error("checkLimit did not refuse");
}

describe("words for people", () => {
  test("a plan limit's refusal: no '(give them the link)', no 'the user', the link kept", () => {
    for (const [limit, used] of [
      ["apps", 3],
      ["seats", 3],
      ["customDomains", 0],
    ] as const) {
      const message = refusal(limit, used);
      expect(message).toContain("(give them the link)");
      const spoken = forPeople(message);
      expect(spoken).not.toContain("give them the link");
      expect(spoken).not.toMatch(/the user/i);
      expect(spoken).toContain("https://hatch.example/dashboard/billing");
    }
  });

  test("sentences naming a tool, or the development server, are left out; the rest stays", () => {
    expect(
      forPeople(
        "Invited 1 person to Acme; each gets an email (no mail server is configured here: under `bun run dev` each invitee reads it at http://x/dev/outbox, signed in with that email) with a link to join.",
      ),
    ).toBe("Invited 1 person to Acme; each gets an email with a link to join.");
    expect(forPeople("Created Acme. org_invite adds people.")).toBe("Created Acme.");
    expect(forPeople("org_invite adds people.")).toBe("Done.");
  });

  test("linked: each URL a link, the rest escaped", () => {
    expect(linked('Open https://a.example/x?y=1&z=2. <b>"hi"</b>').value).toBe(
      'Open <a href="https://a.example/x?y=1&amp;z=2">https://a.example/x?y=1&amp;z=2</a>. &lt;b&gt;&quot;hi&quot;&lt;/b&gt;',
    );
  });
});

describe("a refusal for people (the domains page)", () => {
  test("drops the sentences that name a tool and keeps the rest whole, domain names and prices included", () => {
    expect(refusalForPeople("acme.com is not available to buy. Pick another name with find_domain.")).toBe(
      "acme.com is not available to buy.",
    );
    expect(
      refusalForPeople(
        "acme.dev costs $20,000.00; Hatch sells domains up to $10,000.00. Pick another name with find_domain.",
      ),
    ).toBe("acme.dev costs $20,000.00; Hatch sells domains up to $10,000.00.");
    expect(
      refusalForPeople(
        "Buying a domain needs the buy_domains permission in this organization. Ask its owner or an admin to give it to you (org_member_update). Nothing was bought.",
      ),
    ).toBe("Buying a domain needs the buy_domains permission in this organization. Nothing was bought.");
  });

  test("a text that is all tool words becomes a plain sentence", () => {
    expect(refusalForPeople("Call company_domain to see it.")).toBe("That did not work. Nothing was changed.");
  });
});

describe("payWords", () => {
  test("Pro by the month, Team by its seats", () => {
    expect(payWords("pro")).toBe("Pay $12 a month");
    expect(payWords("team", 1)).toBe("Pay $20 a month for 1 seat");
    expect(payWords("team", 3)).toBe("Pay $60 a month for 3 seats");
  });
});
