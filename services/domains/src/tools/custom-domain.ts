import { bindTool, checkLimitLocked, consumeConfirm, type ToolCall, type ToolOutcome } from "@hatch/platform";
import {
  buildQuestion,
  custom_domain,
  randomId,
  ToolError,
  type CallContext,
  type CustomDomainOutput,
  type ToolInput,
} from "@hatch/contracts";
import { and, count, eq } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { confirmUses, hostnames } from "../db/schema.ts";
import { checkNotUnderCompany, heldElsewhere, lapsed } from "../hostnames/claims.ts";
import { checkOwnHostname, normalizeHostname, registrableDomain } from "../hostnames/names.ts";
import { apexUnsupported, recordsText, wantedRecords } from "../hostnames/records.ts";
import {
  actorOf,
  announceHostChanged,
  HOSTNAME_CHECK,
  hostnameEvent,
  lookupApp,
  viewOf,
  type HostnameRow,
} from "../hostnames/store.ts";
import { cancelJob, enqueueJob } from "../jobs/queue.ts";

type Input = ToolInput<typeof custom_domain>;

/** In a company, custom domains need the `custom_domains` permission (owners and admins hold every permission). */
function requirePermission(ctx: CallContext): void {
  if (ctx.accountKind !== "company" || ctx.permissions.includes("custom_domains")) return;
  throw new ToolError(
    "forbidden",
    "Connecting or disconnecting custom domains in this organization needs the custom_domains permission. Ask an organization admin for it (org_member_update). Nothing was changed.",
  );
}

/** custom_domain: puts an app on the person's own hostname (records to add), or takes it off after confirmation. */
export function customDomainTool(domains: DomainsContext) {
  return bindTool(custom_domain, async (call) => {
    requirePermission(call.ctx);
    return call.input.action === "disconnect" ? disconnect(domains, call) : connect(domains, call);
  });
}

async function connect(
  domains: DomainsContext,
  { ctx, input, requestId }: ToolCall<Input>,
): Promise<ToolOutcome<CustomDomainOutput>> {
  const hostname = checkOwnHostname(input.hostname, domains.config);
  const app = await lookupApp(domains, ctx, input.address, requestId);
  if (apexUnsupported(hostname, domains.config)) {
    throw new ToolError(
      "invalid_input",
      `${hostname} is the top of its domain, and this Hatch server serves only subdomains (it has no fixed addresses for a domain's top). Use a subdomain such as www.${hostname} or app.${hostname}.`,
    );
  }
  const [existing] = await domains.db.select().from(hostnames).where(eq(hostnames.hostname, hostname));
  if (existing && existing.appId === app.appId) {
    // Connected already: answer its progress, and look at its DNS again now.
    await domains.db.transaction((tx) => enqueueJob(tx, { kind: HOSTNAME_CHECK, key: hostname }));
    domains.jobs.wake();
    return answer(app.address, existing, `${hostname} is already connected to ${app.address}.`);
  }
  const takeover = existing && lapsed(existing, app.accountId) ? existing : null;
  if (existing && !takeover) throw heldElsewhere(hostname, existing, app.accountId);
  await checkNotUnderCompany(domains, hostname, app.accountId);
  // Read before the transaction: billing may share the embedded database connection the transaction holds.
  const entitlements = await domains.entitlements.get(app.accountId);

  const token = randomId(18);
  const row = await domains.db.transaction(async (tx) => {
    // Counted under the account's lock: connects at once cannot pass the plan's custom domains together.
    await checkLimitLocked(tx, {
      entitlements,
      limit: "customDomains",
      accountId: app.accountId,
      used: async () => {
        const [used] = await tx
          .select({ n: count() })
          .from(hostnames)
          .where(and(eq(hostnames.accountId, app.accountId), eq(hostnames.kind, "custom")));
        return used?.n ?? 0;
      },
    });
    if (takeover) {
      const gone = await tx
        .delete(hostnames)
        .where(and(eq(hostnames.hostname, hostname), eq(hostnames.token, takeover.token)))
        .returning();
      if (gone[0]) {
        await cancelJob(tx, HOSTNAME_CHECK, hostname);
        await hostnameEvent(
          tx,
          null,
          gone[0],
          "hostname",
          "disconnected",
          `Hatch released ${hostname} from ${gone[0].address ?? "a company"}: its claim was never proven by DNS in 7 days, and another account claimed it`,
          { reason: "lapsed" },
        );
      }
    }
    const [inserted] = await tx
      .insert(hostnames)
      .values({
        hostname,
        kind: "custom",
        accountId: app.accountId,
        appId: app.appId,
        address: app.address,
        createdBy: ctx.sub,
        token,
        records: wantedRecords("custom", hostname, token, domains.config),
      })
      .onConflictDoNothing()
      .returning();
    if (!inserted)
      throw new ToolError(
        "conflict",
        `${hostname} was claimed by someone else a moment ago. Call custom_domains on ${app.address} to see its domains, or use another hostname.`,
      );
    await enqueueJob(tx, { kind: HOSTNAME_CHECK, key: hostname });
    await hostnameEvent(
      tx,
      ctx,
      inserted,
      "hostname",
      "connected",
      `${actorOf(ctx)} connected ${hostname} to ${app.name} (${app.address})`,
    );
    return inserted;
  });
  domains.jobs.wake();
  const text =
    `Connected ${hostname} to ${app.address}. Tell the user to add these records at the DNS provider of ${registrableDomain(hostname)}:\n` +
    `${recordsText(viewOf(row).records)}\n` +
    `Hatch checks the DNS by itself; once the records are seen, the HTTPS certificate follows and the app opens at https://${hostname}/. Follow progress with custom_domains.`;
  return { text, data: { status: "connected", address: app.address, hostname, domain: viewOf(row) } };
}

async function disconnect(
  domains: DomainsContext,
  { ctx, input, confirmation, answer: reply, requestId }: ToolCall<Input>,
): Promise<ToolOutcome<CustomDomainOutput>> {
  const hostname = normalizeHostname(input.hostname);
  const app = await lookupApp(domains, ctx, input.address, requestId);
  const [row] = await domains.db
    .select()
    .from(hostnames)
    .where(and(eq(hostnames.hostname, hostname), eq(hostnames.appId, app.appId)));
  if (!row)
    throw new ToolError(
      "not_found",
      `${hostname} is not connected to ${app.address}. custom_domains lists the app's domains.`,
    );
  if (row.kind === "bought")
    throw new ToolError(
      "invalid_input",
      `${hostname} was bought through Hatch for ${app.address}; it stays on the app. domain_status shows it.`,
    );
  if (!confirmation) {
    return {
      ask: buildQuestion(
        domains.confirmKey,
        { sub: ctx.sub, tool: "custom_domain", input },
        {
          message: `Take ${app.name} (${app.address}) off ${hostname}? Visitors of ${hostname} will no longer reach the app; it stays at ${app.url}/. Connecting it again needs the DNS check again.`,
          properties: { confirm: { type: "boolean", title: `Yes, disconnect ${hostname}` } },
          required: ["confirm"],
          fallback: "link",
          data: { address: app.address, hostname, domain: viewOf(row) },
        },
      ),
    };
  }
  if (reply?.confirm !== true) {
    return {
      text: `The user did not confirm, so ${hostname} stays connected to ${app.address}.`,
      data: {
        status: "needs_user",
        address: app.address,
        hostname,
        domain: viewOf(row),
        userAction: {
          kind: "ask_user",
          message: `The user chose to keep ${hostname}.`,
          fields: [],
          url: null,
          expiresAt: null,
        },
      },
    };
  }
  await domains.db.transaction(async (tx) => {
    await consumeConfirm(tx, confirmUses, confirmation);
    const gone = await tx
      .delete(hostnames)
      .where(and(eq(hostnames.hostname, hostname), eq(hostnames.appId, app.appId)))
      .returning();
    if (!gone[0])
      throw new ToolError("not_found", `${hostname} is no longer connected to ${app.address}; nothing was changed.`);
    await cancelJob(tx, HOSTNAME_CHECK, hostname);
    await hostnameEvent(
      tx,
      ctx,
      gone[0],
      "hostname",
      "disconnected",
      `${actorOf(ctx)} disconnected ${hostname} from ${app.name} (${app.address})`,
    );
  });
  announceHostChanged(domains, hostname);
  return {
    text: `Disconnected ${hostname} from ${app.address}. The app stays at ${app.url}/; the user may remove the DNS records for ${hostname}.`,
    data: { status: "disconnected", address: app.address, hostname, domain: null },
  };
}

function answer(address: string, row: HostnameRow, lead: string): { text: string; data: CustomDomainOutput } {
  const view = viewOf(row);
  const state =
    view.stage === "live"
      ? `It is live at https://${row.hostname}/.`
      : `Stage: ${view.stage}.${view.problem ? ` ${view.problem}` : ""}\nRecords:\n${recordsText(view.records)}`;
  return { text: `${lead} ${state}`, data: { status: "connected", address, hostname: row.hostname, domain: view } };
}
