import { developerReference, DOCS_TOPICS, type ReferenceSettings, type ReferenceTopic } from "@hatch/contracts";
import { htmlResponse, html, raw, renderPage } from "./layout.ts";

const MARKDOWN_HEADERS = { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "public, max-age=300" };

/**
 * `GET /mcp/docs`: the developer reference, the same text `service_docs` returns, with this deployment's app
 * addresses (`settings`). HTML in a browser; Markdown at `/mcp/docs.md`, with `?format=markdown`, or when the client
 * asks for `text/markdown`.
 */
export function docsResponse(request: Request, forceMarkdown: boolean, settings: ReferenceSettings = {}): Response {
  const url = new URL(request.url);
  const topicParam = url.searchParams.get("topic") ?? "all";
  const topic = DOCS_TOPICS.find((t) => t === topicParam);
  if (!topic) {
    return new Response(`Unknown topic "${topicParam}". Use one of: ${DOCS_TOPICS.join(", ")}.\n`, {
      status: 400,
      headers: { "Content-Type": "text/plain; charset=utf-8" },
    });
  }
  const markdown = developerReference(topic, settings);
  const wantsMarkdown =
    forceMarkdown || url.searchParams.get("format") === "markdown" || prefersMarkdown(request.headers.get("accept"));
  if (wantsMarkdown) return new Response(markdown, { headers: MARKDOWN_HEADERS });
  const response = htmlResponse(renderDocsPage(markdown, topic));
  response.headers.set("Cache-Control", "public, max-age=300");
  response.headers.set("Vary", "Accept");
  return response;
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
  // The reference is this codebase's own text (no user input), so its rendered HTML is trusted. Its title becomes
  // the page's h1 (the layout's header is not a heading), and the contents follow it.
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
