import { callRpc } from "@hatch/platform";
import {
  DashboardDocumentAnswerSchema,
  DashboardDocumentDeletedSchema,
  DashboardDocumentsSchema,
  DashboardFileAnswerSchema,
  DashboardFileDeletedSchema,
  DashboardFilesSchema,
  DashboardLogsSchema,
  rpcMethods,
  tool_data,
  type DashboardLogs,
} from "@hatch/contracts";
import { Elysia } from "elysia";
import type { z } from "zod";
import type { BrowserState, Params, PublicUser } from "../../auth/index.ts";
import { signedContext, websiteCaller } from "../../services.ts";
import type { PageScript, SafeHtml } from "../layout.ts";
import { DASHBOARD_CLIENT, readTool } from "./calls.ts";
import type { DashboardPagesDeps, Signed } from "./deps.ts";
import type { DashboardUser } from "./account-choice.ts";
import {
  bucketBody,
  bucketPath,
  fileBody,
  collectionBody,
  collectionPath,
  dataBody,
  documentBody,
  LOG_TAIL_SCRIPT,
  logsBody,
  type LogFilter,
} from "./insight-views.ts";
import type { Notice } from "./views.ts";

// An app's logs page (/dashboard/apps/<address>/logs, its live tail …/logs/stream as server-sent events) and its data
// pages (…/data: collections and buckets; …/data/<collection>: documents a page at a time, …/export as JSON Lines;
// …/data/<collection>/documents/<id>: one document, with delete; …/files/<bucket>: its files, each with a preview
// and delete). Every read and the delete are apps rpc methods that
// check the person in the service as tool_logs (the owner) and tool_data (owner and managers) do; the overview is
// tool_data itself.

/** What index.ts lends these pages: the signed-in checks, post/redirect/get and the error pages. */
export interface InsightHelpers {
  deps: DashboardPagesDeps;
  signed(request: Request): Promise<Signed | Response>;
  posted(request: Request, back: string): Promise<{ state: Signed; params: Params } | Response>;
  done(state: Signed, path: string, text: string): Response;
  problem(state: BrowserState, error: unknown): Response;
  guard(handler: (state: Signed, notice: Notice) => Promise<Response>): (request: Request) => Promise<Response>;
  page(state: BrowserState, title: string, body: SafeHtml, status?: number, script?: PageScript): Response;
}

/** How often the live tail asks for new lines, and how often it says it is alive when there are none. */
const TAIL_POLL_MS = 1_000;
const TAIL_HEARTBEAT_MS = 10_000;
/** Documents per page on the page, and per read when exporting. */
const PAGE_SIZE = 25;
const EXPORT_PAGE_SIZE = 100;

const LEVELS = new Set(["debug", "info", "warn", "error"]);

function readFilter(url: URL): LogFilter {
  const level = url.searchParams.get("level") ?? "";
  return {
    level: (LEVELS.has(level) ? level : "") as LogFilter["level"],
    search: (url.searchParams.get("q") ?? "").trim().slice(0, 200),
    uncaught: url.searchParams.get("uncaught") === "1",
  };
}

function logsInput(address: string, filter: LogFilter) {
  return {
    address,
    ...(filter.level ? { level: filter.level } : {}),
    ...(filter.search ? { search: filter.search } : {}),
    ...(filter.uncaught ? { uncaught: true } : {}),
  };
}

export function insightPages(h: InsightHelpers) {
  const { deps } = h;

  async function apps<S extends z.ZodType>(
    user: PublicUser,
    scope: "read" | "write",
    method: string,
    input: unknown,
    schema: S,
  ): Promise<z.infer<S>> {
    // The ctx's client is the dashboard's, as for its tool calls: the activity log says a delete happened there.
    const caller = websiteCaller(user, {
      scope,
      client: DASHBOARD_CLIENT.name,
      account: (user as DashboardUser).account,
    });
    const ctx = await signedContext(deps, caller);
    return callRpc(deps.bus, "apps", method, input, schema, { ctx, requestId: caller.requestId });
  }

  const readLogs = (user: PublicUser, input: Record<string, unknown>): Promise<DashboardLogs> =>
    apps(user, "read", rpcMethods.apps.dashboardLogs, input, DashboardLogsSchema);

  async function logsPage(state: Signed, address: string, url: URL): Promise<Response> {
    const filter = readFilter(url);
    const before = Number(url.searchParams.get("before"));
    const logs = await readLogs(state.user, {
      ...logsInput(address, filter),
      ...(Number.isSafeInteger(before) && before > 0 ? { before } : {}),
    });
    return h.page(
      state,
      `Logs of ${logs.address}`,
      logsBody(logs.address, logs.address, filter, logs),
      200,
      LOG_TAIL_SCRIPT,
    );
  }

  /**
   * The live tail: server-sent events `line` (one log line as JSON) for each line logged after `after` that passes the
   * filter, read from the service every second (each read checked again there); `end` with the words why it stopped.
   */
  async function logsStream(request: Request, address: string): Promise<Response> {
    const state = await h.signed(request);
    if (state instanceof Response) return state;
    const url = new URL(request.url);
    const input = logsInput(address, readFilter(url));
    const start = Number(url.searchParams.get("after"));
    let after = Number.isSafeInteger(start) && start >= 0 ? start : 0;
    let first: DashboardLogs;
    try {
      first = await readLogs(state.user, { ...input, after, limit: 200 });
    } catch (error) {
      return h.problem(state, error);
    }
    const encoder = new TextEncoder();
    let closed = false;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (text: string) => {
          if (!closed) controller.enqueue(encoder.encode(text));
        };
        const lines = (logs: DashboardLogs) => {
          for (const line of logs.lines) {
            send(`event: line\nid: ${line.id}\ndata: ${JSON.stringify(line)}\n\n`);
            after = line.id;
          }
        };
        send("retry: 3000\n\n");
        lines(first);
        let quiet = 0;
        while (!closed && !request.signal.aborted) {
          await Bun.sleep(TAIL_POLL_MS);
          if (closed || request.signal.aborted) break;
          try {
            const next = await readLogs(state.user, { ...input, after, limit: 200 });
            lines(next);
            quiet = next.lines.length ? 0 : quiet + TAIL_POLL_MS;
            if (quiet >= TAIL_HEARTBEAT_MS) {
              send(": still here\n\n");
              quiet = 0;
            }
          } catch (error) {
            const message =
              error instanceof Error && "code" in error && (error as { code: string }).code !== "internal"
                ? error.message
                : "The live view stopped. Reload the page to start it again.";
            send(`event: end\ndata: ${message.replace(/\n/g, " ")}\n\n`);
            break;
          }
        }
        if (!closed) {
          closed = true;
          controller.close();
        }
      },
      cancel() {
        closed = true;
      },
    });
    return new Response(stream, {
      headers: {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
      },
    });
  }

  async function dataPage(state: Signed, address: string, notice: Notice): Promise<Response> {
    const data = await readTool(deps, state.user, tool_data, { address, recent: 0 });
    return h.page(state, `Data of ${data.address}`, dataBody(data.address, data, notice));
  }

  async function collectionPage(
    state: Signed,
    address: string,
    collection: string,
    url: URL,
    notice: Notice,
  ): Promise<Response> {
    const after = url.searchParams.get("after") || undefined;
    const page = await apps(
      state.user,
      "read",
      rpcMethods.apps.dashboardDocuments,
      { address, collection, limit: PAGE_SIZE, ...(after ? { after } : {}) },
      DashboardDocumentsSchema,
    );
    return h.page(state, `${collection} · ${page.address}`, collectionBody(page.address, page, !after, notice));
  }

  /** The whole collection as JSON Lines (one document a line, newest first), read a page at a time as it is sent. */
  async function exportCollection(request: Request, address: string, collection: string): Promise<Response> {
    const state = await h.signed(request);
    if (state instanceof Response) return state;
    const read = (after?: string) =>
      apps(
        state.user,
        "read",
        rpcMethods.apps.dashboardDocuments,
        { address, collection, limit: EXPORT_PAGE_SIZE, ...(after ? { after } : {}) },
        DashboardDocumentsSchema,
      );
    let page: z.infer<typeof DashboardDocumentsSchema>;
    try {
      page = await read();
    } catch (error) {
      return h.problem(state, error);
    }
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const text = page.documents.map((d) => `${JSON.stringify(d)}\n`).join("");
        if (text) controller.enqueue(encoder.encode(text));
        if (!page.next) return controller.close();
        try {
          page = await read(page.next);
        } catch (error) {
          deps.logger.warn("collection export stopped", { address, collection, error });
          controller.error(error);
        }
      },
    });
    const file = `${page.address}-${collection}`.replace(/[^A-Za-z0-9_-]/g, "_");
    return new Response(stream, {
      headers: {
        "Content-Type": "application/jsonl; charset=utf-8",
        "Content-Disposition": `attachment; filename="${file}.jsonl"`,
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
      },
    });
  }

  async function documentPage(state: Signed, address: string, collection: string, id: string): Promise<Response> {
    const { document, address: app } = await apps(
      state.user,
      "read",
      rpcMethods.apps.dashboardDocument,
      { address, collection, id },
      DashboardDocumentAnswerSchema,
    );
    return h.page(state, `Document ${document.id}`, documentBody(state.csrfToken, app, collection, document));
  }

  async function deleteDocument(request: Request, address: string, collection: string, id: string): Promise<Response> {
    const back = collectionPath(address, collection);
    const form = await h.posted(request, back);
    if (form instanceof Response) return form;
    try {
      await apps(
        form.state.user,
        "write",
        rpcMethods.apps.dashboardDocumentDelete,
        { address, collection, id },
        DashboardDocumentDeletedSchema,
      );
      return h.done(form.state, back, `Document ${id} was deleted from ${collection}.`);
    } catch (error) {
      return h.problem(form.state, error);
    }
  }

  async function bucketPage(state: Signed, address: string, bucket: string, url: URL, notice: Notice) {
    const after = url.searchParams.get("after") || undefined;
    const page = await apps(
      state.user,
      "read",
      rpcMethods.apps.dashboardFiles,
      { address, bucket, limit: PAGE_SIZE, ...(after ? { after } : {}) },
      DashboardFilesSchema,
    );
    return h.page(state, `Files in ${bucket} · ${page.address}`, bucketBody(page, !after, notice));
  }

  const readFile = (user: PublicUser, address: string, bucket: string, id: string) =>
    apps(user, "read", rpcMethods.apps.dashboardFile, { address, bucket, id }, DashboardFileAnswerSchema);

  async function filePage(state: Signed, address: string, bucket: string, id: string): Promise<Response> {
    const answer = await readFile(state.user, address, bucket, id);
    return h.page(state, answer.file.name, fileBody(state.csrfToken, answer));
  }

  /**
   * An image file's bytes for its preview (PNG, JPEG, GIF or WebP only, as the service decides), sandboxed and never
   * sniffed: what an app's user uploaded is shown on this origin only as an image.
   */
  async function filePreview(request: Request, address: string, bucket: string, id: string): Promise<Response> {
    const state = await h.signed(request);
    if (state instanceof Response) return state;
    try {
      const { file, preview } = await readFile(state.user, address, bucket, id);
      if (preview.kind !== "image") return new Response("No preview", { status: 404 });
      return new Response(Buffer.from(preview.base64, "base64"), {
        headers: {
          "Content-Type": file.contentType.split(";")[0]!.trim().toLowerCase(),
          "Content-Security-Policy": "default-src 'none'; sandbox",
          "Content-Disposition": "inline",
          "X-Content-Type-Options": "nosniff",
          "Cache-Control": "no-store",
        },
      });
    } catch (error) {
      return h.problem(state, error);
    }
  }

  async function deleteFile(request: Request, address: string, bucket: string, id: string): Promise<Response> {
    const back = bucketPath(address, bucket);
    const form = await h.posted(request, back);
    if (form instanceof Response) return form;
    try {
      const { file } = await readFile(form.state.user, address, bucket, id);
      await apps(
        form.state.user,
        "write",
        rpcMethods.apps.dashboardFileDelete,
        { address, bucket, id },
        DashboardFileDeletedSchema,
      );
      return h.done(form.state, back, `${file.name} was deleted from ${bucket}.`);
    } catch (error) {
      return h.problem(form.state, error);
    }
  }

  const raw = { parse: "none" } as const;
  const base = "/dashboard/apps/:address";
  return new Elysia({ name: "hatch-dashboard-insight" })
    .get(`${base}/logs`, ({ request, params }) =>
      h.guard((state) => logsPage(state, params.address, new URL(request.url)))(request),
    )
    .get(`${base}/logs/stream`, ({ request, params }) => logsStream(request, params.address))
    .get(`${base}/data`, ({ request, params }) =>
      h.guard((state, notice) => dataPage(state, params.address, notice))(request),
    )
    .get(`${base}/data/:collection`, ({ request, params }) =>
      h.guard((state, notice) =>
        collectionPage(state, params.address, params.collection, new URL(request.url), notice),
      )(request),
    )
    .get(`${base}/data/:collection/export`, ({ request, params }) =>
      exportCollection(request, params.address, params.collection),
    )
    .get(`${base}/data/:collection/documents/:id`, ({ request, params }) =>
      h.guard((state) => documentPage(state, params.address, params.collection, params.id))(request),
    )
    .get(`${base}/files/:bucket`, ({ request, params }) =>
      h.guard((state, notice) => bucketPage(state, params.address, params.bucket, new URL(request.url), notice))(
        request,
      ),
    )
    .get(`${base}/files/:bucket/:id`, ({ request, params }) =>
      h.guard((state) => filePage(state, params.address, params.bucket, params.id))(request),
    )
    .get(`${base}/files/:bucket/:id/preview`, ({ request, params }) =>
      filePreview(request, params.address, params.bucket, params.id),
    )
    .post(
      `${base}/files/:bucket/:id/delete`,
      ({ request, params }) => deleteFile(request, params.address, params.bucket, params.id),
      raw,
    )
    .post(
      `${base}/data/:collection/documents/:id/delete`,
      ({ request, params }) => deleteDocument(request, params.address, params.collection, params.id),
      raw,
    );
}
