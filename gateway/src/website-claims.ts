import type { CallContextClaims } from "@hatch/contracts";
import type { PublicUser } from "./auth/index.ts";

export interface WebsiteClaimsOptions {
  scope: "read" | "write";
  rid: string;
  /** How the activity log names where it happened ("Hatch website", "browser", "signup"). */
  client: string;
  grant: string;
}

/** The context claims of a person acting on Hatch's own pages (no AI client, no OAuth grant, no forms to elicit). */
export function websiteClaims(user: PublicUser, options: WebsiteClaimsOptions): CallContextClaims {
  return {
    sub: user.id,
    email: user.email,
    emailVerified: user.emailVerified,
    name: user.name,
    permissions: [],
    scope: options.scope,
    client: { kind: "other", name: options.client, elicitation: { form: false, url: false } },
    grant: options.grant,
    rid: options.rid,
  };
}
