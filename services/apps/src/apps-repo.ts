import { ToolError, type CallContext, type Database } from "@hatch/shared";
import { eq } from "drizzle-orm";
import { appOrigin, type AppsConfig } from "./config.ts";
import { appsTable } from "./db/schema.ts";

export type AppRow = typeof appsTable.$inferSelect;

export function notFound(address: string): ToolError {
  return new ToolError("not_found", `You have no app at the address "${address}". Call list_tools to see your apps and their addresses.`);
}

/**
 * The app at `address` if the caller owns it. Someone else's app answers exactly like a missing one, so a
 * tool never tells whether another user's address exists.
 */
export async function requireOwnedApp(db: Pick<Database, "select">, ctx: CallContext, address: string, options: { forUpdate?: boolean } = {}): Promise<AppRow> {
  const query = db.select().from(appsTable).where(eq(appsTable.address, address));
  const [app] = options.forUpdate ? await query.for("update") : await query;
  if (!app || app.ownerId !== ctx.sub) throw notFound(address);
  return app;
}

/** "Managers" (interface spec): the owner, admins and managers of an organization. */
export const ORG_MANAGER_ROLES: readonly string[] = ["owner", "admin", "manager"];

/**
 * The app at `address` if the caller owns it or manages the organization it belongs to (acting in that organization
 * now). Anyone else gets exactly the answer of a missing app.
 */
export async function requireManagedApp(db: Pick<Database, "select">, ctx: CallContext, address: string): Promise<AppRow> {
  const [app] = await db.select().from(appsTable).where(eq(appsTable.address, address));
  if (!app) throw notFound(address);
  const manager = ctx.org !== null && ctx.org !== undefined && ctx.org === app.accountId && ORG_MANAGER_ROLES.includes(ctx.role ?? "");
  if (app.ownerId !== ctx.sub && !manager) throw notFound(address);
  return app;
}

export function appUrl(config: Pick<AppsConfig, "appsProtocol" | "appsDomain">, address: string): string {
  return `${appOrigin(config, address)}/`;
}

/** The account the caller acts as; every app belongs to one. */
export function accountOf(ctx: CallContext): string {
  if (!ctx.account) throw new ToolError("unavailable", "Hatch could not tell which account you act as right now. Try again in a moment.");
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
  throw new ToolError("forbidden", "Your role in this organization does not allow publishing apps. Ask an organization manager for the publish permission.");
}

/** Making an app public in a company needs owner/admin or the `share_public` permission. */
export function checkMayMakePublic(ctx: CallContext): void {
  if (ctx.accountKind !== "company") return;
  if (ctx.role === "owner" || ctx.role === "admin") return;
  if (ctx.permissions.includes("share_public")) return;
  throw new ToolError("forbidden", "Your role in this organization does not allow making apps public. Ask an organization admin for the share_public permission.");
}

export const iso = (date: Date): string => date.toISOString();
