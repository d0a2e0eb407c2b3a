import type { ToolBinding } from "@hatch/platform";
import type { BillingContext } from "../context.ts";
import { billingTool } from "./billing.ts";

/** Every billing tool that has a handler. */
export function billingTools(ctx: BillingContext): ToolBinding[] {
  return [billingTool(ctx)];
}
