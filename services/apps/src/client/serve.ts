import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DataError, dataErrorResponse, json } from "../http/answers.ts";
import { etagMatches } from "../http/paths.ts";

// The browser library, served on every app origin: /_hatch/client.js (classic script, defines window.hatch),
// /_hatch/client.mjs (ES module) and /_hatch/client.d.ts (its types). Built from hatch-client.ts and hatch.d.ts once,
// at first use, with a gzip copy made then, so a request costs no work beyond picking the copy.

interface Representation {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

interface ClientFile {
  contentType: string;
  plain: Representation;
  gzip: Representation;
}

const BANNER =
  "// Hatch browser library. Types: /_hatch/client.d.ts. Reference: service_docs, topic browser_library.\n";
/** The one export statement hatch-client.ts ends with; the classic script drops it and sets window.hatch instead. */
const EXPORTS = /\nexport \{ hatch as default(?:, \w+)* \};\s*$/;
const CACHE_CONTROL = "public, max-age=300";

let built: ReadonlyMap<string, ClientFile> | null = null;

/** Transpiles the library (types stripped) and wraps it both ways. Throws if the source is not shaped as expected. */
export function buildClientFiles(): ReadonlyMap<string, ClientFile> {
  const source = readFileSync(join(import.meta.dir, "hatch-client.ts"), "utf8");
  const types = readFileSync(join(import.meta.dir, "hatch.d.ts"), "utf8");
  const module = new Bun.Transpiler({ loader: "ts", target: "browser" }).transformSync(source);
  const body = module.replace(EXPORTS, "\n");
  // The library must run as it is in a browser: no import, and no export but the last line.
  if (body === module || /^\s*(import|export)\b/m.test(body))
    throw new Error("hatch-client.ts must end with its one export statement and import nothing at run time");
  const script = `${BANNER}(() => {\n"use strict";\n${body}\nwindow.hatch = hatch;\n})();\n`;
  const javascript = "text/javascript; charset=utf-8";
  return new Map([
    ["client.js", clientFile(script, javascript)],
    ["client.mjs", clientFile(BANNER + module, javascript)],
    ["client.d.ts", clientFile(types, "application/typescript; charset=utf-8")],
  ]);
}

function clientFile(text: string, contentType: string): ClientFile {
  const body = new TextEncoder().encode(text);
  const hash = createHash("sha256").update(body).digest("base64url").slice(0, 27);
  // Each encoding is its own representation with its own strong ETag.
  return {
    contentType,
    plain: { body, etag: `"${hash}"` },
    gzip: { body: Bun.gzipSync(body, { level: 9 }), etag: `"${hash}-gz"` },
  };
}

/** `name` is the path after /_hatch/, e.g. "client.js". */
export function answerClientFile(request: Request, name: string): Response {
  built ??= buildClientFiles();
  const file = built.get(name);
  if (!file)
    return dataErrorResponse(
      new DataError(
        "not_found",
        "The browser library is /_hatch/client.js (script), /_hatch/client.mjs (module) or /_hatch/client.d.ts (types).",
      ),
    );
  if (request.method !== "GET" && request.method !== "HEAD") {
    return json({ error: { code: "invalid", message: "The browser library answers GET and HEAD only." } }, 405, {
      Allow: "GET, HEAD",
    });
  }
  const gzip = acceptsGzip(request.headers.get("accept-encoding"));
  const chosen = gzip ? file.gzip : file.plain;
  const headers: Record<string, string> = {
    "Content-Type": file.contentType,
    "Cache-Control": CACHE_CONTROL,
    ETag: chosen.etag,
    Vary: "Accept-Encoding",
    "X-Content-Type-Options": "nosniff",
  };
  if (gzip) headers["Content-Encoding"] = "gzip";
  const match = request.headers.get("if-none-match");
  if (etagMatches(match, file.plain.etag) || etagMatches(match, file.gzip.etag))
    return new Response(null, { status: 304, headers });
  headers["Content-Length"] = String(chosen.body.byteLength);
  return new Response(request.method === "HEAD" ? null : chosen.body, { headers });
}

/** Whether Accept-Encoding allows gzip: named without `q=0`, or else `*` without `q=0`. */
export function acceptsGzip(header: string | null): boolean {
  if (!header) return false;
  const weights = new Map<string, number>();
  for (const entry of header.toLowerCase().split(",")) {
    const [coding = "", ...params] = entry.split(";").map((p) => p.trim());
    const q = params.find((p) => p.startsWith("q="));
    weights.set(coding, q ? Number(q.slice(2)) || 0 : 1);
  }
  return (weights.get("gzip") ?? weights.get("*") ?? 0) > 0;
}
