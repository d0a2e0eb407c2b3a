import { bindTool } from "@hatch/platform";
import { find_domain, ToolError, type FindDomainOutput } from "@hatch/contracts";
import type { DomainsContext } from "../context.ts";
import { moneyOrNull } from "../bought/money.ts";
import { RegistrarUnavailable } from "../registrar/types.ts";

/** The endings tried when the person names none. */
export const USUAL_TLDS = ["com", "net", "org", "dev", "app", "io", "co", "xyz"];

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** The names to look up: the full name given first, then its label under the other endings. */
export function candidatesFor(query: string, tlds: string[] | undefined, limit: number): string[] {
  let q = query
    .trim()
    .toLowerCase()
    .replace(/^https?:\/\//, "")
    .replace(/\/.*$/, "")
    .replace(/\.$/, "");
  if (q.startsWith("www.")) q = q.slice(4);
  const dot = q.indexOf(".");
  const word = dot >= 0 ? q.slice(0, dot) : q.replace(/[\s_]+/g, "-");
  const given = dot >= 0 ? q : null;
  if (!LABEL.test(word) || (given && !given.split(".").every((l) => LABEL.test(l)))) {
    throw new ToolError(
      "invalid_input",
      `"${query}" is not a name a domain can have. Give one word of letters, digits and inner hyphens (e.g. acme) or a domain name (e.g. acme.com).`,
    );
  }
  const endings = tlds?.length ? tlds : given ? [given.slice(dot + 1), ...USUAL_TLDS] : USUAL_TLDS;
  const names = [...(given ? [given] : []), ...endings.map((tld) => `${word}.${tld}`)];
  return [...new Set(names)].slice(0, limit);
}

/** find_domain: availability and prices of candidate names at the registrar. */
export function findDomainTool(domains: DomainsContext) {
  return bindTool(find_domain, async ({ input }) => {
    const names = candidatesFor(input.query, input.tlds, input.limit);
    let offers;
    try {
      offers = await domains.registrar.check(names);
    } catch (error) {
      if (error instanceof RegistrarUnavailable)
        throw new ToolError("unavailable", "The domain registrar is not answering right now. Try again in a minute.");
      throw error;
    }
    const results: FindDomainOutput["results"] = offers.map((o) => ({
      domain: o.domain,
      available: o.available,
      premium: o.premium,
      firstYearPrice: moneyOrNull(o.firstYearMinor),
      renewalPrice: moneyOrNull(o.renewalMinor),
    }));
    const lines = results.map((r) =>
      r.available
        ? `${r.domain}: available${r.premium ? " (premium)" : ""}, ${r.firstYearPrice!.formatted} the first year, then ${r.renewalPrice!.formatted} a year`
        : `${r.domain}: not available`,
    );
    const any = results.some((r) => r.available);
    return {
      text: `${lines.join("\n")}\n${any ? "Show the user both prices; buy one with buy_domain." : "None of these can be bought; try another word or other endings (tlds)."}`,
      data: { results },
    };
  });
}
