import type { ToolContract } from "@hatch/contracts";
import type { Logger } from "@hatch/platform";
import { EXTENSION_ID, getUiCapability, RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps/server";
import type { CallToolResult, ReadResourceResult, Resource, Tool } from "@modelcontextprotocol/server";
import { forPeople, linked } from "../../pages/dashboard/words.ts";
import { html, labelTableCells } from "../../pages/layout.ts";
import { viewDocument } from "./document.ts";
import { VIEWS, type ViewContext, type ViewDefinition } from "./definitions.ts";
import { VIEW_META_KEY, VIEW_TOOLS } from "./view-tools.ts";

export { VIEW_META_KEY, viewTool, type ViewTool } from "./view-tools.ts";
export type { ViewContext } from "./definitions.ts";

// MCP Apps (io.modelcontextprotocol/ui, 2026-01-26) for clients that declare it: the views as resources, their URIs
// on the tools that show them, the tools only views call, and each result's view markup in its `_meta`. A client that
// does not declare the extension gets none of it: the same tool list, the same results, no resources.

export const UI_EXTENSION = EXTENSION_ID;
export const VIEW_URI_PREFIX = "ui://hatch/";

const uriOf = (view: ViewDefinition) => `${VIEW_URI_PREFIX}${view.name}`;
const viewOfTool = new Map(VIEWS.flatMap((view) => view.tools.map((tool) => [tool, view] as const)));

/** Whether these client capabilities (a 2025 initialize's, a 2026 request's) take HTML views. */
export function declaresViews(capabilities: Parameters<typeof getUiCapability>[0]): boolean {
  const ui = getUiCapability(capabilities);
  return Array.isArray(ui?.mimeTypes) && ui.mimeTypes.includes(RESOURCE_MIME_TYPE);
}

/** What views need from the deployment: its origin (links) and the origins apps are served from (the preview frame). */
export interface ViewSettings {
  baseUrl: string;
  /** CSP sources of the apps' origins, e.g. `https://*.apps.example`. */
  appOrigins: readonly string[];
}

const viewListings = new WeakMap<Tool[], Tool[]>();

/**
 * The tool list as a client with views sees it: each tool with a view names it; each view-only tool follows when the
 * tool it goes with is listed. Kept per listing (catalog.ts keeps those).
 */
export function withViewTools(tools: Tool[]): Tool[] {
  let listed = viewListings.get(tools);
  if (listed) return listed;
  const named = tools.map((tool) => {
    const view = viewOfTool.get(tool.name);
    // The stable extension's key only: the flat "ui/resourceUri" of its drafts would cost the model 40 bytes a tool.
    return view ? { ...tool, _meta: { ...tool._meta, ui: { resourceUri: uriOf(view) } } } : tool;
  });
  const appOnly = VIEW_TOOLS.filter((t) => tools.some((tool) => tool.name === t.beside)).map(
    (t): Tool => ({ ...t.tool, _meta: { ui: { resourceUri: `${VIEW_URI_PREFIX}${t.view}`, visibility: ["app"] } } }),
  );
  listed = [...named, ...appOnly];
  viewListings.set(tools, listed);
  return listed;
}

export function viewResources(): Resource[] {
  return VIEWS.map((view) => ({
    uri: uriOf(view),
    name: view.name,
    title: view.title,
    description: view.description,
    mimeType: RESOURCE_MIME_TYPE,
  }));
}

/** `resources/read` of a view, or null for a URI that names none. */
export async function readView(uri: string, settings: ViewSettings): Promise<ReadResourceResult | null> {
  const view = VIEWS.find((v) => uriOf(v) === uri);
  if (!view) return null;
  // No connection, frame or image leaves the view but the preview of an app; links open through the host.
  const csp = view.framesApps ? { frameDomains: [...settings.appOrigins] } : {};
  return {
    contents: [
      {
        uri,
        mimeType: RESOURCE_MIME_TYPE,
        text: await viewDocument(view),
        _meta: { ui: { csp, prefersBorder: true, permissions: { clipboardWrite: {} } } },
      },
    ],
  };
}

/**
 * The result with its view's markup in `_meta` (drawn from the tool's whole answer, before the result is made lean for
 * the model). A result with no view, an error, a question, or a view that cannot be drawn goes as it is.
 */
export async function withViewMarkup(
  contract: ToolContract,
  input: unknown,
  result: CallToolResult,
  ctx: ViewContext,
  log: Logger,
): Promise<CallToolResult> {
  const view = viewOfTool.get(contract.name);
  if (!view || result.isError || !result.structuredContent) return result;
  try {
    const markup = await view.render(
      contract.name,
      result.structuredContent,
      (input ?? {}) as Record<string, unknown>,
      ctx,
    );
    // Nothing to draw: the tool's words, made a person's (its text is written for the AI).
    const drawn = markup ?? html`<p>${linked(forPeople(textOf(result), "Done."))}</p>`;
    // The dashboard's links are paths on the gateway; a view has no origin of its own.
    // Tables read as labelled cards in a narrow frame, as on the pages.
    const markupText = labelTableCells(drawn.value.replaceAll('href="/', `href="${ctx.baseUrl}/`));
    return { ...result, _meta: { ...result._meta, [VIEW_META_KEY]: { html: markupText } } };
  } catch (error) {
    log.warn("a view could not be drawn; the result goes without it", { tool: contract.name, error });
    return result;
  }
}

/**
 * A refusal as a view shows it: the tool's words for the AI made a person's (no tool names, no instructions for an AI,
 * the error code left out), in the result's `_meta`; the model's text stays as it was.
 */
export function withErrorView(result: CallToolResult): CallToolResult {
  if (!result.isError || result._meta?.[VIEW_META_KEY]) return result;
  const words = forPeople(textOf(result).replace(/\s*\([a-z_]+\)$/, ""), "That did not work. Nothing was changed.");
  return {
    ...result,
    _meta: {
      ...result._meta,
      [VIEW_META_KEY]: { html: html`<p class="error" role="alert">${linked(words)}</p>`.value },
    },
  };
}

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
