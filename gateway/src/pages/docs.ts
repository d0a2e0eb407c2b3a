import {
  DeveloperReferenceSchema,
  DOCS_TOPICS,
  isToolError,
  randomId,
  rpcMethods,
  type ServiceDocsInput,
} from "@hatch/contracts";
import type { Bus, Logger } from "@hatch/platform";
import { callPublicRpc } from "../services.ts";
import { html, htmlResponse, raw, renderPage } from "./layout.ts";

// GET /mcp/docs: the developer reference, the same text `service_docs` gives. The apps service owns the text (it
// names its own limits and this deployment's app addresses); the gateway asks for it with apps' `reference` rpc and
// keeps each topic's answer a few minutes, so a busy page costs apps almost nothing and a new apps release's text
// shows within minutes. While apps cannot answer, the last text kept is served; with none, a 503 page says so.

type ReferenceTopic = ServiceDocsInput["topic"];

/** Where the gateway gets the reference of one topic (apps' rpc; tests give text of their own). */
export type ReferenceSource = (topic: ReferenceTopic) => Promise<string>;

const MARKDOWN_HEADERS = { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "public, max-age=300" };
/** How long a topic's text is used before apps is asked again: the page's own max-age. */
export const REFERENCE_TTL_MS = 5 * 60_000;
/** After a failed ask, how long the kept text is used before apps is asked again (no page waits on a dead apps). */
const RETRY_AFTER_FAILURE_MS = 30_000;

interface Kept {
  markdown: string | null;
  /** Until when `markdown` is used without asking apps. */
  freshUntil: number;
  asking: Promise<string> | null;
}

/** Each topic's reference as apps last gave it, asked for again after REFERENCE_TTL_MS; one ask at a time per topic. */
export class DeveloperReferenceCache {
  private readonly kept = new Map<ReferenceTopic, Kept>();

  constructor(
    private readonly ask: ReferenceSource,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The topic's text; throws only when apps cannot answer and nothing was kept. */
  get(topic: ReferenceTopic): Promise<string> {
    let kept = this.kept.get(topic);
    if (!kept) this.kept.set(topic, (kept = { markdown: null, freshUntil: 0, asking: null }));
    if (kept.markdown !== null && this.now() < kept.freshUntil) return Promise.resolve(kept.markdown);
    kept.asking ??= this.refresh(topic, kept).finally(() => {
      kept.asking = null;
    });
    return kept.asking;
  }

  private async refresh(topic: ReferenceTopic, kept: Kept): Promise<string> {
    try {
      kept.markdown = await this.ask(topic);
      kept.freshUntil = this.now() + REFERENCE_TTL_MS;
      return kept.markdown;
    } catch (error) {
      this.log?.warn("developer reference not fetched from apps", {
        topic,
        kept: kept.markdown !== null,
        code: isToolError(error) ? error.code : "internal",
      });
      if (kept.markdown === null) throw error;
      kept.freshUntil = this.now() + RETRY_AFTER_FAILURE_MS;
      return kept.markdown;
    }
  }
}

/** The reference from apps over the bus (`rpc.apps.reference`), kept per topic. */
export function appsReference(bus: Bus, log?: Logger): DeveloperReferenceCache {
  return new DeveloperReferenceCache(
    async (topic) =>
      (
        await callPublicRpc({ bus }, "apps", rpcMethods.apps.developerReference, { topic }, DeveloperReferenceSchema, {
          requestId: randomId(12),
        })
      ).markdown,
    log,
  );
}

/**
 * `GET /mcp/docs`: the developer reference, the same text `service_docs` returns. HTML in a browser; Markdown at
 * `/mcp/docs.md`, with `?format=markdown`, or when the client asks for `text/markdown`. 503 while apps cannot give
 * it (and no text was kept).
 */
export async function docsResponse(
  request: Request,
  forceMarkdown: boolean,
  reference: ReferenceSource,
): Promise<Response> {
  const url = new URL(request.url);
  const topicParam = url.searchParams.get("topic") ?? "all";
  const topic = DOCS_TOPICS.find((t) => t === topicParam);
  if (!topic) {
    return new Response(`Unknown topic "${topicParam}". Use one of: ${DOCS_TOPICS.join(", ")}.\n`, {
      status: 400,
      headers: { "Content-Type": "text/plain; charset=utf-8" },
    });
  }
  const wantsMarkdown =
    forceMarkdown || url.searchParams.get("format") === "markdown" || prefersMarkdown(request.headers.get("accept"));
  let markdown: string;
  try {
    markdown = await reference(topic);
  } catch {
    return unavailable(wantsMarkdown);
  }
  if (wantsMarkdown) return new Response(markdown, { headers: MARKDOWN_HEADERS });
  const response = htmlResponse(renderDocsPage(markdown, topic));
  response.headers.set("Cache-Control", "public, max-age=300");
  response.headers.set("Vary", "Accept");
  return response;
}

const UNAVAILABLE =
  "The developer reference comes from Hatch's apps service, which is not answering right now. Try again in a minute.";

function unavailable(markdown: boolean): Response {
  const headers = { "Retry-After": "30", "Cache-Control": "no-store" };
  if (markdown) {
    return new Response(`${UNAVAILABLE}\n`, {
      status: 503,
      headers: { ...headers, "Content-Type": "text/plain; charset=utf-8" },
    });
  }
  const page = renderPage({
    title: "Developer reference",
    body: html`<h1>Developer reference</h1><p class="error" role="alert">${UNAVAILABLE}</p>`,
  });
  return htmlResponse(page, { status: 503, headers });
}

function prefersMarkdown(accept: string | null): boolean {
  if (!accept) return false;
  const md = accept.indexOf("text/markdown");
  const html = accept.indexOf("text/html");
  return md >= 0 && (html < 0 || md < html);
}

/** A table of contents of the second-level headings (Bun's renderer gives every heading a unique id). */
function tableOfContents(rendered: string): string {
  const entries = [...rendered.matchAll(/<h2 id="([^"]+)">([\s\S]*?)<\/h2>/g)].map(
    ([, id, title]) => `<li><a href="#${id}">${title}</a></li>`,
  );
  if (entries.length < 2) return "";
  return `<nav class="toc card" aria-labelledby="contents"><h2 id="contents">Contents</h2><ol>${entries.join("")}</ol></nav>`;
}

function renderDocsPage(markdown: string, topic: ReferenceTopic): string {
  const markdownLink = topic === "all" ? "/mcp/docs.md" : `/mcp/docs.md?topic=${topic}`;
  // The reference is Hatch's own text from its apps service (no user input), so its rendered HTML is trusted. Its
  // title becomes the page's h1 (the layout's header is not a heading), and the contents follow it.
  const rendered = Bun.markdown.html(markdown, { headings: { ids: true } });
  const titleEnd = rendered.indexOf("</h1>");
  const [title, rest] =
    titleEnd >= 0
      ? [rendered.slice(0, titleEnd + 5), rendered.slice(titleEnd + 5)]
      : ["<h1>Developer reference</h1>", rendered];
  return renderPage({
    title: "Developer reference",
    body: html`${raw(title)}<p class="muted"><a href="${markdownLink}">Read as Markdown</a></p>
${raw(tableOfContents(rest))}${raw(rest)}`,
  });
}
