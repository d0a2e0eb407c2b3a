import { createAiChat } from "../ai/chat.ts";
import { createApiCaller } from "./call.ts";
import type { AppsContext } from "../context.ts";
import type { Outbound } from "../http/outbound.ts";

/** The app host's outbound calls. */
export function createOutbound(ctx: AppsContext): Outbound {
  return {
    callApi: createApiCaller(ctx),
    aiChat: createAiChat(ctx),
  };
}
