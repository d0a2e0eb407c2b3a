import type { ToolContract, Question } from "@hatch/contracts";
import type { Auth, BrowserState, Params, PublicUser } from "../../auth/index.ts";
import type { SafeHtml } from "../layout.ts";
import type { NoticeCookies } from "../notice.ts";
import type { DashboardCallDeps } from "./calls.ts";
import type { Notice } from "./views.ts";

// What the settings pages (settings.ts, account-delete.ts) take from the dashboard.

export type SettingsSigned = BrowserState & { user: PublicUser };
type Signed = SettingsSigned;

/** What index.ts lends this page: its sign-in check, CSRF-checked forms, post/redirect/get and the confirm step. */
export interface SettingsKit<S extends Signed> {
  guard: (handler: (state: S, notice: Notice) => Promise<Response>) => (request: Request) => Promise<Response>;
  posted: (request: Request, back: string) => Promise<{ state: S; params: Params } | Response>;
  done: (state: S, path: string, text: string) => Response;
  problem: (state: S, error: unknown) => Response;
  page: (state: S, title: string, body: SafeHtml, status?: number) => Response;
  askPage: (
    state: S,
    contract: ToolContract,
    input: unknown,
    back: string,
    question: Question,
    action: string,
  ) => Response;
}

export interface SettingsDeps extends DashboardCallDeps {
  auth: Pick<Auth, "account">;
  notices: NoticeCookies;
}
