import { bindTool, consumeConfirm, type ToolCall, type ToolOutcome } from "@hatch/platform";
import {
  buildQuestion,
  company_domain_set,
  randomId,
  ToolError,
  type CallContext,
  type CompanyDomainSetOutput,
  type ToolInput,
} from "@hatch/contracts";
import { and, eq } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { confirmUses, hostnames } from "../db/schema.ts";
import { heldElsewhere, lapsed } from "../hostnames/claims.ts";
import { checkOwnHostname, registrableDomain } from "../hostnames/names.ts";
import { recordsText, wantedRecords } from "../hostnames/records.ts";
import {
  actorOf,
  announceHostChanged,
  HOSTNAME_CHECK,
  hostnameEvent,
  viewOf,
  type HostnameRow,
  type Tx,
} from "../hostnames/store.ts";
import { cancelJob, enqueueJob } from "../jobs/queue.ts";

type Input = ToolInput<typeof company_domain_set>;

/** Only a company's owner and admins set its address for apps. */
function requireCompanyAdmin(ctx: CallContext): string {
  if (ctx.accountKind !== "company" || !ctx.account) {
    throw new ToolError(
      "forbidden",
      "A company address for apps belongs to an organization, and you act in your personal account. Create or join an organization with org_setup, then try again.",
    );
  }
  if (ctx.role !== "owner" && ctx.role !== "admin") {
    throw new ToolError(
      "forbidden",
      `Only the organization's owner and admins set up or remove its address for apps; you are a ${ctx.role ?? "member"}. Ask an admin. Nothing was changed.`,
    );
  }
  return ctx.account;
}

export function companyDomainFor(
  domains: Pick<DomainsContext, "db">,
  accountId: string,
): Promise<HostnameRow | undefined> {
  return domains.db
    .select()
    .from(hostnames)
    .where(and(eq(hostnames.accountId, accountId), eq(hostnames.kind, "company")))
    .then((rows) => rows[0]);
}

/** company_domain_set: sets (or replaces, after confirmation) the company's domain for apps, or removes it after confirmation. */
export function companyDomainSetTool(domains: DomainsContext) {
  return bindTool(company_domain_set, async (call) => {
    const account = requireCompanyAdmin(call.ctx);
    return call.input.action === "remove" ? remove(domains, call, account) : set(domains, call, account);
  });
}

async function removeRow(tx: Tx, ctx: CallContext, row: HostnameRow): Promise<boolean> {
  const gone = await tx
    .delete(hostnames)
    .where(
      and(eq(hostnames.hostname, row.hostname), eq(hostnames.accountId, row.accountId), eq(hostnames.kind, "company")),
    )
    .returning();
  if (!gone[0]) return false;
  await cancelJob(tx, HOSTNAME_CHECK, row.hostname);
  await hostnameEvent(
    tx,
    ctx,
    gone[0],
    "company_domain",
    "removed",
    `${actorOf(ctx)} stopped using ${row.hostname} as the company's address for apps`,
  );
  return true;
}

function confirmQuestion(domains: DomainsContext, ctx: CallContext, input: Input, message: string, title: string) {
  return {
    ask: buildQuestion(
      domains.confirmKey,
      { sub: ctx.sub, tool: "company_domain_set", input },
      {
        message,
        properties: { confirm: { type: "boolean", title } },
        required: ["confirm"],
        fallback: "link" as const,
        data: { domain: input.domain ?? null },
      },
    ),
  };
}

function declined(current: HostnameRow | undefined, what: string): { text: string; data: CompanyDomainSetOutput } {
  return {
    text: `The user did not confirm, so nothing was changed.`,
    data: {
      status: "needs_user",
      domain: current?.hostname ?? null,
      stage: current?.stage ?? null,
      records: current ? viewOf(current).records : [],
      userAction: {
        kind: "ask_user",
        message: `The user chose not to ${what}.`,
        fields: [],
        url: null,
        expiresAt: null,
      },
    },
  };
}

async function set(
  domains: DomainsContext,
  { ctx, input, confirmation, answer }: ToolCall<Input>,
  account: string,
): Promise<ToolOutcome<CompanyDomainSetOutput>> {
  if (!input.domain)
    throw new ToolError(
      "invalid_input",
      "Give domain for action set, e.g. apps.acme.com (a subdomain of the company's domain, used only for apps).",
    );
  const domain = checkOwnHostname(input.domain, domains.config, "domain");
  const current = await companyDomainFor(domains, account);
  if (current?.hostname === domain) {
    const view = viewOf(current);
    return {
      text: `${domain} is already the company's address for apps (stage: ${view.stage}).${view.stage === "dns" ? `\nRecords:\n${recordsText(view.records)}` : ""}`,
      data: { status: "set", domain, stage: view.stage, records: view.records },
    };
  }
  const [existing] = await domains.db.select().from(hostnames).where(eq(hostnames.hostname, domain));
  const takeover = existing && lapsed(existing, account) ? existing : null;
  if (existing && !takeover) throw heldElsewhere(domain, existing, account);
  if (current && !confirmation) {
    return confirmQuestion(
      domains,
      ctx,
      input,
      `Replace the company's address for apps ${current.hostname} with ${domain}? Apps stop opening at <address>.${current.hostname} now, and open at <address>.${domain} once its DNS records are in place.`,
      `Yes, switch to ${domain}`,
    );
  }
  if (current && answer?.confirm !== true) return declined(current, `replace ${current.hostname}`);
  const token = randomId(18);
  const row = await domains.db.transaction(async (tx) => {
    if (confirmation) await consumeConfirm(tx, confirmUses, confirmation);
    if (current) await removeRow(tx, ctx, current);
    if (takeover) {
      const gone = await tx
        .delete(hostnames)
        .where(and(eq(hostnames.hostname, domain), eq(hostnames.token, takeover.token)))
        .returning();
      if (gone[0]) {
        await cancelJob(tx, HOSTNAME_CHECK, domain);
        await hostnameEvent(
          tx,
          null,
          gone[0],
          gone[0].kind === "company" ? "company_domain" : "hostname",
          gone[0].kind === "company" ? "removed" : "disconnected",
          `Hatch released ${domain}: its claim was never proven by DNS in 7 days, and another account claimed it`,
          { reason: "lapsed" },
        );
      }
    }
    const [inserted] = await tx
      .insert(hostnames)
      .values({
        hostname: domain,
        kind: "company",
        accountId: account,
        appId: null,
        address: null,
        createdBy: ctx.sub,
        token,
        records: wantedRecords("company", domain, token, domains.config),
      })
      .onConflictDoNothing()
      .returning();
    if (!inserted)
      throw new ToolError("conflict", `${domain} was claimed by someone else a moment ago. Use another domain.`);
    await enqueueJob(tx, { kind: HOSTNAME_CHECK, key: domain });
    await hostnameEvent(
      tx,
      ctx,
      inserted,
      "company_domain",
      "set",
      `${actorOf(ctx)} set ${domain} as the company's address for apps`,
    );
    return inserted;
  });
  domains.jobs.wake();
  if (current) announceHostChanged(domains, current.hostname);
  const view = viewOf(row);
  return {
    text:
      `${domain} is set as the company's address for apps. Tell the user to add these records at the DNS provider of ${registrableDomain(domain)}:\n${recordsText(view.records)}\n` +
      `Once they are seen, apps open at ${domains.config.appsProtocol}//<address>.${domain}. Follow progress with company_domain.`,
    data: { status: "set", domain, stage: view.stage, records: view.records },
  };
}

async function remove(
  domains: DomainsContext,
  { ctx, input, confirmation, answer }: ToolCall<Input>,
  account: string,
): Promise<ToolOutcome<CompanyDomainSetOutput>> {
  const current = await companyDomainFor(domains, account);
  if (!current)
    throw new ToolError(
      "not_found",
      "The company has no address for apps to remove. company_domain shows what is set.",
    );
  if (!confirmation) {
    return confirmQuestion(
      domains,
      ctx,
      input,
      `Stop using ${current.hostname} as the company's address for apps? Apps stop opening at <address>.${current.hostname} and stay at their default addresses.`,
      `Yes, remove ${current.hostname}`,
    );
  }
  if (answer?.confirm !== true) return declined(current, `remove ${current.hostname}`);
  await domains.db.transaction(async (tx) => {
    await consumeConfirm(tx, confirmUses, confirmation);
    if (!(await removeRow(tx, ctx, current)))
      throw new ToolError("not_found", `${current.hostname} was removed a moment ago; nothing was changed.`);
  });
  announceHostChanged(domains, current.hostname);
  return {
    text: `Removed ${current.hostname}: apps open at their default addresses only. The user may delete its DNS records.`,
    data: { status: "removed", domain: current.hostname, stage: null, records: [] },
  };
}
