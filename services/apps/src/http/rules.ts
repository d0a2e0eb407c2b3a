import type { DataRule } from "../spec/data-rules.ts";
import { DataError } from "./answers.ts";
import type { DataCaller } from "./caller.ts";

// The data rules of service.json (`anyone`, `signed_in`, `creator`, `org`, `owner`) for one caller.

/**
 * Whether a rule lets the caller do something. `creator` answers "creator": allowed for a signed-in viewer, on their
 * own documents or files only (the caller filters or compares `createdBy`).
 */
export function allows(rule: DataRule, caller: DataCaller): boolean | "creator" {
  const { viewer, app } = caller;
  switch (rule) {
    case "anyone":
      return true;
    case "signed_in":
      return viewer !== null;
    case "creator":
      return viewer !== null ? "creator" : false;
    case "org":
      return viewer !== null && viewer.account === app.accountId;
    case "owner":
      return viewer !== null && viewer.sub === app.ownerId;
  }
}

/** Why a rule refused, in words a viewer can act on. */
export function refusal(rule: DataRule, caller: DataCaller, action: string): DataError {
  if (!caller.viewer) return new DataError("forbidden", `Sign in to ${action} (hatch.signIn()).`);
  const who: Record<DataRule, string> = {
    anyone: "anyone",
    signed_in: "signed-in people",
    creator: "whoever created it",
    org: "members of the app owner's organization",
    owner: "the app's owner",
  };
  return new DataError(
    "forbidden",
    `Only ${who[rule]} may ${action} here; you are signed in as ${caller.viewer.email}.`,
  );
}
