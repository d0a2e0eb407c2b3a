import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

/** A built folder: path (relative, with /) → bytes. */
export type Folder = Map<string, Uint8Array<ArrayBuffer>>;

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

/**
 * Builds a small real app with Bun's bundler (HTML entry, TypeScript, CSS → hashed chunks in dist/), as an
 * AI would before publishing. `title` ends up in the page so versions can be told apart.
 */
export async function buildCounterApp(title: string): Promise<Folder> {
  const root = mkdtempSync(join(tmpdir(), "hatch-app-"));
  mkdirSync(join(root, "src"));
  writeFileSync(
    join(root, "src/index.html"),
    `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><link rel="stylesheet" href="./style.css"></head>
<body><h1 id="title">${title}</h1><button id="inc">+1</button> <span id="count">0</span><script type="module" src="./main.ts"></script></body></html>`,
  );
  writeFileSync(join(root, "src/style.css"), "body { font-family: sans-serif } #count { font-weight: bold }");
  writeFileSync(
    join(root, "src/main.ts"),
    `const count = document.getElementById("count")!;
document.getElementById("inc")!.addEventListener("click", () => { count.textContent = String(Number(count.textContent) + 1); });`,
  );
  const build = await Bun.build({
    entrypoints: [join(root, "src/index.html")],
    outdir: join(root, "dist"),
    minify: true,
  });
  if (!build.success) throw new Error(`build failed: ${build.logs.join("\n")}`);
  return readFolder(join(root, "dist"));
}

export async function readFolder(dir: string): Promise<Folder> {
  const folder: Folder = new Map();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    folder.set(relative(dir, full).split("\\").join("/"), new Uint8Array(await Bun.file(full).arrayBuffer()));
  }
  return folder;
}

export interface PublishedFolder {
  address: string;
  url: string;
  version: number;
  uploads: number;
  uploadBytes: number;
}

/**
 * publish with a manifest, PUT the files it asks for (a few at a time) to its base URL + path, then finish with
 * the upload id it gave.
 */
export async function publishFolder(
  client: Client,
  folder: Folder,
  args: Record<string, unknown>,
  put: typeof fetch = fetch,
  concurrency = 8,
): Promise<PublishedFolder> {
  const manifest = [...folder].map(([path, bytes]) => ({ path, sha256: sha256(bytes), size: bytes.byteLength }));
  const call = async (input: Record<string, unknown>) => {
    const result = await client.callTool({ name: "publish", arguments: input }, undefined, { timeout: 120_000 });
    if (result.isError) throw new Error(`publish failed: ${JSON.stringify(result.content)}`);
    return result.structuredContent as {
      status: string;
      address?: string;
      url?: string;
      version?: number;
      uploadUrl?: string;
      uploadId?: string;
      missing?: string[];
    };
  };
  let reply = await call({ ...args, manifest });
  const missing = reply.missing ?? [];
  let uploadBytes = 0;
  for (let i = 0; i < missing.length; i += concurrency) {
    await Promise.all(
      missing.slice(i, i + concurrency).map(async (path) => {
        const body = folder.get(path)!;
        uploadBytes += body.byteLength;
        const response = await put(`${reply.uploadUrl}${path.split("/").map(encodeURIComponent).join("/")}`, {
          method: "PUT",
          body,
        });
        if (response.status !== 201)
          throw new Error(`upload of ${path} answered ${response.status}: ${await response.text()}`);
      }),
    );
  }
  if (reply.status === "needs_upload") reply = await call({ uploadId: reply.uploadId });
  if (reply.status !== "published" || !reply.address || !reply.url || !reply.version)
    throw new Error(`publish did not finish: ${JSON.stringify(reply)}`);
  return { address: reply.address, url: reply.url, version: reply.version, uploads: missing.length, uploadBytes };
}

/** Writes a folder to a fresh temporary directory (for the real tar | curl command). */
export function writeFolder(folder: Folder): string {
  const dir = mkdtempSync(join(tmpdir(), "hatch-folder-"));
  for (const [path, bytes] of folder) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), bytes);
  }
  return dir;
}

/** The command publish { upload: true } put in its text, with `dist` replaced by `dir`. */
export function uploadCommandOf(text: string, dir: string): string {
  const line = text.split("\n").find((l) => l.startsWith("tar -C dist "));
  if (!line) throw new Error(`no upload command in: ${text}`);
  return line.replace("tar -C dist ", `tar -C '${dir}' `);
}

/** Runs a shell command as a person would paste it (sh -c); its exit code, stdout and stderr. */
export async function runShell(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["sh", "-c", command], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}
