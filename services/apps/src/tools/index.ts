import type { ToolBinding } from "@hatch/shared";
import type { AppsContext } from "../context.ts";
import { orgAppPauseTool } from "./org-app-pause.ts";
import { orgAppsTool } from "./org-apps.ts";

/** Every apps tool that has a handler; the rest answer "not available yet". */
export function appsTools(_ctx: AppsContext): ToolBinding[] {
  return [
    orgAppsTool(_ctx),
    orgAppPauseTool(_ctx),
  ];
}
