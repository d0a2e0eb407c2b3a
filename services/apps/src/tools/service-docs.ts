import { bindTool } from "@hatch/platform";
import { service_docs } from "@hatch/contracts";
import { developerReference } from "../reference/reference.ts";
import { appsRootOrigin } from "../config.ts";
import type { AppsContext } from "../context.ts";

/** service_docs: the developer reference, the same text as GET /mcp/docs, sent once (as the text). */
export function serviceDocsTool(app: AppsContext) {
  return bindTool(service_docs, async ({ input }) => {
    const content = developerReference(input.topic, { appsOrigin: appsRootOrigin(app.config) });
    const url = `${app.config.gatewayUrl}/mcp/docs`;
    return { text: content, data: { topic: input.topic, url } };
  });
}
