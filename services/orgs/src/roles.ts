import { PERMISSIONS, type Permission, type Role } from "@hatch/contracts";

// Who may do what in an account. The contracts name the sets (shared/contracts/src/tools/common.ts); this is what
// they mean, and every orgs tool checks it against the orgs database (never only against the caller's ctx).
//
//   owner    exactly one; everything; the only one who transfers ownership; cannot be removed or demoted
//   admin    company admin: everything else, including the company domain and billing
//   manager  invites, changes roles and permissions, removes people, pauses apps, reads the activity log
//   member   publishes and manages their own apps
//
// "Managers" in the interface spec's sense are owner, admin and manager. A manager acts only on people whose
// role is at most their own (never the owner), gives roles at most their own, and gives only permissions they
// hold themselves.

const RANK: Record<Role, number> = { owner: 3, admin: 2, manager: 1, member: 0 };

/** What each role holds without extras. Owners and admins hold every permission. */
export const BASE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: PERMISSIONS,
  admin: PERMISSIONS,
  manager: ["publish", "share_public"],
  member: ["publish"],
};

export function isRole(value: string): value is Role {
  return value in RANK;
}

export function asRole(value: string): Role {
  if (!isRole(value)) throw new Error(`unknown role "${value}" in the orgs database`);
  return value;
}

export function isManager(role: Role): boolean {
  return RANK[role] >= RANK.manager;
}

export function isCompanyAdmin(role: Role): boolean {
  return RANK[role] >= RANK.admin;
}

/** The role's own permissions plus the extras, in the contract's order. */
export function effectivePermissions(role: Role, extras: readonly string[]): Permission[] {
  const held = new Set<string>([...BASE_PERMISSIONS[role], ...extras]);
  return PERMISSIONS.filter((p) => held.has(p));
}

/** Only what goes beyond the role is stored. */
export function extrasFor(role: Role, permissions: readonly string[]): Permission[] {
  const base = new Set<string>(BASE_PERMISSIONS[role]);
  return PERMISSIONS.filter((p) => permissions.includes(p) && !base.has(p));
}

/** May `actor` change or remove someone whose role is `target`? */
export function canManage(actor: Role, target: Role): boolean {
  return isManager(actor) && target !== "owner" && RANK[target] <= RANK[actor];
}

/** May `actor` give `role` (by invitation or change)? Ownership moves only by transfer. */
export function canAssign(actor: Role, role: Role): boolean {
  return isManager(actor) && role !== "owner" && RANK[role] <= RANK[actor];
}

/** The permissions in `wanted` that `actor` does not hold and so may not give. */
export function permissionsBeyond(
  actor: { role: Role; extras: readonly string[] },
  wanted: readonly string[],
): string[] {
  const held = new Set<string>(effectivePermissions(actor.role, actor.extras));
  return wanted.filter((p) => !held.has(p));
}

/** The `can` block of the org tool. */
export function capabilities(role: Role, permissions: readonly Permission[]) {
  return {
    invite: isManager(role),
    manageMembers: isManager(role),
    pauseApps: isManager(role),
    readActivity: isManager(role),
    setCompanyDomain: isCompanyAdmin(role),
    manageBilling: isCompanyAdmin(role) || permissions.includes("billing"),
    transferOwnership: role === "owner",
  };
}

/** Orders members: owner first, then by role, then by email. */
export function byRoleThenEmail(a: { role: Role; email: string }, b: { role: Role; email: string }): number {
  return RANK[b.role] - RANK[a.role] || a.email.localeCompare(b.email);
}
