import { z } from "zod";
import { ORG_PERMISSIONS, ORG_ROLES } from "./tools/common.ts";

/** Roles and permissions inside an account (the contracts define the sets). A personal account's one person is its owner. */
export const ROLES = ORG_ROLES;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = ORG_PERMISSIONS;
export type Permission = (typeof PERMISSIONS)[number];

/** What orgs answers to `session.resolve`: the account a user acts as and what they may do in it. */
export const SessionSchema = z.object({
  account: z.string(),
  accountKind: z.enum(["personal", "company"]),
  /** The organization id when the account is a company; null for a personal account. */
  org: z.string().nullable(),
  /** The organization's name when the account is a company, so answers name it instead of its id. */
  orgName: z.string().nullable().optional(),
  role: z.enum(ROLES),
  permissions: z.array(z.enum(PERMISSIONS)),
});
export type Session = z.infer<typeof SessionSchema>;

export const ResolveSessionInputSchema = z.object({
  email: z.string(),
  name: z.string(),
  /**
   * The account to act as instead of the one the person acts as now (the dashboard's account switcher): answered only
   * when they belong to it, else `not_found`. A copy that predates it answers the current account; the gateway
   * compares the answer's account with the one it asked for.
   */
  account: z.string().optional(),
});

/** `session.accounts`: every account the signed-in person belongs to (personal and organization), for the switcher. */
export const SessionAccountsSchema = z.object({
  accounts: z.array(
    z.object({
      id: z.string(),
      kind: z.enum(["personal", "company"]),
      name: z.string(),
      role: z.enum(ROLES),
      /** The account their AI's calls act as now. */
      active: z.boolean(),
    }),
  ),
});
export type SessionAccounts = z.infer<typeof SessionAccountsSchema>;
