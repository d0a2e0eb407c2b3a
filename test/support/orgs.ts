import { expect } from "bun:test";
import { randomId } from "@hatch/contracts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, count, desc, eq } from "drizzle-orm";
import { addresses, appsTable } from "../../services/apps/src/db/schema.ts";
import { mails } from "../../services/orgs/src/db/schema.ts";
import type { TestHatch } from "./hatch.ts";
import { callOk, textOf } from "./mcp.ts";

/** Calls a tool that must fail; returns its text (which ends with the error code in parentheses). */
export async function refused(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError).toBe(true);
  return textOf(result);
}

/** An app row straight in the apps schema (publishing is another issue's; these tests need apps to exist). */
export async function seedApp(
  hatch: TestHatch,
  app: { address: string; name: string; accountId: string; owner: { id: string; email: string; name: string } },
) {
  const db = hatch.databases.get("apps")!;
  const id = `app_${randomId(8)}`;
  await db.insert(addresses).values({ address: app.address, appId: id });
  await db.insert(appsTable).values({
    id,
    address: app.address,
    name: app.name,
    accountId: app.accountId,
    ownerId: app.owner.id,
    ownerEmail: app.owner.email,
    ownerName: app.owner.name,
    visibility: "org",
    currentVersion: 1,
    lastVersion: 1,
  });
  return id;
}

/** The latest 50 mails orgs kept for the dev outbox (to anyone), newest first, read from its table. */
export async function outboxMails(hatch: TestHatch) {
  const db = hatch.databases.get("orgs")!;
  return db
    .select()
    .from(mails)
    .where(eq(mails.status, "outbox"))
    .orderBy(desc(mails.createdAt), desc(mails.id))
    .limit(50);
}

/** The verification link in the newest verification mail to `email` (read from the orgs mail table). */
export async function verificationLink(hatch: TestHatch, email: string): Promise<string> {
  const db = hatch.databases.get("orgs")!;
  const [mail] = await db
    .select()
    .from(mails)
    .where(and(eq(mails.to, email.toLowerCase()), eq(mails.subject, "Verify your email for Hatch")))
    .orderBy(desc(mails.createdAt))
    .limit(1);
  const link = mail?.body?.match(/https?:\/\/\S+\/verify-email\?token=[A-Za-z0-9_.-]+/)?.[0];
  if (!link) throw new Error(`no verification mail to ${email}`);
  return link;
}

/** How many mails orgs has queued or kept, all told. */
export async function mailCount(hatch: TestHatch): Promise<number> {
  const [row] = await hatch.databases.get("orgs")!.select({ n: count() }).from(mails);
  return row?.n ?? 0;
}

/** The accept link in the newest invitation mail to `email` (read from the orgs mail table). */
export async function invitationLink(hatch: TestHatch, email: string): Promise<string> {
  const db = hatch.databases.get("orgs")!;
  // Newest first; a verification mail to the same address may be newer than the invitation.
  const all = await db.select().from(mails).where(eq(mails.to, email.toLowerCase())).orderBy(desc(mails.createdAt));
  const link = all.map((m) => m.body?.match(/https?:\/\/\S+\/invite\/[A-Za-z0-9_-]+/)?.[0]).find(Boolean);
  if (!link) throw new Error(`no invitation mail to ${email}`);
  return link;
}

export const today = () => new Date().toISOString().slice(0, 10);
export const dayOffset = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** `member` joins the organization `owner` has: invited by email (with `invite`'s role and permissions), accepted. */
export async function joinOrg(
  owner: Client,
  member: Client,
  email: string,
  invite: { role?: string; permissions?: readonly string[] } = {},
): Promise<void> {
  await callOk(owner, "org_invite", { emails: [email], ...invite });
  const mine = await callOk<{ invitationsForMe: { invitationId: string }[] }>(member, "org");
  await callOk(member, "org_setup", { action: "accept", invitationId: mine.invitationsForMe[0]!.invitationId });
}
