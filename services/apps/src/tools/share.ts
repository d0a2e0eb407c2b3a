import { bindTool, consumeConfirm, type ToolOutcome } from "@hatch/platform";
import { share, ToolError, type ShareOutput, plural } from "@hatch/contracts";
import { and, eq, inArray } from "drizzle-orm";
import { appUrl, requireOwnedApp } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appEvent } from "../events.ts";
import { appPeople, appsTable, confirmUses } from "../db/schema.ts";
import { gateMakePublic } from "../public-gate.ts";

/** share: visibility, people by email, aiDiscoverable. Making an app public needs the user's own confirmation. */
export function shareTool(app: AppsContext) {
  return bindTool(share, async ({ ctx, input, answer, confirmation }): Promise<ToolOutcome<ShareOutput>> => {
    const current = await requireOwnedApp(app.db, ctx, input.address, { action: "change who can open it" });
    // Adding people to a private app means the user wants them to open it: it becomes `people` (and the answer says so).
    const widened = input.visibility === undefined && current.visibility === "private" && (input.add?.length ?? 0) > 0;
    const visibility = input.visibility ?? (widened ? "people" : current.visibility);
    const aiDiscoverable = visibility === "public" ? (input.aiDiscoverable ?? current.aiDiscoverable) : false;
    if (input.aiDiscoverable && visibility !== "public") {
      throw new ToolError(
        "invalid_input",
        `aiDiscoverable can be on only for public apps, and ${input.address} would be ${visibility}. Nothing was changed. Make it public first (visibility "public"; the user confirms), or leave aiDiscoverable out.`,
      );
    }
    const overlap = (input.add ?? []).filter((e) =>
      (input.remove ?? []).some((r) => r.toLowerCase() === e.toLowerCase()),
    );
    if (overlap.length > 0)
      throw new ToolError("invalid_input", `${overlap.join(", ")} is both added and removed. Nothing was changed.`);
    const goesPublic = visibility === "public" && current.visibility !== "public";
    if (goesPublic) {
      const subject = `"${current.name}" (${appUrl(app.config, current.address)})`;
      const gate = gateMakePublic(app, {
        ctx,
        tool: "share",
        input,
        answer,
        confirmation,
        subject,
        data: { address: current.address },
      });
      if ("ask" in gate) return gate;
      if ("declined" in gate)
        return {
          text: "The user did not confirm, so nothing was changed.",
          data: { status: "updated", address: current.address, visibility: current.visibility },
        };
    }
    const people = await app.db.transaction(async (tx) => {
      if (confirmation) await consumeConfirm(tx, confirmUses, confirmation);
      await tx
        .update(appsTable)
        .set({ visibility, aiDiscoverable, updatedAt: new Date() })
        .where(eq(appsTable.id, current.id));
      const add = [...new Set((input.add ?? []).map((e) => e.toLowerCase()))];
      if (add.length > 0)
        await tx
          .insert(appPeople)
          .values(add.map((email) => ({ appId: current.id, email })))
          .onConflictDoNothing();
      const remove = (input.remove ?? []).map((e) => e.toLowerCase());
      if (remove.length > 0)
        await tx.delete(appPeople).where(and(eq(appPeople.appId, current.id), inArray(appPeople.email, remove)));
      await appEvent(tx, ctx, "shared", current, {
        summary: `visibility ${visibility}${add.length ? `, ${add.length} added` : ""}${remove.length ? `, ${remove.length} removed` : ""}`,
        visibility,
        previousVisibility: current.visibility,
        aiDiscoverable,
        added: add.length,
        removed: remove.length,
      });
      const rows = await tx
        .select({ email: appPeople.email })
        .from(appPeople)
        .where(eq(appPeople.appId, current.id))
        .orderBy(appPeople.email);
      return rows.map((r) => r.email);
    });
    app.logger.info("shared", { address: current.address, visibility, people: people.length });
    const url = appUrl(app.config, current.address);
    return {
      text: `${widened ? `${current.address} was private, so it is now shared with people. ` : ""}${summary(current.address, url, visibility, people, aiDiscoverable)}`,
      data: { status: "updated", address: current.address, url, visibility, people, aiDiscoverable },
    };
  });
}

function summary(address: string, url: string, visibility: string, people: string[], aiDiscoverable: boolean): string {
  const who: Record<string, string> = {
    private: "only you can open it",
    org: "everyone in your organization can open it",
    people:
      people.length > 0
        ? `you and ${people.join(", ")} can open it`
        : "only you can open it until you add people by email",
    public: `anyone with the link can open it${aiDiscoverable ? ", and AI assistants may recommend it" : ""}`,
  };
  const list =
    visibility !== "people" && people.length > 0
      ? ` (${plural(people.length, "person")} stay${people.length === 1 ? "s" : ""} on its list for visibility people)`
      : "";
  return `${address} (${url}) is ${visibility}: ${who[visibility]}.${list}`;
}
