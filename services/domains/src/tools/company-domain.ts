import { bindTool } from "@hatch/platform";
import { company_domain } from "@hatch/contracts";
import type { DomainsContext } from "../context.ts";
import { recordsText } from "../hostnames/records.ts";
import { viewOf } from "../hostnames/store.ts";
import { companyDomainFor } from "./company-domain-set.ts";

/** company_domain: the company's address for apps, its stage, and the DNS records still missing. */
export function companyDomainTool(domains: DomainsContext) {
  return bindTool(company_domain, async ({ ctx }) => {
    const none = { domain: null, stage: null, appUrlPattern: null, records: [], problem: null };
    if (ctx.accountKind !== "company" || !ctx.account) {
      return {
        text: "You act in your personal account, which has no company address for apps. An organization (org_setup) can have one.",
        data: none,
      };
    }
    const row = await companyDomainFor(domains, ctx.account);
    if (!row)
      return {
        text: "The company has no address for apps yet. A company admin can set one with company_domain_set (e.g. apps.acme.com).",
        data: none,
      };
    const view = viewOf(row);
    const needed = view.records.filter((r) => r.status !== "ok");
    const pattern = `${domains.config.appsProtocol}//<address>.${row.hostname}`;
    const state =
      view.stage === "live"
        ? `live: apps open at ${pattern}.`
        : view.stage === "certificate"
          ? `DNS is in place; HTTPS certificates are issued as apps are opened.`
          : `waiting for DNS.${view.problem ? ` ${view.problem}` : ""}\nRecords still needed:\n${recordsText(needed)}`;
    return {
      text: `${row.hostname}: ${state}`,
      data: { domain: row.hostname, stage: view.stage, appUrlPattern: pattern, records: needed, problem: view.problem },
    };
  });
}
