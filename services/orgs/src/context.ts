import {
  deriveKey,
  newEvent,
  signContext,
  type CallContext,
  type HatchEvent,
  type NewEventFields,
} from "@hatch/contracts";
import { writeEvent, type Bus, type Database, type EntitlementsCache, type Logger } from "@hatch/platform";
import type { OrgsConfig } from "./config.ts";
import type { Tx } from "./db/accounts.ts";
import type { OrgCaller } from "./db/members.ts";
import { outbox } from "./db/schema.ts";
import type { Mailer } from "./mail/mailer.ts";
import { effectivePermissions } from "./roles.ts";

/** What the orgs service's tools and rpc methods share. */
export interface OrgsContext {
  db: Database;
  config: OrgsConfig;
  bus: Bus;
  /** Verifies (and, for calls orgs makes on a user's behalf, signs) call contexts. */
  contextKey: Buffer;
  /** Signs and checks the confirm tokens of this service's questions. */
  confirmKey: Buffer;
  mailer: Mailer;
  logger: Logger;
  /** What billing allows each account (seats); absent in unit tests, where nothing is limited. */
  entitlements?: EntitlementsCache;
}

export function orgsConfirmKey(secret: string): Buffer {
  return deriveKey(secret, "orgs:confirm");
}

/**
 * A signed context for a call orgs makes for the caller (to the apps service), carrying what orgs itself
 * just checked in its own database rather than what the gateway had cached.
 */
export function contextFor(orgs: OrgsContext, ctx: CallContext, caller: OrgCaller): string {
  const { v: _v, iat: _iat, exp: _exp, ...claims } = ctx;
  return signContext(
    {
      ...claims,
      account: caller.accountId,
      accountKind: "company",
      org: caller.accountId,
      role: caller.role,
      permissions: effectivePermissions(caller.role, caller.permissions),
    },
    orgs.contextKey,
  );
}

export interface OrgEventFields extends Omit<NewEventFields, "account" | "org"> {
  /** Users whose session (account, role, permissions) this changes: the gateway drops what it cached for them. */
  affectedUsers?: string[];
}

/** Records an event about an organization inside the caller's transaction. */
export async function recordOrgEvent(
  tx: Tx,
  ctx: CallContext | null,
  orgId: string,
  fields: OrgEventFields,
): Promise<HatchEvent> {
  const { affectedUsers, details, ...rest } = fields;
  const event = newEvent("orgs", ctx, {
    ...rest,
    account: orgId,
    org: orgId,
    details: { ...details, ...(affectedUsers ? { affectedUsers } : {}) },
  });
  await writeEvent(tx, outbox, event);
  return event;
}
