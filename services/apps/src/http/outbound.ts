import type { AiChatReply, AiChatRequest } from "../spec/server-code.ts";
import type { Viewer } from "./viewer.ts";
import type { HostedApp } from "./site.ts";

// What leaves the app host on an app's behalf: calls to the APIs its service.json declares (the secret injected here)
// and AI chat calls paid by its AI key choice (the key added here). Both the browser routes (/_hatch/api/…,
// /_hatch/ai/chat) and server code (env.api, env.ai.chat) go through these two functions, so the rules live in one
// place. Failures are DataErrors with a message the app's developer can act on; no secret or key is ever in one.

export interface ApiCallInit {
  method: string;
  /** Headers to send; the host drops hop-by-hop ones, cookies and any header the secret goes in. */
  headers: Record<string, string>;
  body: Uint8Array | null;
}

export interface ApiCallResult {
  status: number;
  /** Content-Type and the few other headers passed back (never Set-Cookie). */
  headers: Record<string, string>;
  /** The answer's body, with any occurrence of the secret's value replaced. */
  body: Uint8Array;
}

/** Who makes an outbound call: a page of the app (a viewer, maybe anonymous) or the app's server code for one. */
export interface OutboundCaller {
  source: "browser" | "server";
  viewer: Viewer | null;
  /**
   * Whose calls count together for per-viewer limits when there is no viewer (the browser routes pass DataCaller's
   * rateKey, by address); without it all anonymous calls to one app share one allowance.
   */
  rateKey?: string;
}

export interface Outbound {
  /** `path` is what follows the API's base url (a path and an optional query), e.g. "/weather?q=Paris". */
  callApi(
    app: HostedApp,
    name: string,
    path: string,
    init: ApiCallInit,
    caller: OutboundCaller,
  ): Promise<ApiCallResult>;
  aiChat(app: HostedApp, request: AiChatRequest, caller: OutboundCaller): Promise<AiChatReply>;
}
