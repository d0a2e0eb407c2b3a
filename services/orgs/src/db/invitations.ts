import { createHash } from "node:crypto";
import { randomId, type Role } from "@hatch/contracts";
import { and, asc, eq, gt, isNull } from "drizzle-orm";
import { asRole, effectivePermissions } from "../roles.ts";
import type { Tx } from "./accounts.ts";
import { accounts, invitations } from "./schema.ts";

export type InvitationRow = typeof invitations.$inferSelect;

export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** A fresh accept token (goes in the link, once) and the id the tools show. */
export function newInvitationSecrets(): { id: string; token: string } {
  return { id: `inv_${randomId(12)}`, token: randomId(32) };
}

const open = and(isNull(invitations.acceptedAt), isNull(invitations.revokedAt));

/** Invitations of an organization that are neither accepted nor revoked (expired ones included), oldest first. */
export function openInvitations(db: Tx, accountId: string): Promise<InvitationRow[]> {
  return db
    .select()
    .from(invitations)
    .where(and(eq(invitations.accountId, accountId), open))
    .orderBy(asc(invitations.createdAt), asc(invitations.email));
}

/** Invitations waiting for this email that can still be accepted, with their organization's name. */
export async function invitationsForEmail(db: Tx, email: string, now = new Date()) {
  return db
    .select({ invitation: invitations, orgName: accounts.name })
    .from(invitations)
    .innerJoin(accounts, eq(accounts.id, invitations.accountId))
    .where(and(eq(invitations.email, email.toLowerCase()), open, gt(invitations.expiresAt, now)))
    .orderBy(asc(invitations.createdAt));
}

/** An invitation as the contracts show one. */
export function invitationOut(row: InvitationRow, now = new Date()) {
  const role = asRole(row.role) as Exclude<Role, "owner">;
  return {
    id: row.id,
    email: row.email,
    role,
    permissions: effectivePermissions(role, row.permissions),
    invitedBy: row.invitedByEmail,
    invitedAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    status: row.expiresAt > now ? ("pending" as const) : ("expired" as const),
  };
}

export function invitationStatus(row: InvitationRow, now = new Date()): "pending" | "expired" | "revoked" | "accepted" {
  if (row.acceptedAt) return "accepted";
  if (row.revokedAt) return "revoked";
  return row.expiresAt > now ? "pending" : "expired";
}
