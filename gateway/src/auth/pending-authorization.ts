import { checkAuthorizeRequest } from "./authorize-request.ts";
import type { AuthContext } from "./context.ts";
import { queryParams } from "./http.ts";

/** The client an authorization waiting behind sign-in or sign-up is for, as the consent page will name it. */
export interface PendingClient {
  name: string;
  /** Where its client id points (a metadata client's host), or null for a client registered here. */
  publishedBy: string | null;
}

/**
 * The pending authorization `next` leads to, checked like the authorize endpoint checks it: only a request that
 * would reach the consent page names a client, so a crafted link cannot put words in the page's heading.
 */
export async function pendingClient(ctx: AuthContext, next: string, source: string): Promise<PendingClient | null> {
  const url = new URL(next, ctx.config.baseUrl);
  if (url.pathname !== "/oauth/authorize") return null;
  const check = await checkAuthorizeRequest(ctx, queryParams(url), source);
  if (check.kind !== "ok") return null;
  const { client } = check.request;
  return { name: client.name, publishedBy: client.registration === "metadata" ? new URL(client.clientId).host : null };
}
