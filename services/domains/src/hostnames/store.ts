import { callRpc, encodeJson, writeEvent, type Database } from "@hatch/platform";
import {
  newEvent,
  rpcMethods,
  signContext,
  subjects,
  ToolError,
  AppLookupSchema,
  type AppLookup,
  type CallContext,
  type DnsRecord,
  type HatchEvent,
} from "@hatch/contracts";
import type { DomainsContext } from "../context.ts";
import { hostnames, outbox, type ConnectionStage } from "../db/schema.ts";
import { recordsOut } from "./records.ts";

export type HostnameRow = typeof hostnames.$inferSelect;
export type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

/** The job that checks a hostname's DNS and certificate (key = hostname). */
export const HOSTNAME_CHECK = "hostname.check";

/** How long an unverified claim holds a hostname against another account (then anyone who proves it takes it over). */
export const STALE_CLAIM_MS = 7 * 24 * 3_600_000;

/** A hostname as custom_domains and custom_domain show it. */
export interface HostnameView {
  hostname: string;
  stage: ConnectionStage;
  records: DnsRecord[];
  problem: string | null;
  checkedAt: string | null;
}

export function viewOf(row: HostnameRow): HostnameView {
  return {
    hostname: row.hostname,
    stage: row.stage,
    records: recordsOut(row.hostname, row.records),
    problem: row.problem,
    checkedAt: row.checkedAt?.toISOString() ?? null,
  };
}

/** Writes a domains event about a hostname in the change's transaction (app = its address, when it has one). */
export async function hostnameEvent(
  tx: Pick<Database, "insert">,
  ctx: CallContext | null,
  row: Pick<HostnameRow, "hostname" | "kind" | "accountId" | "address">,
  entity: "hostname" | "company_domain",
  verb: string,
  summary: string,
  details: Record<string, unknown> = {},
): Promise<HatchEvent> {
  const event = newEvent("domains", ctx, {
    entity,
    verb,
    summary,
    app: row.address ?? null,
    account: row.accountId,
    org: ctx && ctx.account === row.accountId ? (ctx.org ?? null) : null,
    details: { hostname: row.hostname, kind: row.kind, ...details },
  });
  await writeEvent(tx, outbox, event);
  return event;
}

/** Tells every app host to forget what it cached about `hostname` (after the change committed). */
export function announceHostChanged(ctx: Pick<DomainsContext, "bus" | "logger">, hostname: string): void {
  try {
    ctx.bus.publish(subjects.domainsHostChanged, encodeJson({ hostname }));
  } catch (error) {
    // Committed already: app hosts see the change when their short cache entry runs out.
    ctx.logger.warn("host change not broadcast", { hostname, error });
  }
}

/** Who acts, in words, for summaries. */
export function actorOf(ctx: CallContext | null): string {
  return ctx ? `${ctx.name} <${ctx.email}>` : "Hatch";
}

/**
 * The app at `address` if the caller may manage it, asked of the apps service with the caller's ctx signed again by
 * domains (the runtime verified it; apps checks ownership or the organization role itself).
 */
export async function lookupApp(
  domains: Pick<DomainsContext, "bus" | "contextKey">,
  ctx: CallContext,
  address: string,
  requestId?: string,
): Promise<AppLookup> {
  const { v: _v, iat: _iat, exp: _exp, ...claims } = ctx;
  return callRpc(domains.bus, "apps", rpcMethods.apps.appLookup, { address }, AppLookupSchema, {
    ctx: signContext(claims, domains.contextKey),
    requestId,
  });
}

/** The account the caller acts as. */
export function accountOf(ctx: CallContext): string {
  if (!ctx.account)
    throw new ToolError(
      "unavailable",
      "Hatch could not tell which account you act as right now. Try again in a moment.",
    );
  return ctx.account;
}
