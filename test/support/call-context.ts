import { expect } from "bun:test";
import type { Gateway } from "@hatch/gateway";
import { callRpc, type Bus } from "@hatch/platform";
import { LocalActResultSchema, rpcMethods, signContext, type CallContextClaims } from "@hatch/contracts";

/**
 * `claims` completed as the gateway completes them (the account, organization, role and permissions orgs resolves for
 * the user) and signed with `key`: a call context a test can send straight on the bus.
 */
export async function gatewaySignedContext(gateway: Gateway, key: Buffer, claims: CallContextClaims): Promise<string> {
  const s = await gateway.accounts.resolve(claims, { requestId: claims.rid, traceparent: "" });
  return signContext(
    { ...claims, account: s.account, accountKind: s.accountKind, org: s.org, role: s.role, permissions: s.permissions },
    key,
  );
}

/** The claims the gateway starts from for a person's call (not yet signed; gatewaySignedContext completes them). */
export function userClaims(
  user: { id: string; email: string; name: string },
  scope: "read" | "write" = "write",
): CallContextClaims {
  return {
    sub: user.id,
    email: user.email,
    name: user.name,
    permissions: [],
    scope,
    client: { kind: "other", name: "test", elicitation: { form: false, url: false } },
    grant: "test",
    rid: "test",
  };
}

/** A card on file for the account of `ctx` (on the free plan), as the local provider's checkout page adds it. */
export async function addTestCard(bus: Bus, ctx: string): Promise<void> {
  const done = await callRpc(
    bus,
    "billing",
    rpcMethods.billing.localAct,
    { action: "checkout", card: "ok", plan: "free" },
    LocalActResultSchema,
    { ctx },
  );
  expect(done.ok).toBe(true);
}
