import { AiKeyPageSchema, deriveKey, rpcMethods, type AiKeyScope } from "@hatch/contracts";
import { callRpc } from "@hatch/platform";
import { dashboardContext } from "../../gateway/src/pages/dashboard-context.ts";
import type { PublicUser } from "../../gateway/src/auth/index.ts";
import { TEST_SECRET, type TestHatch } from "./hatch.ts";

/** Stores an AI key the way the dashboard page does: the apps rpc with the person's own signed context. */
export async function addAiKey(
  hatch: TestHatch,
  user: PublicUser,
  target: { scope: AiKeyScope; address?: string; provider: string; key: string },
) {
  const { ctx } = await dashboardContext(
    { contextKey: deriveKey(TEST_SECRET, "ctx"), accounts: hatch.gateway.accounts },
    user,
    "write",
  );
  return callRpc(hatch.bus, "apps", rpcMethods.apps.aiKeySet, target, AiKeyPageSchema, { ctx });
}

/** The account a user acts in now (their personal account until they create or join an organization). */
export async function accountOf(hatch: TestHatch, user: PublicUser): Promise<string> {
  const claims = {
    sub: user.id,
    email: user.email,
    name: user.name,
    permissions: [],
    scope: "read" as const,
    client: { kind: "other" as const, name: "test", elicitation: { form: false, url: false } },
    grant: "test",
    rid: "test",
  };
  return (await hatch.gateway.accounts.resolve(claims, { requestId: "test", traceparent: "" })).account;
}
