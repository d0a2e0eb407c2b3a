import { callRpc } from "@hatch/platform";
import {
  ChargeResultSchema,
  RefundResultSchema,
  rpcMethods,
  signContext,
  type CallContext,
  type ChargeResult,
  type RefundResult,
} from "@hatch/contracts";
import { createHash } from "node:crypto";
import type { DomainsContext } from "../context.ts";
import type { boughtDomains } from "../db/schema.ts";

// The bought domain's money, through the billing service: the first year when the person confirms (their own ctx),
// each renewal and any refund later (a ctx domains signs for the buyer, as billing's charge needs a person acting as
// the account). Every charge has an idempotency key, so asking twice never charges twice.

type BoughtRow = typeof boughtDomains.$inferSelect;

/** The person's ctx, signed again for a call domains makes for them. */
export function resign(ctx: CallContext, key: Buffer): string {
  const { v: _v, iat: _iat, exp: _exp, ...claims } = ctx;
  return signContext(claims, key);
}

/** A ctx for the buyer of a domain, for the charges and refunds jobs make without a person present. */
export function buyerContext(domains: DomainsContext, row: BoughtRow, rid: string): string {
  return signContext(
    {
      sub: row.boughtBy,
      email: row.buyerEmail ?? "",
      name: row.buyerName ?? "",
      account: row.accountId,
      accountKind: row.accountKind ?? "personal",
      org: row.accountKind === "company" ? row.accountId : null,
      role: null,
      permissions: [],
      scope: "write",
      client: { kind: "other", name: "hatch-domains", elicitation: { form: false, url: false } },
      grant: "system",
      rid,
    },
    domains.contextKey,
  );
}

/** The first year's key: one per confirmation. */
export const purchaseKey = (confirmId: string) => `domain:${confirmId}`;

/** A renewal's key: one per domain and renewal period (the expiry it extends). */
export function renewalKey(domain: string, renewsAt: Date): string {
  return `renew:${createHash("sha256").update(domain).digest("hex").slice(0, 24)}:${renewsAt.toISOString().slice(0, 10).replace(/-/g, "")}`;
}

export function charge(
  domains: DomainsContext,
  ctx: string,
  input: { accountId: string; amountMinor: number; description: string; key: string },
): Promise<ChargeResult> {
  return callRpc(
    domains.bus,
    "billing",
    rpcMethods.billing.charge,
    {
      accountId: input.accountId,
      amountMinor: input.amountMinor,
      currency: "USD",
      description: input.description,
      idempotencyKey: input.key,
    },
    ChargeResultSchema,
    { ctx, timeoutMs: 30_000 },
  );
}

export function refund(
  domains: DomainsContext,
  ctx: string,
  input: { accountId: string; key: string; reason: string },
): Promise<RefundResult> {
  return callRpc(
    domains.bus,
    "billing",
    rpcMethods.billing.refund,
    { accountId: input.accountId, idempotencyKey: input.key, reason: input.reason.slice(0, 200) },
    RefundResultSchema,
    { ctx, timeoutMs: 30_000 },
  );
}
