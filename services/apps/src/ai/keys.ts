import { newEvent, randomId, ToolError, type AiKeyScope, type CallContext } from "@hatch/contracts";
import { writeEvent, type Database } from "@hatch/platform";
import { and, asc, eq, or, type SQL } from "drizzle-orm";
import { ORG_MANAGER_ROLES, requireManagedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { DataError } from "../http/answers.ts";
import { aiKeys, appsTable, outbox } from "../db/schema.ts";
import { appEvent } from "../events.ts";
import type { HostedApp } from "../http/site.ts";
import { aiKeyAad } from "../secrets/sealed.ts";

// AI provider keys: who may add, see and delete them, and the one place a key is opened (for the provider call).
// A key never leaves this file in plain text except as `OpenedKey.key`, which only ai/chat.ts puts in a header.

/**
 * Company keys spend the organization's money: only its owner and admins add or delete them (stricter than the
 * managers who may manage apps). Every member may see that one exists (provider, who added it, when).
 */
export const COMPANY_KEY_ROLES: readonly string[] = ["owner", "admin"];

/** Whose key a request is about, after the caller's right to it was checked. */
export interface KeyOwner {
  scope: AiKeyScope;
  /** The user (mine), the account (company) or the app (tool). */
  ownerId: string;
  /** For scope tool. */
  app: AppRow | null;
  /** Who pays, in words: the person, "your organization", or the app. */
  label: string;
}

/** A key as tools and pages show it: never the key itself. */
export interface ListedKey {
  scope: AiKeyScope;
  provider: string;
  address: string | null;
  addedAt: string;
  addedBy: string;
}

const companyOnly =
  "Company keys exist only in a company account. You act in a personal account: use scope mine (your own key) or tool (one app's key).";

/**
 * Checks that the caller may manage keys of this scope and returns whose they are. mine: the caller; company: owner or
 * admin of the company account they act in; tool: the app's owner or a manager of its organization.
 */
export async function resolveKeyOwner(
  db: Pick<Database, "select">,
  ctx: CallContext,
  scope: AiKeyScope,
  address: string | undefined,
): Promise<KeyOwner> {
  if (scope === "tool") {
    if (!address)
      throw new ToolError(
        "invalid_input",
        "scope tool needs address: the app whose own key it is (list_tools shows your apps).",
      );
    const app = await requireManagedApp(db, ctx, address, { action: "manage its AI key" });
    return { scope, ownerId: app.id, app, label: `${app.name} (${app.address})` };
  }
  if (address)
    throw new ToolError(
      "invalid_input",
      `address is only for scope tool; a ${scope} key is not tied to one app. Leave address out, or use scope tool.`,
    );
  if (scope === "mine") return { scope, ownerId: ctx.sub, app: null, label: `${ctx.name} (${ctx.email})` };
  if (ctx.accountKind !== "company" || !ctx.account) throw new ToolError("forbidden", companyOnly);
  if (!COMPANY_KEY_ROLES.includes(ctx.role ?? "")) {
    throw new ToolError(
      "forbidden",
      "Only the organization's owner or an admin may add or delete its AI keys. Ask one of them, or use scope mine for your own key.",
    );
  }
  return { scope, ownerId: ctx.account, app: null, label: "your organization" };
}

const listed = (row: {
  scope: AiKeyScope;
  provider: string;
  address: string | null;
  addedAt: Date;
  addedByEmail: string;
}): ListedKey => ({
  scope: row.scope,
  provider: row.provider,
  address: row.address,
  addedAt: row.addedAt.toISOString(),
  addedBy: row.addedByEmail,
});

const keyColumns = {
  scope: aiKeys.scope,
  provider: aiKeys.provider,
  address: appsTable.address,
  addedAt: aiKeys.addedAt,
  addedByEmail: aiKeys.addedByEmail,
};

/** The keys of one owner, oldest first. */
export async function keysOf(
  db: Pick<Database, "select">,
  owner: Pick<KeyOwner, "scope" | "ownerId">,
): Promise<ListedKey[]> {
  const rows = await db
    .select(keyColumns)
    .from(aiKeys)
    .leftJoin(appsTable, eq(appsTable.id, aiKeys.appId))
    .where(and(eq(aiKeys.scope, owner.scope), eq(aiKeys.ownerId, owner.ownerId)))
    .orderBy(asc(aiKeys.addedAt), asc(aiKeys.provider));
  return rows.map(listed);
}

/**
 * Every key the caller may see: their own, their company's (any member), and those of the apps they own or, as a
 * manager acting in the organization, of its apps.
 */
export async function visibleKeys(db: Pick<Database, "select">, ctx: CallContext): Promise<ListedKey[]> {
  const seen: (SQL | undefined)[] = [and(eq(aiKeys.scope, "mine"), eq(aiKeys.ownerId, ctx.sub))];
  if (ctx.accountKind === "company" && ctx.account)
    seen.push(and(eq(aiKeys.scope, "company"), eq(aiKeys.ownerId, ctx.account)));
  const managesOrg = ctx.org && ORG_MANAGER_ROLES.includes(ctx.role ?? "");
  seen.push(
    and(
      eq(aiKeys.scope, "tool"),
      managesOrg
        ? or(eq(appsTable.ownerId, ctx.sub), eq(appsTable.accountId, ctx.org!))
        : eq(appsTable.ownerId, ctx.sub),
    ),
  );
  const rows = await db
    .select(keyColumns)
    .from(aiKeys)
    .leftJoin(appsTable, eq(appsTable.id, aiKeys.appId))
    .where(or(...seen))
    .orderBy(asc(aiKeys.scope), asc(aiKeys.addedAt), asc(aiKeys.provider));
  return rows.map(listed);
}

/** Whether the owner has any key (tool_ai's keyAvailable). */
export async function hasKey(db: Pick<Database, "select">, scope: AiKeyScope, ownerId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: aiKeys.id })
    .from(aiKeys)
    .where(and(eq(aiKeys.scope, scope), eq(aiKeys.ownerId, ownerId)))
    .limit(1);
  return row !== undefined;
}

/** Stores (or replaces) the owner's key for a provider, sealed, with an event that names the provider only. */
export async function setAiKey(
  apps: AppsContext,
  ctx: CallContext,
  owner: KeyOwner,
  provider: string,
  key: string,
): Promise<void> {
  const sealed = apps.sealer.seal(key, aiKeyAad(owner.scope, owner.ownerId, provider));
  await apps.db.transaction(async (tx) => {
    const values = {
      keyId: sealed.keyId,
      sealed: sealed.sealed,
      addedBy: ctx.sub,
      addedByEmail: ctx.email,
      addedAt: new Date(),
    };
    await tx
      .insert(aiKeys)
      .values({
        id: `aik_${randomId(12)}`,
        scope: owner.scope,
        ownerId: owner.ownerId,
        appId: owner.app?.id ?? null,
        provider,
        ...values,
      })
      .onConflictDoUpdate({ target: [aiKeys.scope, aiKeys.ownerId, aiKeys.provider], set: values });
    await keyEvent(tx, ctx, owner, "added", provider);
  });
}

/** Deletes the owner's key for a provider inside the caller's transaction; false when there was none. */
export async function deleteAiKey(
  tx: Pick<Database, "delete" | "insert">,
  ctx: CallContext,
  owner: KeyOwner,
  provider: string,
): Promise<boolean> {
  const gone = await tx
    .delete(aiKeys)
    .where(and(eq(aiKeys.scope, owner.scope), eq(aiKeys.ownerId, owner.ownerId), eq(aiKeys.provider, provider)))
    .returning({ id: aiKeys.id });
  if (gone.length === 0) return false;
  await keyEvent(tx, ctx, owner, "deleted", provider);
  return true;
}

/**
 * An app's key goes into the app's activity; a company key into the company's; a person's own key into their personal
 * account's log when they act in it (in a company it is theirs, not the company's business: no account).
 */
async function keyEvent(
  tx: Pick<Database, "insert">,
  ctx: CallContext,
  owner: KeyOwner,
  verb: "added" | "deleted",
  provider: string,
): Promise<void> {
  const details = { scope: owner.scope, provider };
  if (owner.app) {
    await appEvent(tx, ctx, `ai_key_${verb}`, owner.app, { ...details, summary: `${provider} key of the app` });
    return;
  }
  const account = owner.scope === "company" || ctx.accountKind === "personal" ? (ctx.account ?? null) : null;
  const whose = owner.scope === "company" ? "the organization's" : "their own";
  await writeEvent(
    tx,
    outbox,
    newEvent("apps", ctx, {
      entity: "ai_key",
      verb,
      summary: `${ctx.name} <${ctx.email}> ${verb} ${whose} ${provider} AI key`,
      account,
      org: owner.scope === "company" ? (ctx.org ?? null) : null,
      details,
    }),
  );
}

/** A key opened for one provider call, and whose it is (for the usage event). */
export interface OpenedKey {
  provider: string;
  baseUrl: string;
  key: string;
  payer: { scope: AiKeyScope; id: string };
}

const SCOPE_WORDS: Record<AiKeyScope, string> = {
  company: "the organization's key (ai_key scope company)",
  mine: "the key of the person who chose it (ai_key scope mine)",
  tool: "the app's own key (ai_key scope tool)",
};

/**
 * The key an app's AI call uses, by its choice: company → its account's key, mine → the chooser's own, tool → its
 * own. Provider: the one asked for (its key must exist), else the only key, else the oldest.
 */
export async function openKeyFor(
  apps: AppsContext,
  app: Pick<HostedApp, "id" | "accountId" | "ai">,
  provider?: string,
): Promise<OpenedKey> {
  const { choice, payerId } = app.ai;
  if (choice === "none")
    throw new DataError("forbidden", "AI calls are off for this app; its owner picks a key with tool_ai.");
  const ownerId = choice === "company" ? app.accountId : choice === "tool" ? app.id : payerId;
  const rows = ownerId
    ? await apps.db
        .select({ provider: aiKeys.provider, keyId: aiKeys.keyId, sealed: aiKeys.sealed })
        .from(aiKeys)
        .where(and(eq(aiKeys.scope, choice), eq(aiKeys.ownerId, ownerId)))
        .orderBy(asc(aiKeys.addedAt), asc(aiKeys.provider))
    : [];
  if (rows.length === 0) {
    throw new DataError(
      "forbidden",
      `This app pays for AI calls with ${SCOPE_WORDS[choice]}, and none has been added yet. Its owner adds one with ai_key.`,
    );
  }
  const row = provider ? rows.find((r) => r.provider === provider) : rows[0];
  if (!row) {
    throw new DataError(
      "forbidden",
      `This app has no ${provider} key (${SCOPE_WORDS[choice]}). Keys exist for: ${rows.map((r) => r.provider).join(", ")}. Leave provider out, or add a ${provider} key with ai_key.`,
    );
  }
  const baseUrl = apps.config.aiProviders.get(row.provider);
  if (!baseUrl)
    throw new DataError(
      "unavailable",
      `The AI provider ${row.provider} is not offered by this Hatch any more. Add a key of another provider with ai_key.`,
    );
  let key: string;
  try {
    key = apps.sealer.open({ keyId: row.keyId, sealed: row.sealed }, aiKeyAad(choice, ownerId!, row.provider));
  } catch (error) {
    // The sealing key is missing or the row does not match its owner: an operator's problem, never the viewer's.
    apps.logger.error("AI key could not be opened", {
      app: app.id,
      provider: row.provider,
      keyId: row.keyId,
      reason: error instanceof Error ? error.name : "unknown",
    });
    throw new DataError(
      "unavailable",
      "Hatch could not use this app's AI key right now. Its owner can add it again with ai_key.",
    );
  }
  return { provider: row.provider, baseUrl, key, payer: { scope: choice, id: ownerId! } };
}

/** The dashboard page where a person adds a key of this scope (the gateway's /dashboard/ai-keys). */
export function aiKeyPageUrl(
  gatewayUrl: string,
  scope: AiKeyScope,
  address?: string | null,
  provider?: string,
): string {
  const query = new URLSearchParams({ scope });
  if (address) query.set("app", address);
  if (provider) query.set("provider", provider);
  return `${gatewayUrl}/dashboard/ai-keys?${query}`;
}
