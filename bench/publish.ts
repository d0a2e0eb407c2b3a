// `bun run bench:publish` (also the last part of `bun run bench`): publishing a folder of 500 files / 10 MB
// through the real MCP client and upload URLs, then republishing it with one file changed. Reports the bytes
// the client sent and the time for each; the goal is that the republish uploads only the changed file.
// Runs the embedded stack in this process (in-memory PGlite, in-process bus, blobs in a temp folder).
import { createLogger } from "@hatch/shared";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHatch } from "../scripts/hatch.ts";
import { publishFolder, type Folder } from "../test/support/app-folder.ts";

const FILES = 500;
const TOTAL_BYTES = 10 * 1024 * 1024;
const UPLOAD_CONCURRENCY = 8;

export interface PublishPhase {
  phase: string;
  uploads: number;
  uploadBytes: number;
  /** Every request body the client sent: MCP messages and uploads. */
  bytesSent: number;
  ms: number;
}

export interface PublishBenchResult {
  files: number;
  folderBytes: number;
  phases: PublishPhase[];
  goal: { name: string; status: "MET" | "NOT MET"; detail: string };
}

function makeFolder(): Folder {
  const folder: Folder = new Map();
  const each = Math.floor(TOTAL_BYTES / FILES);
  folder.set("index.html", new TextEncoder().encode(`<!doctype html><title>bench</title>${"<p>hello</p>".repeat(each / 12)}`));
  for (let i = 1; i < FILES; i++) folder.set(`assets/chunk-${String(i).padStart(3, "0")}.js`, new Uint8Array(randomBytes(each)));
  return folder;
}

export async function runPublishBench(progress: (message: string) => void = () => {}): Promise<PublishBenchResult> {
  const blobDir = mkdtempSync(join(tmpdir(), "hatch-bench-publish-"));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const hatch = await startHatch({
    secret: randomBytes(32).toString("hex"),
    logger: createLogger({ level: "warn" }),
    port,
    serviceEnv: { APP_PORT: "0", BLOB_DIR: blobDir },
  });
  const server = hatch.gateway.app.listen({ port, hostname: "127.0.0.1", reusePort: false });
  let sent = 0;
  const counting: typeof fetch = Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => {
      sent += bodySize(init?.body);
      return fetch(input, init);
    },
    { preconnect: fetch.preconnect },
  );
  try {
    await hatch.gateway.auth.createUser({ email: "publish@bench.example", password: "bench password 123", name: "Publish Bench" });
    const { accessToken } = await hatch.gateway.auth.issueTokenForScript({ email: "publish@bench.example", ttlSeconds: 3_600 });
    const client = new Client({ name: "hatch-bench", version: "1" }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(hatch.config.mcpUrl), { fetch: counting, requestInit: { headers: { Authorization: `Bearer ${accessToken}` } } }));

    const folder = makeFolder();
    const phases: PublishPhase[] = [];
    const measure = async (phase: string, args: Record<string, unknown>) => {
      sent = 0;
      const started = performance.now();
      const { address, uploads, uploadBytes } = await publishFolder(client, folder, args, counting, UPLOAD_CONCURRENCY);
      phases.push({ phase, uploads, uploadBytes, bytesSent: sent, ms: Math.round(performance.now() - started) });
      progress(`publish: ${phase} done`);
      return address;
    };
    const address = await measure("first publish", { name: "Bench Folder", visibility: "private" });
    folder.set("assets/chunk-250.js", new Uint8Array(randomBytes(folder.get("assets/chunk-250.js")!.byteLength)));
    await measure("republish, 1 file changed", { address });
    await measure("republish, nothing changed", { address });
    await client.close();

    const changed = phases[1]!;
    const only = changed.uploads === 1 && changed.uploadBytes === folder.get("assets/chunk-250.js")!.byteLength;
    return {
      files: folder.size,
      folderBytes: [...folder.values()].reduce((s, b) => s + b.byteLength, 0),
      phases,
      goal: {
        name: "the republish sends only the changed file",
        status: only ? "MET" : "NOT MET",
        detail: `${changed.uploads} upload(s), ${changed.uploadBytes} bytes uploaded, ${changed.bytesSent} bytes sent in all`,
      },
    };
  } finally {
    await server.stop(true);
    await hatch.close();
    rmSync(blobDir, { recursive: true, force: true });
  }
}

function bodySize(body: RequestInit["body"]): number {
  if (!body) return 0;
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Uint8Array || body instanceof ArrayBuffer) return body.byteLength;
  if (body instanceof Blob) return body.size;
  return 0;
}

export function formatPublishReport(result: PublishBenchResult): string {
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MB`;
  const rows = result.phases.map((p) => `${p.phase.padEnd(28)} ${String(p.uploads).padStart(7)} ${mb(p.uploadBytes).padStart(10)} ${mb(p.bytesSent).padStart(10)} ${String(p.ms).padStart(8)}`);
  const [first, changed] = result.phases;
  return [
    `Publish: ${result.files} files, ${mb(result.folderBytes)} (manifest + upload URLs, embedded stack)`,
    `${"phase".padEnd(28)} ${"uploads".padStart(7)} ${"uploaded".padStart(10)} ${"sent".padStart(10)} ${"ms".padStart(8)}`,
    ...rows,
    first && changed ? `republish/first: bytes sent ${(changed.bytesSent / first.bytesSent).toFixed(4)}, time ${(changed.ms / first.ms).toFixed(2)}` : "",
    `Goal: ${result.goal.name}: ${result.goal.status} (${result.goal.detail})`,
  ].join("\n");
}

if (import.meta.main) {
  const result = await runPublishBench((m) => process.stderr.write(`bench: ${m}\n`));
  process.stdout.write(`${formatPublishReport(result)}\n`);
}
