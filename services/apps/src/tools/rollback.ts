import { bindTool } from "@hatch/platform";
import { rollback, ToolError, plural, type RollbackOutput } from "@hatch/contracts";
import { desc, eq } from "drizzle-orm";
import { appUrl, iso, requireOwnedApp } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appEvent } from "../events.ts";
import { appsTable, versions } from "../db/schema.ts";
import { heldSecretsNote } from "../secrets/usage.ts";

/** rollback: make an older version current; without a version, list them so the user can choose. */
export function rollbackTool(app: AppsContext) {
  return bindTool(rollback, async ({ ctx, input }) => {
    const outcome = await app.db.transaction(async (tx) => {
      const current = await requireOwnedApp(tx, ctx, input.address, { forUpdate: true, action: "roll it back" });
      const rows = await tx
        .select()
        .from(versions)
        .where(eq(versions.appId, current.id))
        .orderBy(desc(versions.number));
      const url = appUrl(app.config, current.address);
      const list = (currentVersion: number | null): RollbackOutput["versions"] =>
        rows.map((v) => ({
          version: v.number,
          current: v.number === currentVersion,
          publishedAt: iso(v.createdAt),
          publishedBy: v.publisherEmail,
          fileCount: v.fileCount,
        }));
      const base = { address: current.address, url, previousVersion: current.currentVersion };
      if (input.version === undefined) {
        const lines = rows.map(
          (v) =>
            `- v${v.number}${v.number === current.currentVersion ? " (current)" : ""}: ${iso(v.createdAt)} by ${v.publisherEmail}, ${plural(v.fileCount, "file")}`,
        );
        return {
          text: rows.length
            ? `Versions of ${current.address} (${url}), newest first:\n${lines.join("\n")}\nNothing was changed. Call rollback again with the version the user picks.`
            : `${current.address} has no versions yet.`,
          data: {
            status: "choose_version" as const,
            ...base,
            currentVersion: current.currentVersion,
            versions: list(current.currentVersion),
          },
        };
      }
      if (!rows.some((v) => v.number === input.version)) {
        const known = rows.map((v) => v.number).join(", ") || "none";
        throw new ToolError(
          "not_found",
          `${current.address} has no version ${input.version} (its versions: ${known}). Nothing was changed.`,
        );
      }
      if (input.version === current.currentVersion) {
        return {
          text: `Version ${input.version} is already current for ${current.address}; nothing changed.`,
          data: {
            status: "already_current" as const,
            ...base,
            currentVersion: input.version,
            versions: list(input.version),
          },
        };
      }
      await tx
        .update(appsTable)
        .set({ currentVersion: input.version, updatedAt: new Date() })
        .where(eq(appsTable.id, current.id));
      await appEvent(tx, ctx, "rolled_back", current, {
        summary: `to version ${input.version} (was ${current.currentVersion})`,
        version: input.version,
        previousVersion: current.currentVersion,
      });
      app.logger.info("rolled back", { address: current.address, from: current.currentVersion, to: input.version });
      const config = rows.find((v) => v.number === input.version)?.config ?? {};
      const held = await heldSecretsNote({ db: tx }, current.id, config);
      return {
        text: `${current.address} now serves version ${input.version} (was ${current.currentVersion}) at ${url}. Version ${current.currentVersion} is kept; roll forward the same way.${held ? ` ${held}` : ""}`,
        data: { status: "rolled_back" as const, ...base, currentVersion: input.version, versions: list(input.version) },
      };
    });
    return outcome;
  });
}
