import { PAGE_STYLE, html, raw } from "../../pages/layout.ts";

// A view's HTML document: the dashboard's styles, a place for the result, a status line, and the views' script
// (client.ts, bundled for the browser once per process, when a client first reads a view).

/** What a view adds to the pages' styles: the preview frame, a form on one line, the body as the whole frame. */
const VIEW_STYLE = `main{margin:0 auto;padding:1rem 1.25rem}#status{margin:0 1.25rem 1rem}#status:empty{display:none}iframe.preview{width:100%;height:22rem;border:1px solid var(--border);border-radius:10px;background:#fff}
form.inline{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin:1rem 0}form.inline label{font-weight:600}
[aria-busy=true]{opacity:.6}`;

let script: Promise<string> | null = null;

/** The views' script, bundled and minified; a failed build is tried again on the next read. */
function viewScript(): Promise<string> {
  script ??= Bun.build({
    entrypoints: [new URL("./client.ts", import.meta.url).pathname],
    target: "browser",
    minify: true,
  }).then(async (built) => {
    const [output] = built.outputs;
    if (!built.success || !output) throw new Error(`the views' script did not build: ${built.logs.join("\n")}`);
    // Inline in a <script>: a "</script" inside the bundle would end it early.
    return (await output.text()).replaceAll("</script", "<\\/script");
  });
  script.catch(() => {
    script = null;
  });
  return script;
}

const documents = new Map<string, string>();

/** A view's document, made once per process. */
export async function viewDocument(view: { name: string; title: string }): Promise<string> {
  let made = documents.get(view.name);
  if (made) return made;
  const title = view.title;
  made = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title} · Hatch</title>
<style>${raw(PAGE_STYLE)}${raw(VIEW_STYLE)}</style></head>
<body><main id="view"><p class="muted">Waiting for Hatch's answer…</p></main><p id="status" class="muted" role="status"></p>
<script type="module">${raw(await viewScript())}</script></body></html>`.value;
  documents.set(view.name, made);
  return made;
}
