import { bindTool, consumeConfirm, type ToolOutcome } from "@hatch/platform";
import { buildQuestion, delete_tool, type CallContext, type DeleteToolOutput } from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { appUrl, requireOwnedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appEvent } from "../events.ts";
import { forgetUnusedBlobs, removeStoredBlobs, type Tx } from "../blobs/unused.ts";
import { addresses, appsTable, bucketFiles, confirmUses, versionFiles } from "../db/schema.ts";

/** delete_tool: asks the user; on their confirmation the app, its versions and files go; the address stays reserved. */
export function deleteToolTool(app: AppsContext) {
  return bindTool(delete_tool, async ({ ctx, input, answer, confirmation }): Promise<ToolOutcome<DeleteToolOutput>> => {
    const target = await requireOwnedApp(app.db, ctx, input.address, { action: "delete it" });
    if (!confirmation) {
      return {
        ask: buildQuestion(
          app.keys.confirm,
          { sub: ctx.sub, tool: "delete_tool", input },
          {
            message: `Delete the app "${target.name}" (${appUrl(app.config, target.address)}) with all its versions and files? This cannot be undone, and its address can never be used again.`,
            properties: { confirm: { type: "boolean", title: `Yes, delete ${target.address}` } },
            required: ["confirm"],
            fallback: "link",
            data: { address: target.address },
          },
        ),
      };
    }
    if (answer?.confirm !== true) {
      return {
        text: `The user did not confirm, so ${target.address} was not deleted.`,
        data: { status: "needs_user", address: target.address, userAction: declined(target.address) },
      };
    }
    const orphans = await app.db.transaction(async (tx) => {
      await consumeConfirm(tx, confirmUses, confirmation);
      const locked = await requireOwnedApp(tx, ctx, input.address, { forUpdate: true, action: "delete it" });
      return removeApp(tx, ctx, locked);
    });
    await removeStoredBlobs(app, orphans);
    app.logger.info("deleted", { address: target.address, blobs: orphans.length });
    return {
      text: `Deleted ${target.address} with all its versions and files. Its address stays reserved and cannot be used again.`,
      data: { status: "deleted", address: target.address },
    };
  });
}

/**
 * Deletes one locked app inside the caller's transaction (delete_tool, an account's deletion): versions, files, data
 * and secrets go (cascade), the address stays reserved, an `app.deleted` event is written. Returns the content hashes
 * nothing uses any more, for removeStoredBlobs after the commit.
 */
export async function removeApp(tx: Tx, ctx: CallContext, locked: AppRow): Promise<string[]> {
  const inVersions = await tx
    .selectDistinct({ sha256: versionFiles.sha256 })
    .from(versionFiles)
    .where(eq(versionFiles.appId, locked.id));
  // The bucket files go with the app (cascade); their content is collected first so it can be forgotten too.
  const inBuckets = await tx
    .selectDistinct({ sha256: bucketFiles.sha256 })
    .from(bucketFiles)
    .where(eq(bucketFiles.appId, locked.id));
  await tx.delete(versionFiles).where(eq(versionFiles.appId, locked.id));
  await tx.delete(appsTable).where(eq(appsTable.id, locked.id));
  await tx.update(addresses).set({ appId: null }).where(eq(addresses.address, locked.address));
  await appEvent(tx, ctx, "deleted", locked);
  // Content no other version or bucket file uses is forgotten here and removed from storage after the commit.
  return forgetUnusedBlobs(
    tx,
    [...inVersions, ...inBuckets].map((r) => r.sha256),
  );
}

function declined(address: string): DeleteToolOutput["userAction"] {
  return {
    kind: "ask_user",
    message: `The user chose not to delete ${address}.`,
    fields: [],
    url: null,
    expiresAt: null,
  };
}
