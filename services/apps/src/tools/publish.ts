import { bindTool, buildQuestion, checkLimit, CONTROL_CHARS_MESSAGE, hasControlChars, publish, PUBLISH_LIMITS, ToolError, VISIBILITIES, type CallContext, type ConfirmClaims, type PublishInput, type PublishOutput, type ToolCall, type ToolOutcome } from "@hatch/shared";
import { and, count, eq, inArray, isNotNull, or } from "drizzle-orm";
import { accountOf, appUrl, checkMayMakePublic, checkMayPublish, requireOwnedApp } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appsTable, blobs, uploads, versionFiles } from "../db/schema.ts";
import { commitVersion, type VersionTarget } from "../publish/commit.ts";
import { checkFolder, checkNotFoundPage, contentTypeOf, parseServiceJson, SERVICE_JSON_PATH, type FolderEntry } from "../publish/folder.ts";
import { decodeInline } from "../publish/inline.ts";
import { checkServerFile, checkServerModule } from "../publish/server-module.ts";
import { issueUploads } from "../publish/uploads.ts";
import { storeBlob } from "../blobs/unused.ts";
import { announceAppChanged } from "../host/announce.ts";
import { gateMakePublic } from "../public-gate.ts";

type Outcome = ToolOutcome<PublishOutput>;

/** publish: inline files or a manifest (+ uploads), a new app (asks name and visibility) or a new version. */
export function publishTool(app: AppsContext) {
  return bindTool(publish, async (call): Promise<Outcome> => {
    const { ctx, input } = call;
    if (!input.files === !input.manifest) {
      throw new ToolError("invalid_input", "Give exactly one of files (inline, for small apps) or manifest (path, sha256 and size of each file).");
    }
    checkMayPublish(ctx);
    if (input.address && (input.name || input.visibility)) {
      throw new ToolError("invalid_input", "name and visibility are only for creating an app. To publish a new version of an existing app give its address alone; to change who can see it use share.");
    }
    if (input.address) await requireOwnedApp(app.db, ctx, input.address);
    else await checkAppLimit(app, accountOf(ctx));

    const folder = input.files ? decodeInline(input.files) : null;
    const entries: FolderEntry[] = folder?.entries ?? input.manifest!.map((m) => ({ ...m, contentType: contentTypeOf(m.path) }));
    checkFolder(entries);
    const missing = folder ? [] : await missingBlobs(app, ctx, entries);
    // service.json is checked as early as its bytes are at hand: now when inline or already uploaded, else after its upload.
    const configEntry = entries.find((e) => e.path === SERVICE_JSON_PATH);
    const configPending = configEntry !== undefined && missing.some((m) => m.sha256 === configEntry.sha256);
    const configBytes = configEntry && !configPending ? (folder?.bytes.get(configEntry.sha256) ?? (await requireStored(app, configEntry.sha256))) : null;
    const config = configPending ? null : parseServiceJson(configBytes);
    if (config) checkNotFoundPage(config, new Set(entries.map((e) => e.path)));
    if (config) checkServerFile(config, entries);

    const target = input.address ? ({ kind: "existing", address: input.address, expectedVersion: input.expectedVersion } as const) : newAppTarget(app, call);
    if ("ask" in target) return target;
    const goesPublic = target.kind === "new" && target.visibility === "public";
    // Refused before any upload is asked for; the user's own confirmation comes once the files are all here.
    if (goesPublic) checkMayMakePublic(ctx);

    if (!folder && missing.length > 0) return needsUpload(app, ctx, missing, input);
    if (goesPublic) {
      const chosenByUser = input.visibility === undefined && call.answer?.visibility === "public";
      const gate = gateMakePublic(app, { ...call, tool: "publish", subject: `the new app "${target.name}"`, data: {}, chosenByUser });
      if ("ask" in gate) return gate;
      if ("declined" in gate) {
        throw new ToolError("forbidden", `The user did not confirm making "${target.name}" public, so nothing was published. Publish it as private, org or people, or ask the user and call again.`);
      }
    }
    // Unreachable in practice: service.json's content is pending only while it is missing.
    if (!config) throw new ToolError("conflict", "service.json has not been uploaded yet. Call publish again with the same manifest.");
    await checkServerModule(config, entries, (sha256) => folder?.bytes.get(sha256) ?? requireStored(app, sha256));
    if (folder) {
      for (const [sha256, bytes] of folder.bytes) await storeBlob(app, sha256, bytes);
    }
    return finish(app, ctx, target, entries, config, call.confirmation);
  });
}

/** A new app must fit the account's plan (before anything is asked or uploaded). */
async function checkAppLimit(app: AppsContext, accountId: string): Promise<void> {
  const entitlements = await app.entitlements?.get(accountId);
  if (!entitlements || entitlements.limits.apps === null) return;
  const [row] = await app.db.select({ n: count() }).from(appsTable).where(eq(appsTable.accountId, accountId));
  checkLimit(entitlements, "apps", row?.n ?? 0);
}

/** A new app needs the user's own choice of name and visibility: ask, unless the input or the answer has them. */
function newAppTarget(app: AppsContext, call: ToolCall<PublishInput>): VersionTarget | { ask: ReturnType<typeof buildQuestion> } {
  const { ctx, input, answer } = call;
  const name = input.name ?? (call.confirmation ? stringAnswer(answer?.name) : undefined);
  const visibility = input.visibility ?? (call.confirmation ? visibilityAnswer(answer?.visibility) : undefined);
  if (name && visibility) return { kind: "new", name: name.trim(), visibility, account: accountOf(ctx) };
  const question = buildQuestion(
    app.keys.confirm,
    { sub: ctx.sub, tool: "publish", input },
    {
      message: "This publishes a new app. What should it be called, and who may open it?",
      properties: {
        name: { type: "string", title: "App name", description: "The app's name, as the user wants it (its address is made from it)" },
        visibility: {
          type: "string",
          title: "Who can open it",
          description: "private = only me; org = my organization; people = people I add by email; public = anyone with the link",
          enum: [...VISIBILITIES],
        },
      },
      required: ["name", "visibility"],
      fallback: "ask_ai",
    },
  );
  return { ask: question };
}

async function finish(
  app: AppsContext,
  ctx: CallContext,
  target: VersionTarget,
  entries: readonly FolderEntry[],
  config: ReturnType<typeof parseServiceJson>,
  confirmation: ConfirmClaims | undefined,
): Promise<Outcome> {
  const done = await commitVersion(app.db, ctx, target, entries, config, confirmation);
  announceAppChanged(app, done.app.address);
  const url = appUrl(app.config, done.app.address);
  const what = done.created ? `Created the app "${done.app.name}"` : `Published version ${done.version} of ${done.app.address}`;
  app.logger.info("published", { address: done.app.address, version: done.version, files: entries.length, created: done.created });
  return {
    text: `${what}. It is live at ${url} (version ${done.version}, ${entries.length} files, visibility ${done.app.visibility}).`,
    data: { status: "published", address: done.app.address, url, version: done.version },
  };
}

async function needsUpload(app: AppsContext, ctx: CallContext, missing: FolderEntry[], input: PublishInput): Promise<Outcome> {
  const uploads = await issueUploads(app, ctx, missing);
  const again = input.address ? `address ${input.address}` : "the same name and visibility";
  return {
    text:
      `${missing.length} of ${input.manifest!.length} files are not on Hatch yet. Upload each one with an HTTP PUT of its raw bytes to its url ` +
      `(for example: curl -T <file> <url>), then call publish again with the same manifest and ${again} to finish. Nothing is published until then.`,
    data: { status: "needs_upload", ...(input.address ? { address: input.address } : {}), missing: missing.map((m) => m.path), uploads },
  };
}

/**
 * Distinct contents of the manifest the caller must still upload, each named by its first path. Content counts
 * as present only when the store holds it AND the caller has had it: in a version of an app they own, or in an
 * upload of their own. Knowing another user's file hash must not let anyone serve (or probe for) that file.
 */
async function missingBlobs(app: AppsContext, ctx: CallContext, entries: readonly FolderEntry[]): Promise<FolderEntry[]> {
  const bySha = new Map<string, FolderEntry>();
  for (const e of entries) if (!bySha.has(e.sha256)) bySha.set(e.sha256, e);
  const shas = [...bySha.keys()];
  for (let i = 0; i < shas.length; i += 1000) {
    const chunk = shas.slice(i, i + 1000);
    const inOwnVersion = app.db
      .select({ sha256: versionFiles.sha256 })
      .from(versionFiles)
      .innerJoin(appsTable, eq(appsTable.id, versionFiles.appId))
      .where(and(eq(appsTable.ownerId, ctx.sub), inArray(versionFiles.sha256, chunk)));
    const inOwnUpload = app.db
      .select({ sha256: uploads.sha256 })
      .from(uploads)
      .where(and(eq(uploads.userId, ctx.sub), isNotNull(uploads.usedAt), inArray(uploads.sha256, chunk)));
    const rows = await app.db
      .select({ sha256: blobs.sha256 })
      .from(blobs)
      .where(and(inArray(blobs.sha256, chunk), or(inArray(blobs.sha256, inOwnVersion), inArray(blobs.sha256, inOwnUpload))));
    for (const row of rows) bySha.delete(row.sha256);
  }
  return [...bySha.values()];
}

/** The bytes of service.json already in the store (the caller has had them). */
async function requireStored(app: AppsContext, sha256: string): Promise<Uint8Array> {
  const blob = await app.blobs.get(sha256);
  if (!blob) throw new ToolError("conflict", "service.json was not found in storage. Call publish again; it will ask for the file.");
  return new Uint8Array(await blob.arrayBuffer());
}

function stringAnswer(value: unknown): string | undefined {
  if (typeof value !== "string" || value.trim().length === 0) return undefined;
  // The form answer is not checked by the contract: the same rule as the name field (no control characters).
  if (hasControlChars(value.trim())) throw new ToolError("invalid_input", `The app name ${CONTROL_CHARS_MESSAGE}. Ask the user for the name again.`);
  return value.trim().slice(0, PUBLISH_LIMITS.maxNameLength);
}

function visibilityAnswer(value: unknown): (typeof VISIBILITIES)[number] | undefined {
  return VISIBILITIES.find((v) => v === value);
}
