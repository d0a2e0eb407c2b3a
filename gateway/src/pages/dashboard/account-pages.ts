import { Elysia } from "elysia";
import type { Params } from "../../auth/index.ts";
import { localPath, redirect } from "../../auth/http.ts";
import { cookieHeaders } from "../../auth/index.ts";
import { accountCookie } from "./account-choice.ts";
import { Refusal } from "./calls.ts";
import type { Signed } from "./deps.ts";

// `POST /dashboard/account`: the account switcher's form. It only remembers which account the dashboard shows (a
// cookie bound to the person); the account must be one the person belongs to now, and every page after it still asks
// orgs, which answers only for an account of theirs.

export interface AccountPagesKit {
  posted: (request: Request, back: string) => Promise<{ state: Signed; params: Params } | Response>;
  problem: (state: Signed, error: unknown) => Response;
}

export function accountPages(deps: { baseUrl: string }, kit: AccountPagesKit) {
  const secure = deps.baseUrl.startsWith("https:");
  async function switchAccount(request: Request): Promise<Response> {
    const form = await kit.posted(request, "/dashboard");
    if (form instanceof Response) return form;
    const { state, params } = form;
    const wanted = params.get("account") ?? "";
    const account = state.view?.accounts.find((a) => a.id === wanted);
    if (!account) return kit.problem(state, new Refusal("not_found", "That account is not one of yours."));
    const path = localPath(params.get("back") ?? "", deps.baseUrl);
    const back = path?.startsWith("/dashboard") ? path : "/dashboard";
    return redirect(back, cookieHeaders([...state.setCookies, accountCookie(state.user.id, account.id, secure)]));
  }
  return new Elysia({ name: "hatch-dashboard-account" }).post(
    "/dashboard/account",
    ({ request }) => switchAccount(request),
    { parse: "none" },
  );
}
