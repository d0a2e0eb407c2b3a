import { BodyTooLargeError } from "../auth/errors.ts";
import type { Auth, PublicUser } from "../auth/index.ts";
import { htmlResponse } from "./layout.ts";
import type { AccountSessions } from "../mcp/accounts.ts";
import { signedContext, websiteCaller } from "../services.ts";

export interface DashboardCallDeps {
  contextKey: Buffer;
  accounts: AccountSessions;
}

/**
 * The signed call context of a person on a dashboard page, with the account, organization, role and permissions they
 * act as (resolved as for a tool call), so a service checks the page's request exactly as it checks a tool's.
 */
export async function dashboardContext(
  deps: DashboardCallDeps,
  user: PublicUser,
  scope: "read" | "write",
): Promise<{ ctx: string; requestId: string }> {
  // The account the dashboard's switcher shows (dashboard/account-choice.ts), when it is not the active one.
  const caller = websiteCaller(user, {
    scope,
    client: "Hatch website",
    account: (user as { account?: string }).account,
  });
  return { ctx: await signedContext(deps, caller), requestId: caller.requestId };
}

type FormResult = Awaited<ReturnType<Auth["pages"]["form"]>>;

/**
 * A dashboard form post, read at most `maxBytes` (413 beyond) and CSRF-checked by `pages.form`: the form, or the
 * answer that refuses it.
 */
export async function readDashboardForm(
  auth: Pick<Auth, "pages">,
  request: Request,
  maxBytes: number,
): Promise<FormResult> {
  const tooLarge = () => ({ refused: htmlResponse("Request body too large", { status: 413 }) });
  if (Number(request.headers.get("content-length") ?? "0") > maxBytes) return tooLarge();
  try {
    return await auth.pages.form(request);
  } catch (error) {
    if (error instanceof BodyTooLargeError) return tooLarge();
    throw error;
  }
}
