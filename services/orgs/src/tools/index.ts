import type { Database, ToolBinding } from "@hatch/shared";
import { whoamiTool } from "./whoami.ts";

/** Every tool the orgs service handles today; the rest of its contracts answer "not available yet". */
export function orgsTools(db: Database): ToolBinding[] {
  return [whoamiTool(db)];
}
