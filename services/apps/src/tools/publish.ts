import { bindTool, type ToolCall, type ToolOutcome } from "@hatch/platform";
import {
  buildQuestion,
  CONTROL_CHARS_MESSAGE,
  hasControlChars,
  publish,
  ToolError,
  VISIBILITIES,
  type CallContext,
  type ConfirmClaims,
  type PublishInput,
  type PublishOutput,
  plural,
} from "@hatch/contracts";
import { PUBLISH_LIMITS } from "../spec/limits.ts";
import { type ServiceJson } from "../spec/service-json.ts";
import { and, eq, inArray, isNotNull, or } from "drizzle-orm";
import { accountOf, appUrl, checkMayMakePublic, checkMayPublish, requireOwnedApp } from "../apps-repo.ts";
import { heldSecretsNote } from "../secrets/usage.ts";
import type { AppsContext } from "../context.ts";
import { appsTable, blobs, folderUploads, uploads, versionFiles } from "../db/schema.ts";
import { accountOfApp, checkAppLimit } from "../publish/account.ts";
import { commitVersion, type Tx } from "../publish/commit.ts";
import { checkFolderContents, checkServiceJson } from "../publish/check.ts";
import { checkFolder, contentTypeOf, SERVICE_JSON_PATH, type FolderEntry } from "../publish/folder.ts";
import {
  createFolderUpload,
  manifestEntries,
  manifestUploadUrl,
  spendFolderUpload,
  type FolderUploadRow,
  type UploadTarget,
} from "../publish/folder-upload.ts";
import { decodeInline } from "../publish/inline.ts";
import { normalisePaths } from "../publish/paths.ts";
import { storeBlob } from "../blobs/unused.ts";
import { gateMakePublic } from "../public-gate.ts";

type Outcome = ToolOutcome<PublishOutput>;

const ONE_WAY =
  "Give exactly one of upload: true (a shell command uploads the built folder; best for most apps), files (inline, small apps), " +
  "manifest (SDKs, CI) or uploadId (finish a manifest publish).";

/**
 * publish, four ways: `upload: true` (a one-time URL the folder's tar is PUT to; publish/folder-upload.ts finishes),
 * inline `files`, a `manifest` (+ PUTs of the missing files, then `uploadId`), or `uploadId` alone to finish. A new
 * app needs the user's name and visibility (asked here); a new public app, the user's confirmation.
 */
export function publishTool(app: AppsContext) {
  return bindTool(publish, async (call): Promise<Outcome> => {
    const { ctx, input } = call;
    const ways = [input.upload || undefined, input.files, input.manifest, input.uploadId].filter(
      (w) => w !== undefined,
    ).length;
    if (ways !== 1) throw new ToolError("invalid_input", ONE_WAY);
    checkMayPublish(ctx);
    if (input.uploadId !== undefined) {
      if (input.address || input.name || input.visibility || input.expectedVersion !== undefined) {
        throw new ToolError(
          "invalid_input",
          "uploadId finishes the publish its first call described (address, or name and visibility): give uploadId alone.",
        );
      }
      return finishManifest(app, call, input.uploadId);
    }
    if (input.address && (input.name || input.visibility)) {
      throw new ToolError(
        "invalid_input",
        "name and visibility are only for creating an app. To publish a new version of an existing app give its address alone; to change who can see it use share.",
      );
    }
    if (input.address) await requireOwnedApp(app.db, ctx, input.address, { action: "publish a new version of it" });
    else await checkAppLimit(app, accountOf(ctx));
    if (input.upload) return offerTarUpload(app, call);

    const normalised = input.files ? normalisePaths(input.files) : normalisePaths(input.manifest!);
    const folder = input.files ? decodeInline(normalised.items as NonNullable<PublishInput["files"]>) : null;
    const entries: FolderEntry[] =
      folder?.entries ??
      (normalised.items as NonNullable<PublishInput["manifest"]>).map((m) => ({
        ...m,
        contentType: contentTypeOf(m.path),
      }));
    checkFolder(entries);
    const missing = folder ? [] : await missingBlobs(app, ctx, entries);
    // service.json is checked as early as its bytes are at hand: now when inline or already uploaded, else at the finish.
    const configEntry = entries.find((e) => e.path === SERVICE_JSON_PATH);
    const configPending = configEntry !== undefined && missing.some((m) => m.sha256 === configEntry.sha256);
    const read = (sha256: string) => folder?.bytes.get(sha256) ?? requireStored(app, sha256);
    // Everything at hand: the whole check now; files still to upload: service.json now, the whole check at the finish.
    const config = configPending
      ? null
      : missing.length === 0
        ? await checkFolderContents(entries, read)
        : await checkServiceJson(entries, read);

    const target = decideTarget(app, call);
    if ("ask" in target) return target;
    const goesPublic = target.kind === "new" && target.visibility === "public";
    // Refused before any upload is asked for; the user's own confirmation comes once the files are all here.
    if (goesPublic) checkMayMakePublic(ctx);

    if (!folder && missing.length > 0) {
      const ticket = await createFolderUpload(app, ctx, "manifest", target, {
        manifest: entries,
        missing,
        confirmation: call.confirmation,
      });
      return needsUpload(ticket.url, ticket.id, ticket.expiresAt, missing, entries.length, normalised.note);
    }
    const gate = publicGate(app, call, target);
    if (gate) return gate;
    // Unreachable in practice: service.json's content is pending only while it is missing.
    if (!config)
      throw new ToolError(
        "conflict",
        "service.json has not been uploaded yet. Call publish again with the same manifest.",
      );
    if (folder) {
      for (const [sha256, bytes] of folder.bytes) await storeBlob(app, sha256, bytes);
    }
    return finish(app, ctx, target, entries, config, call.confirmation, normalised.note);
  });
}

/** The target of a new app or version; for a new app the user's own name and visibility, asked when missing. */
function decideTarget(
  app: AppsContext,
  call: ToolCall<PublishInput>,
): UploadTarget | { ask: ReturnType<typeof buildQuestion> } {
  const { ctx, input, answer } = call;
  if (input.address) return { kind: "existing", address: input.address, expectedVersion: input.expectedVersion };
  const name = input.name ?? (call.confirmation ? stringAnswer(answer?.name) : undefined);
  const visibility = input.visibility ?? (call.confirmation ? visibilityAnswer(answer?.visibility) : undefined);
  if (name && visibility) {
    const chosenByUser = input.visibility === undefined && visibility === "public";
    return {
      kind: "new",
      name: name.trim(),
      visibility,
      account: accountOf(ctx),
      ...(chosenByUser ? { chosenByUser } : {}),
    };
  }
  const question = buildQuestion(
    app.keys.confirm,
    { sub: ctx.sub, tool: "publish", input },
    {
      message: "This publishes a new app. What should it be called, and who may open it?",
      properties: {
        name: {
          type: "string",
          title: "App name",
          description: "The app's name, as the user wants it (its address is made from it)",
        },
        visibility: {
          type: "string",
          title: "Who can open it",
          description:
            "private = only me; org = my organization; people = people I add by email; public = anyone with the link",
          enum: [...VISIBILITIES],
        },
      },
      required: ["name", "visibility"],
      fallback: "ask_ai",
    },
  );
  return { ask: question };
}

/** A new public app the AI (not the user's own form answer) chose public: the user confirms it. Null: go on. */
function publicGate(app: AppsContext, call: ToolCall<PublishInput>, target: UploadTarget): Outcome | null {
  if (target.kind !== "new" || target.visibility !== "public") return null;
  const gate = gateMakePublic(app, {
    ...call,
    tool: "publish",
    subject: `the new app "${target.name}"`,
    data: {},
    chosenByUser: target.chosenByUser === true,
  });
  if ("ask" in gate) return gate;
  if ("declined" in gate) {
    throw new ToolError(
      "forbidden",
      `The user did not confirm making "${target.name}" public, so nothing was published. Publish it as private, org or people, or ask the user and call again.`,
    );
  }
  return null;
}

/** upload: true: everything is decided now (the user's answer is spent); the tar's PUT publishes. */
async function offerTarUpload(app: AppsContext, call: ToolCall<PublishInput>): Promise<Outcome> {
  const { ctx } = call;
  const target = decideTarget(app, call);
  if ("ask" in target) return target;
  if (target.kind === "new" && target.visibility === "public") checkMayMakePublic(ctx);
  const gate = publicGate(app, call, target);
  if (gate) return gate;
  const ticket = await createFolderUpload(app, ctx, "tar", target, { confirmation: call.confirmation });
  const what =
    target.kind === "new"
      ? `the new app "${target.name}" (${target.visibility}) in ${accountOfApp(ctx, target.account).label}`
      : `a new version of ${target.address}${target.expectedVersion ? ` (if version ${target.expectedVersion} is still current)` : ""}`;
  const minutes = Math.round((ticket.expiresAt.getTime() - Date.now()) / 60_000);
  return {
    text:
      `Run this in a terminal, with dist replaced by the built folder (the one holding index.html):\n` +
      `tar -C dist -cf - . | curl -sS --fail-with-body -T - '${ticket.url}'\n` +
      `It uploads the folder and publishes it as ${what}, and prints the address, URL and version. ` +
      `The URL works once, for ${minutes} minutes; if the upload is refused, fix what it says and run it again. ` +
      "Windows 10+: run it in cmd (tar and curl ship with Windows).",
    data: {
      status: "needs_upload",
      ...(target.kind === "existing" ? { address: target.address } : {}),
      ...(target.kind === "new" ? { account: accountOfApp(ctx, target.account).value } : {}),
      uploadUrl: ticket.url,
    },
  };
}

/** publish { uploadId }: the manifest publish its first call described, once every missing file is uploaded. */
async function finishManifest(app: AppsContext, call: ToolCall<PublishInput>, uploadId: string): Promise<Outcome> {
  const { ctx } = call;
  const [row] = await app.db
    .select()
    .from(folderUploads)
    .where(and(eq(folderUploads.id, uploadId), eq(folderUploads.userId, ctx.sub)));
  if (!row || row.kind !== "manifest")
    throw new ToolError(
      "not_found",
      `There is no manifest upload ${uploadId} of yours. Call publish with the manifest to start one.`,
    );
  if (row.usedAt)
    throw new ToolError(
      "conflict",
      `The upload ${uploadId} was already published. Call list_tools to see the app's current version.`,
    );
  if (row.expiresAt.getTime() <= Date.now())
    throw new ToolError(
      "conflict",
      `The upload ${uploadId} expired. Call publish with the manifest again; files already uploaded are not asked for again.`,
    );
  const entries = manifestEntries(row);
  const missing = await missingBlobs(app, ctx, entries);
  if (missing.length > 0)
    return needsUpload(manifestUploadUrl(app, row), row.id, row.expiresAt, missing, entries.length, null);
  const target = row.target as UploadTarget;
  if (target.kind === "existing") await requireOwnedApp(app.db, ctx, target.address);
  const config = await checkFolderContents(entries, (sha256) => requireStored(app, sha256));
  const gate = publicGate(app, call, target);
  if (gate) return gate;
  return finish(app, ctx, target, entries, config, call.confirmation, null, row);
}

async function finish(
  app: AppsContext,
  ctx: CallContext,
  target: UploadTarget,
  entries: readonly FolderEntry[],
  config: ServiceJson,
  confirmation: ConfirmClaims | undefined,
  note: string | null,
  upload?: FolderUploadRow,
): Promise<Outcome> {
  const spend = upload ? (tx: Tx) => spendFolderUpload(tx, upload.id) : undefined;
  const done = await commitVersion(app, ctx, target, entries, config, confirmation, spend);
  const url = appUrl(app.config, done.app.address);
  const account = accountOfApp(ctx, done.app.accountId);
  const what = done.created
    ? `Created the app "${done.app.name}" (${done.app.address}) in ${account.label}`
    : `Published version ${done.version} of ${done.app.address}`;
  app.logger.info("published", {
    address: done.app.address,
    version: done.version,
    files: entries.length,
    created: done.created,
  });
  const held = done.created ? null : await heldSecretsNote(app, done.app.id, config as Record<string, unknown>);
  return {
    text: `${what}. It is live at ${url} (version ${done.version}, ${plural(entries.length, "file")}, visibility ${done.app.visibility}, account ${account.name}).${note ? ` ${note}` : ""}${held ? ` ${held}` : ""}`,
    data: { status: "published", address: done.app.address, url, version: done.version, account: account.value },
  };
}

function needsUpload(
  base: string,
  uploadId: string,
  expiresAt: Date,
  missing: readonly FolderEntry[],
  total: number,
  note: string | null,
): Outcome {
  const paths = missing.map((m) => m.path);
  const example = paths[0]!;
  return {
    text:
      `${missing.length} of ${plural(total, "file")} ${missing.length === 1 ? "is" : "are"} not on Hatch yet. PUT each one's raw bytes to ${base} followed by its path (URL-encoded), ` +
      `e.g. curl -sS --fail-with-body -T dist/${example} '${base}${encodePath(example)}'. Missing: ${paths.join(", ")}. ` +
      `Then call publish with uploadId "${uploadId}" (nothing else) to finish; until then nothing is published. ` +
      `The URLs expire at ${expiresAt.toISOString()}.${note ? ` ${note}` : ""}`,
    data: { status: "needs_upload", uploadUrl: base, uploadId, missing: paths },
  };
}

const encodePath = (path: string) => path.split("/").map(encodeURIComponent).join("/");

/**
 * Distinct contents of the manifest the caller must still upload, each named by its first path. Content counts
 * as present only when the store holds it AND the caller has had it: in a version of an app they own, or in an
 * upload of their own. Knowing another user's file hash must not let anyone serve (or probe for) that file.
 */
async function missingBlobs(
  app: AppsContext,
  ctx: CallContext,
  entries: readonly FolderEntry[],
): Promise<FolderEntry[]> {
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
      .where(
        and(inArray(blobs.sha256, chunk), or(inArray(blobs.sha256, inOwnVersion), inArray(blobs.sha256, inOwnUpload))),
      );
    for (const row of rows) bySha.delete(row.sha256);
  }
  return [...bySha.values()];
}

/** The bytes of a file already in the store (the caller has had them). */
async function requireStored(app: AppsContext, sha256: string): Promise<Uint8Array> {
  const blob = await app.blobs.get(sha256);
  if (!blob)
    throw new ToolError("conflict", "A file was not found in storage. Call publish again; it will ask for the file.");
  return new Uint8Array(await blob.arrayBuffer());
}

function stringAnswer(value: unknown): string | undefined {
  if (typeof value !== "string" || value.trim().length === 0) return undefined;
  // The form answer is not checked by the contract: the same rule as the name field (no control characters).
  if (hasControlChars(value.trim()))
    throw new ToolError("invalid_input", `The app name ${CONTROL_CHARS_MESSAGE}. Ask the user for the name again.`);
  return value.trim().slice(0, PUBLISH_LIMITS.maxNameLength);
}

function visibilityAnswer(value: unknown): (typeof VISIBILITIES)[number] | undefined {
  return VISIBILITIES.find((v) => v === value);
}
