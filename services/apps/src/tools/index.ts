import type { ToolBinding } from "@hatch/shared";
import type { AppsContext } from "../context.ts";

/** Every apps tool that has a handler; the rest answer "not available yet". */
export function appsTools(_ctx: AppsContext): ToolBinding[] {
  return [];
}
