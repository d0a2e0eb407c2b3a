import { ToolError, type CallContext } from "@hatch/contracts";
import { type Database } from "@hatch/platform";
import { and, eq, or, sql } from "drizzle-orm";
import { appOrigin, type AppsConfig } from "./config.ts";
import { appPeople, appsTable } from "./db/schema.ts";

export type AppRow = typeof appsTable.$inferSelect;

export function notFound(address: string): ToolError {
  return new ToolError(
    "not_found",
    `You have no app at the address "${address}". Call list_tools to see your apps and their addresses.`,
  );
}

/** What only an app's owner may do, as the refusal to someone it is shared with says it ("delete it"). */
export interface OwnerOnly {
  action?: string;
}

/**
 * The app at `address` if the caller owns it. Someone else's app answers exactly like a missing one, so a
 * tool never tells whether another user's address exists; unless the caller can already see it (list_tools lists it
 * with its owner): then the answer says whose it is and that only its owner may do `action`.
 */
export async function requireOwnedApp(
  db: Pick<Database, "select">,
  ctx: CallContext,
  address: string,
  options: { forUpdate?: boolean } & OwnerOnly = {},
): Promise<AppRow> {
  const query = db.select().from(appsTable).where(eq(appsTable.address, address));
  const [app] = options.forUpdate ? await query.for("update") : await query;
  if (!app) throw notFound(address);
  if (app.ownerId !== ctx.sub) throw await notTheirs(db, ctx, app, options.action);
  return app;
}

/** The refusal of someone else's app: whose it is when the caller can see it, else exactly that of a missing app. */
export async function notTheirs(
  db: Pick<Database, "select">,
  ctx: CallContext,
  app: AppRow,
  action = "do this",
): Promise<ToolError> {
  if (sameOrganization(ctx, app)) return ownedByColleague(app);
  if (await sharedByEmail(db, ctx, app)) return sharedWithYou(app, action);
  return notFound(app.address);
}

/** The app is shared with the caller's verified email (visibility people), as list_tools lists it to them. */
async function sharedByEmail(db: Pick<Database, "select">, ctx: CallContext, app: AppRow): Promise<boolean> {
  if (app.visibility !== "people" || !ctx.emailVerified) return false;
  const [row] = await db
    .select({ appId: appPeople.appId })
    .from(appPeople)
    .where(and(eq(appPeople.appId, app.id), eq(appPeople.email, ctx.email.toLowerCase())))
    .limit(1);
  return row !== undefined;
}

const ownerOf = (app: AppRow) =>
  app.ownerName && app.ownerName !== app.ownerEmail ? `${app.ownerName} (${app.ownerEmail})` : app.ownerEmail;

/** An app shared with the caller by email: they may open it; what else they asked for is its owner's. */
function sharedWithYou(app: AppRow, action: string): ToolError {
  return new ToolError(
    "forbidden",
    `${app.address} is ${ownerOf(app)}'s app, shared with you: you can open it, but only its owner can ${action}. Ask them to.`,
  );
}

/** The app belongs to the organization the caller acts in (org_apps lists it to them, so naming its owner leaks nothing). */
function sameOrganization(ctx: CallContext, app: AppRow): boolean {
  return ctx.org !== null && ctx.org !== undefined && ctx.org === app.accountId;
}

/** Only the owner may do this to their app; an organization colleague is told whose it is and what they can do. */
function ownedByColleague(app: AppRow): ToolError {
  return new ToolError(
    "forbidden",
    `${app.address} is ${ownerOf(app)}'s app in your organization, and only its owner can do this. Nothing was changed. ` +
      "Ask them to do it; organization managers can pause it with org_app_pause, or move it to someone else by removing its owner with org_member_update.",
  );
}

const ADDRESS = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/**
 * What a model may give for an app: its address, its URL (https://my-todo.<apps domain>/...), or its exact name. Answers
 * the address when one app fits (an address first; else a name among the caller's own apps and their organization's),
 * the reference as given when none does (the tool then says it was not found), and refuses an ambiguous name.
 */
export async function resolveAppRef(db: Pick<Database, "select">, ctx: CallContext, ref: string): Promise<string> {
  const given = ref.trim();
  let candidate = given.toLowerCase();
  if (/^https?:\/\//i.test(given) && URL.canParse(given))
    candidate = new URL(given).hostname.split(".")[0] ?? candidate;
  else if (/^[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?\/?$/i.test(given)) candidate = candidate.split(".")[0]!;
  if (ADDRESS.test(candidate)) {
    const [exists] = await db
      .select({ address: appsTable.address })
      .from(appsTable)
      .where(eq(appsTable.address, candidate));
    if (exists) return candidate;
  }
  const mine = ctx.org
    ? or(eq(appsTable.ownerId, ctx.sub), eq(appsTable.accountId, ctx.org))
    : eq(appsTable.ownerId, ctx.sub);
  const named = await db
    .select({ address: appsTable.address })
    .from(appsTable)
    .where(and(mine, sql`lower(${appsTable.name}) = ${given.toLowerCase()}`))
    .limit(5);
  if (named.length === 1) return named[0]!.address;
  if (named.length > 1) {
    throw new ToolError(
      "invalid_input",
      `Several apps are named "${given}": ${named.map((a) => a.address).join(", ")}. Give the address of the one you mean.`,
    );
  }
  return ADDRESS.test(candidate) ? candidate : given;
}

/** "Managers" (interface spec): the owner, admins and managers of an organization. */
export const ORG_MANAGER_ROLES: readonly string[] = ["owner", "admin", "manager"];

/**
 * The app at `address` if the caller owns it or manages the organization it belongs to (acting in that organization
 * now). Anyone else gets the answer of a missing app, unless they can see it (as requireOwnedApp says).
 */
export async function requireManagedApp(
  db: Pick<Database, "select">,
  ctx: CallContext,
  address: string,
  options: OwnerOnly = {},
): Promise<AppRow> {
  const [app] = await db.select().from(appsTable).where(eq(appsTable.address, address));
  if (!app) throw notFound(address);
  const manager = sameOrganization(ctx, app) && ORG_MANAGER_ROLES.includes(ctx.role ?? "");
  if (app.ownerId !== ctx.sub && !manager) throw await notTheirs(db, ctx, app, options.action);
  return app;
}

export function appUrl(config: Pick<AppsConfig, "appsProtocol" | "appsDomain">, address: string): string {
  return `${appOrigin(config, address)}/`;
}

/** The account the caller acts as; every app belongs to one. */
export function accountOf(ctx: CallContext): string {
  if (!ctx.account)
    throw new ToolError(
      "unavailable",
      "Hatch could not tell which account you act as right now. Try again in a moment.",
    );
  return ctx.account;
}

/**
 * Publishing in a company needs a role above member or the `publish` permission; a personal account's
 * owner always may.
 */
export function checkMayPublish(ctx: CallContext): void {
  if (ctx.accountKind !== "company") return;
  if (ctx.role && ctx.role !== "member") return;
  if (ctx.permissions.includes("publish")) return;
  throw new ToolError(
    "forbidden",
    "Your role in this organization does not allow publishing apps. Ask an organization manager for the publish permission.",
  );
}

/** Making an app public in a company needs owner/admin or the `share_public` permission. */
export function checkMayMakePublic(ctx: CallContext): void {
  if (ctx.accountKind !== "company") return;
  if (ctx.role === "owner" || ctx.role === "admin") return;
  if (ctx.permissions.includes("share_public")) return;
  throw new ToolError(
    "forbidden",
    "Your role in this organization does not allow making apps public. Ask an organization admin for the share_public permission.",
  );
}

export const iso = (date: Date): string => date.toISOString();
