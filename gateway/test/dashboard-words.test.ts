import { describe, expect, test } from "bun:test";
import { payWords } from "../src/pages/billing-page.ts";
import { forPeople } from "../src/pages/dashboard/domains.ts";

// The words the dashboard shows people: a service's sentences meant for an AI (naming a tool) are left out, and a
// checkout button says what it pays.

describe("forPeople", () => {
  test("drops the sentences that name a tool and keeps the rest whole, domain names and prices included", () => {
    expect(forPeople("acme.com is not available to buy. Pick another name with find_domain.")).toBe(
      "acme.com is not available to buy.",
    );
    expect(
      forPeople("acme.dev costs $20,000.00; Hatch sells domains up to $10,000.00. Pick another name with find_domain."),
    ).toBe("acme.dev costs $20,000.00; Hatch sells domains up to $10,000.00.");
    expect(
      forPeople(
        "Buying a domain needs the buy_domains permission in this organization. Ask its owner or an admin to give it to you (org_member_update). Nothing was bought.",
      ),
    ).toBe("Buying a domain needs the buy_domains permission in this organization. Nothing was bought.");
  });

  test("a text that is all tool words becomes a plain sentence", () => {
    expect(forPeople("Call company_domain to see it.")).toBe("That did not work. Nothing was changed.");
  });
});

describe("payWords", () => {
  test("Pro by the month, Team by its seats", () => {
    expect(payWords("pro")).toBe("Pay $12 a month");
    expect(payWords("team", 1)).toBe("Pay $20 a month for 1 seat");
    expect(payWords("team", 3)).toBe("Pay $60 a month for 3 seats");
  });
});
