import { bindRpc, encodeJson, type RpcBinding } from "@hatch/platform";
import {
  DashboardDocumentInputSchema,
  DashboardDocumentsInputSchema,
  DashboardFileInputSchema,
  DashboardFilesInputSchema,
  DashboardLogsInputSchema,
  subjects,
  ToolError,
  type DashboardDocument,
  type DashboardDocuments,
  type DashboardFile,
  type DashboardFileAnswer,
  type DashboardFiles,
  type DashboardLogs,
} from "@hatch/contracts";
import { and, asc, desc, eq, gt, inArray, lt, max, sql } from "drizzle-orm";
import { requireManagedApp } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appEvent } from "../events.ts";
import { DataError } from "../http/answers.ts";
import { getDocument, listDocuments, removeDocument } from "../data/documents.ts";
import { getFile, isFileId, listFiles, removeFile, type StoredFile } from "../data/files.ts";
import type { DataChange } from "../data/live.ts";
import { cursorAfter, DOCUMENT_ID, parseListQuery } from "../data/query.ts";
import { appLogs } from "../db/schema.ts";
import { requireLogsOwner } from "../tools/tool-logs.ts";

// The dashboard's logs and data pages (gateway /dashboard/apps/<address>/logs and /data): what the tools do not give.
// Each method checks the caller here, as its tool does: the logs as tool_logs (the owner only), the data as tool_data
// (the owner and the organization's managers); anyone else gets the tool's refusal (a missing app to a stranger).

const SEVERITY = { debug: 0, info: 1, warn: 2, error: 3 } as const;
/** What one page of documents may carry over the bus (a document may hold 64 KB). */
const PAGE_BYTES = 400_000;

function signedIn<T extends { ctx: unknown }>(call: T): asserts call is T & { ctx: NonNullable<T["ctx"]> } {
  if (!call.ctx) throw new ToolError("forbidden", "Sign in first.");
}

/** `rpc.apps.dashboard.logs`: lines by level, text and uncaught errors, newest page first or after a line (the tail). */
export function dashboardLogsRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardLogsInputSchema, async (call): Promise<DashboardLogs> => {
    signedIn(call);
    const { ctx, input } = call;
    const app = await requireLogsOwner(apps, ctx, input.address);
    await apps.appLogs.flush();
    const levels = (Object.keys(SEVERITY) as (keyof typeof SEVERITY)[]).filter(
      (name) => SEVERITY[name] >= SEVERITY[input.level ?? "debug"],
    );
    const like = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const where = and(
      eq(appLogs.appId, app.id),
      inArray(appLogs.level, input.uncaught ? ["error"] : levels),
      input.search ? sql`${appLogs.message} ilike ${like(input.search)}` : undefined,
      input.uncaught ? sql`${appLogs.message} ilike '%uncaught%'` : undefined,
      input.before !== undefined ? lt(appLogs.id, input.before) : undefined,
      input.after !== undefined ? gt(appLogs.id, input.after) : undefined,
    );
    const tail = input.after !== undefined;
    const rows = await apps.db
      .select()
      .from(appLogs)
      .where(where)
      .orderBy(tail ? asc(appLogs.id) : desc(appLogs.id))
      .limit(input.limit + 1);
    const more = rows.length > input.limit;
    const page = rows.slice(0, input.limit);
    if (!tail) page.reverse();
    const [top] = await apps.db
      .select({ id: max(appLogs.id) })
      .from(appLogs)
      .where(eq(appLogs.appId, app.id));
    return {
      address: app.address,
      lines: page.map((line) => ({
        id: line.id,
        time: line.at.toISOString(),
        level: line.level,
        message: line.message,
      })),
      more,
      newest: Number(top?.id ?? 0),
    };
  });
}

function documentOf(row: {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdByEmail: string | null;
  data: Record<string, unknown>;
}): DashboardDocument {
  return {
    id: row.id,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    createdBy: row.createdByEmail,
    data: row.data,
  };
}

/** A DataError (a bad cursor) in the tools' words. */
function asToolError(error: unknown): never {
  if (error instanceof DataError) throw new ToolError("invalid_input", error.message);
  throw error;
}

/** `rpc.apps.dashboard.documents`: a page of a collection's documents, newest first, at most PAGE_BYTES of them. */
export function dashboardDocumentsRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardDocumentsInputSchema, async (call): Promise<DashboardDocuments> => {
    signedIn(call);
    const { ctx, input } = call;
    const app = await requireManagedApp(apps.db, ctx, input.address, { action: "read its data" });
    const params = new URLSearchParams({ orderBy: "-createdAt", limit: String(input.limit) });
    if (input.after) params.set("after", input.after);
    let query: ReturnType<typeof parseListQuery>;
    try {
      query = parseListQuery(params);
    } catch (error) {
      asToolError(error);
    }
    const page = await listDocuments(apps.db, { appId: app.id, collection: input.collection }, query, null);
    const documents: DashboardDocument[] = [];
    let bytes = 0;
    let next = page.next;
    for (const [i, row] of page.documents.entries()) {
      if (i > 0 && bytes + row.dataJson.length > PAGE_BYTES) {
        next = cursorAfter(query, page.documents[i - 1]!);
        break;
      }
      bytes += row.dataJson.length;
      documents.push(documentOf({ ...row, data: JSON.parse(row.dataJson) as Record<string, unknown> }));
    }
    return { address: app.address, collection: input.collection, documents, next };
  });
}

function missingDocument(address: string, collection: string, id: string): ToolError {
  return new ToolError("not_found", `${address} has no document ${id} in ${collection}.`);
}

/** `rpc.apps.dashboard.document`: one document, whole. */
export function dashboardDocumentRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardDocumentInputSchema, async (call) => {
    signedIn(call);
    const { ctx, input } = call;
    const app = await requireManagedApp(apps.db, ctx, input.address, { action: "read its data" });
    const row = DOCUMENT_ID.test(input.id)
      ? await getDocument(apps.db, { appId: app.id, collection: input.collection }, input.id)
      : null;
    if (!row) throw missingDocument(app.address, input.collection, input.id);
    return { address: app.address, collection: input.collection, document: documentOf(row) };
  });
}

/**
 * `rpc.apps.dashboard.document.delete`: the owner or a manager removes one document, whatever the collection's
 * rules say (as tool_data reads it whatever they say). Counted off as the data API does, and the app's open live
 * streams hear of it.
 */
export function dashboardDocumentDeleteRpc(apps: AppsContext): RpcBinding {
  return bindRpc(
    DashboardDocumentInputSchema,
    async (call) => {
      signedIn(call);
      const { ctx, input } = call;
      if (ctx.scope === "read") throw new ToolError("forbidden", "This needs write access.");
      const app = await requireManagedApp(apps.db, ctx, input.address, { action: "delete its data" });
      const result = DOCUMENT_ID.test(input.id)
        ? await removeDocument(apps.db, { appId: app.id, collection: input.collection }, input.id, null, (tx) =>
            // Ids are letters, digits, - and _; the collection's name is the app's own (service.json).
            appEvent(tx, ctx, "document_deleted", app, {
              collection: input.collection,
              id: input.id,
              summary: `${input.id} in ${input.collection}`,
            }),
          )
        : "missing";
      if (typeof result === "string") throw missingDocument(app.address, input.collection, input.id);
      const change: DataChange = {
        appId: app.id,
        collection: input.collection,
        type: "removed",
        id: input.id,
        creator: result.createdBy,
      };
      try {
        apps.bus.publish(subjects.appsDataChanged, encodeJson(change));
      } catch (error) {
        apps.logger.warn("data change not published", { error });
      }
      apps.logger.info("document deleted on the dashboard", {
        app: app.address,
        collection: input.collection,
        by: ctx.sub,
      });
      return { address: app.address, collection: input.collection, id: input.id };
    },
    { writes: true },
  );
}

/** Images a page may show (never SVG: it can carry script), and how large a preview may be. */
export const PREVIEW_IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const PREVIEW_IMAGE_BYTES = 512 * 1024;
const PREVIEW_TEXT_BYTES = 8 * 1024;
const TEXT_TYPE = /^(text\/[\w.+-]+|application\/(json|xml|x-ndjson|jsonl)|[\w.+-]+\/[\w.+-]+\+(json|xml))(;|$)/i;

function fileOf(file: StoredFile): DashboardFile {
  return {
    id: file.id,
    name: file.name,
    contentType: file.contentType,
    size: file.size,
    createdAt: file.createdAt.toISOString(),
    createdBy: file.createdByEmail,
  };
}

function missingFile(address: string, bucket: string, id: string): ToolError {
  return new ToolError("not_found", `${address} has no file ${id} in ${bucket}.`);
}

/** `rpc.apps.dashboard.files`: a page of a bucket's files, newest first. */
export function dashboardFilesRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardFilesInputSchema, async (call): Promise<DashboardFiles> => {
    signedIn(call);
    const { ctx, input } = call;
    const app = await requireManagedApp(apps.db, ctx, input.address, { action: "read its data" });
    let page: Awaited<ReturnType<typeof listFiles>>;
    try {
      page = await listFiles(apps.db, { appId: app.id, bucket: input.bucket, limit: input.limit, after: input.after });
    } catch (error) {
      asToolError(error);
    }
    return { address: app.address, bucket: input.bucket, files: page.files.map(fileOf), next: page.next };
  });
}

/** `rpc.apps.dashboard.file`: one file and its preview. */
export function dashboardFileRpc(apps: AppsContext): RpcBinding {
  return bindRpc(DashboardFileInputSchema, async (call): Promise<DashboardFileAnswer> => {
    signedIn(call);
    const { ctx, input } = call;
    const app = await requireManagedApp(apps.db, ctx, input.address, { action: "read its data" });
    const file = isFileId(input.id) ? await getFile(apps.db, app.id, input.bucket, input.id) : null;
    if (!file) throw missingFile(app.address, input.bucket, input.id);
    const type = file.contentType.toLowerCase();
    const image = PREVIEW_IMAGE_TYPES.has(type.split(";")[0]!.trim()) && file.size <= PREVIEW_IMAGE_BYTES;
    const text = TEXT_TYPE.test(type);
    let preview: DashboardFileAnswer["preview"] = { kind: "none" };
    if (image || text) {
      const blob = await apps.blobs.get(file.sha256);
      if (blob && image) preview = { kind: "image", base64: Buffer.from(await blob.arrayBuffer()).toString("base64") };
      else if (blob) {
        const bytes = new Uint8Array(await blob.slice(0, PREVIEW_TEXT_BYTES).arrayBuffer());
        preview = { kind: "text", text: new TextDecoder().decode(bytes), cut: file.size > PREVIEW_TEXT_BYTES };
      }
    }
    return { address: app.address, bucket: input.bucket, file: fileOf(file), preview };
  });
}

/** `rpc.apps.dashboard.file.delete`: the owner or a manager removes one file, whatever the bucket's rules say. */
export function dashboardFileDeleteRpc(apps: AppsContext): RpcBinding {
  return bindRpc(
    DashboardFileInputSchema,
    async (call) => {
      signedIn(call);
      const { ctx, input } = call;
      if (ctx.scope === "read") throw new ToolError("forbidden", "This needs write access.");
      const app = await requireManagedApp(apps.db, ctx, input.address, { action: "delete its data" });
      let removed = false;
      try {
        removed =
          isFileId(input.id) &&
          (await removeFile(
            apps,
            app.id,
            input.bucket,
            input.id,
            () => {},
            // The file's name is its uploader's words: the log names its id and bucket only.
            (tx) =>
              appEvent(tx, ctx, "file_deleted", app, {
                bucket: input.bucket,
                id: input.id,
                summary: `${input.id} in ${input.bucket}`,
              }),
          ));
      } catch (error) {
        if (error instanceof DataError && error.code === "not_found") removed = false;
        else throw error;
      }
      if (!removed) throw missingFile(app.address, input.bucket, input.id);
      apps.logger.info("file deleted on the dashboard", { app: app.address, bucket: input.bucket, by: ctx.sub });
      return { address: app.address, bucket: input.bucket, id: input.id };
    },
    { writes: true },
  );
}
