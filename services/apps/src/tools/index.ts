import type { ToolBinding } from "@hatch/platform";
import type { AppsContext } from "../context.ts";
import { aiKeyTool } from "./ai-key.ts";
import { deleteToolTool } from "./delete-tool.ts";
import { listToolsTool } from "./list-tools.ts";
import { orgAppPauseTool } from "./org-app-pause.ts";
import { orgAppsTool } from "./org-apps.ts";
import { publishTool } from "./publish.ts";
import { rollbackTool } from "./rollback.ts";
import { serviceDocsTool } from "./service-docs.ts";
import { shareTool } from "./share.ts";
import { toolAiTool } from "./tool-ai.ts";
import { toolDataTool } from "./tool-data.ts";
import { toolSecretTool } from "./tool-secret.ts";
import { toolLogsTool } from "./tool-logs.ts";
import { toolStatsTool } from "./tool-stats.ts";

/** Every apps tool that has a handler; the rest answer "not available yet". */
export function appsTools(ctx: AppsContext): ToolBinding[] {
  return [
    publishTool(ctx),
    serviceDocsTool(ctx),
    listToolsTool(ctx),
    shareTool(ctx),
    rollbackTool(ctx),
    deleteToolTool(ctx),
    toolStatsTool(ctx),
    toolDataTool(ctx),
    toolLogsTool(ctx),
    orgAppsTool(ctx),
    orgAppPauseTool(ctx),
    toolSecretTool(ctx),
    aiKeyTool(ctx),
    toolAiTool(ctx),
  ];
}
