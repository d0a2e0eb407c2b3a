import type { Database } from "@hatch/platform";
import type { Auth, BrowserState } from "../../auth/index.ts";
import type { NoticeCookies } from "../notice.ts";
import type { Switched } from "./account-choice.ts";
import type { DashboardCallDeps } from "./calls.ts";

// What the dashboard pages (index.ts) and the insight pages (insight.ts) both take.

export interface DashboardPagesDeps extends DashboardCallDeps {
  auth: Pick<Auth, "pages" | "account">;
  baseUrl: string;
  /** The one-time words a page shows after a form that worked (notice.ts). */
  notices: NoticeCookies;
  /** The gateway's database: the public apps a person let learn who they are (app-consents.ts). */
  db: Database;
}

/** A signed-in person's request; `path` is the page's (its sub-menu section). */
export type Signed = BrowserState & Switched & { path?: string };
