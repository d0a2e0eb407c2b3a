// `bun run bench:publish` (also the last part of `bun run bench`): the first publish of a folder of 500 files /
// 10 MB end to end on loopback, two ways in the same run: (m) the manifest path (baseline: publish with the
// manifest, PUT each missing file, publish { uploadId }) and (t) `publish { upload: true }` then the command its
// text gives, run for real (`sh -c "tar -C <dir> -cf - . | curl -sS -T - <url>"`), each a fresh app with contents
// Hatch has never seen. Then republishes by manifest with one file changed. Reports bytes sent and time, t/m as a
// ratio; goals: (t) at most 500 ms, and the republish uploads only the changed file. Both paths are warmed up first.
// Runs the embedded stack in this process (in-memory PGlite, in-process bus, blobs in a temp folder).
import { createLogger } from "@hatch/platform";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHatch } from "../scripts/hatch.ts";
import { publishFolder, runShell, uploadCommandOf, writeFolder, type Folder } from "../test/support/app-folder.ts";

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

export interface PublishGoal {
  name: string;
  status: "MET" | "NOT MET";
  detail: string;
}

export interface PublishBenchResult {
  files: number;
  folderBytes: number;
  phases: PublishPhase[];
  /** First publish by tar upload over first publish by manifest, in time (lower is better). */
  tarOverManifest: number;
  goals: PublishGoal[];
}

const TAR_GOAL_MS = 500;

function makeFolder(): Folder {
  const folder: Folder = new Map();
  const each = Math.floor(TOTAL_BYTES / FILES);
  folder.set(
    "index.html",
    new TextEncoder().encode(`<!doctype html><title>bench</title>${"<p>hello</p>".repeat(each / 12)}`),
  );
  for (let i = 1; i < FILES; i++)
    folder.set(`assets/chunk-${String(i).padStart(3, "0")}.js`, new Uint8Array(randomBytes(each)));
  return folder;
}

export async function runPublishBench(progress: (message: string) => void = () => {}): Promise<PublishBenchResult> {
  const blobDir = mkdtempSync(join(tmpdir(), "hatch-bench-publish-"));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const hatch = await startHatch({
    secret: randomBytes(32).toString("hex"),
    logger: createLogger({ level: "warn" }),
    port,
    // Four apps (two warm-ups, two measured) are more than the free plan holds: no plan limits here.
    serviceEnv: { APP_PORT: "0", BLOB_DIR: blobDir, BILLING_ENFORCE_LIMITS: "false" },
  });
  const server = hatch.gateway.listen({ port, hostname: "127.0.0.1" });
  let sent = 0;
  const counting: typeof fetch = Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => {
      sent += bodySize(init?.body);
      return fetch(input, init);
    },
    { preconnect: fetch.preconnect },
  );
  try {
    await hatch.gateway.auth.createUser({
      email: "publish@bench.example",
      password: "bench password 123",
      name: "Publish Bench",
    });
    const { accessToken } = await hatch.gateway.auth.issueTokenForScript({
      email: "publish@bench.example",
      ttlSeconds: 3_600,
    });
    const client = new Client({ name: "hatch-bench", version: "1" }, { capabilities: {} });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(hatch.config.mcpUrl), {
        fetch: counting,
        requestInit: { headers: { Authorization: `Bearer ${accessToken}` } },
      }),
    );

    const folder = makeFolder();
    const phases: PublishPhase[] = [];
    // Warm-up: one small publish each way, so neither measured path pays for the JIT or first connections.
    const small: Folder = new Map([
      ["index.html", new TextEncoder().encode("<h1>warm</h1>")],
      ["a.js", new Uint8Array(randomBytes(1000))],
    ]);
    await publishFolder(client, small, { name: "Warm Manifest", visibility: "private" }, counting, UPLOAD_CONCURRENCY);
    await publishByTar(client, small, { name: "Warm Tar", visibility: "private" });
    const tarFolder = makeFolder();
    const tarDir = writeFolder(tarFolder);
    const measure = async (phase: string, args: Record<string, unknown>) => {
      sent = 0;
      const started = performance.now();
      const { address, uploads, uploadBytes } = await publishFolder(client, folder, args, counting, UPLOAD_CONCURRENCY);
      phases.push({ phase, uploads, uploadBytes, bytesSent: sent, ms: Math.round(performance.now() - started) });
      progress(`publish: ${phase} done`);
      return address;
    };
    const address = await measure("first publish, manifest (m)", { name: "Bench Folder", visibility: "private" });
    sent = 0;
    const tarStarted = performance.now();
    const tar = await publishByTar(client, tarDir, { name: "Bench Tar", visibility: "private" });
    phases.push({
      phase: "first publish, tar | curl (t)",
      uploads: 1,
      uploadBytes: tar.uploadBytes,
      bytesSent: sent + tar.uploadBytes,
      ms: Math.round(performance.now() - tarStarted),
    });
    progress("publish: first publish by tar done");
    rmSync(tarDir, { recursive: true, force: true });
    folder.set("assets/chunk-250.js", new Uint8Array(randomBytes(folder.get("assets/chunk-250.js")!.byteLength)));
    await measure("republish, 1 file changed", { address });
    await measure("republish, nothing changed", { address });
    await client.close();

    const [manifest, byTar, changed] = phases as [PublishPhase, PublishPhase, PublishPhase];
    const only = changed.uploads === 1 && changed.uploadBytes === folder.get("assets/chunk-250.js")!.byteLength;
    return {
      files: folder.size,
      folderBytes: [...folder.values()].reduce((s, b) => s + b.byteLength, 0),
      phases,
      tarOverManifest: byTar.ms / manifest.ms,
      goals: [
        {
          name: `the first publish by tar | curl takes at most ${TAR_GOAL_MS} ms`,
          status: byTar.ms <= TAR_GOAL_MS ? "MET" : "NOT MET",
          detail: `${byTar.ms} ms (manifest path: ${manifest.ms} ms)`,
        },
        {
          name: "the republish sends only the changed file",
          status: only ? "MET" : "NOT MET",
          detail: `${changed.uploads} upload(s), ${changed.uploadBytes} bytes uploaded, ${changed.bytesSent} bytes sent in all`,
        },
      ],
    };
  } finally {
    await server.stop(true);
    await hatch.close();
    rmSync(blobDir, { recursive: true, force: true });
  }
}

/**
 * publish { upload: true }, then the command from its text (dist → the folder), through sh -c as a person pastes
 * it. `folder` is a directory, or a Folder written to a temporary one first.
 */
async function publishByTar(
  client: Client,
  folder: string | Folder,
  args: Record<string, unknown>,
): Promise<{ uploadBytes: number }> {
  const dir = typeof folder === "string" ? folder : writeFolder(folder);
  const result = await client.callTool({ name: "publish", arguments: { ...args, upload: true } }, undefined, {
    timeout: 120_000,
  });
  const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
  if (result.isError) throw new Error(`publish failed: ${text}`);
  const run = await runShell(uploadCommandOf(text, dir));
  if (run.code !== 0 || !run.stdout.includes("version 1:"))
    throw new Error(`the upload command failed (${run.code}): ${run.stdout}${run.stderr}`);
  let uploadBytes = 0;
  for (const entry of new Bun.Glob("**/*").scanSync({ cwd: dir, dot: true }))
    uploadBytes += Bun.file(join(dir, entry)).size;
  if (typeof folder !== "string") rmSync(dir, { recursive: true, force: true });
  return { uploadBytes };
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
  const rows = result.phases.map(
    (p) =>
      `${p.phase.padEnd(30)} ${String(p.uploads).padStart(7)} ${mb(p.uploadBytes).padStart(10)} ${mb(p.bytesSent).padStart(10)} ${String(p.ms).padStart(8)}`,
  );
  const [first, , changed] = result.phases;
  return [
    `Publish: ${result.files} files, ${mb(result.folderBytes)}, first publish end to end on loopback (embedded stack)`,
    `${"phase".padEnd(30)} ${"uploads".padStart(7)} ${"uploaded".padStart(10)} ${"sent".padStart(10)} ${"ms".padStart(8)}`,
    ...rows,
    `first publish (t)/(m): time ${result.tarOverManifest.toFixed(2)} (lower is better)`,
    first && changed
      ? `republish/first (manifest): bytes sent ${(changed.bytesSent / first.bytesSent).toFixed(4)}, time ${(changed.ms / first.ms).toFixed(2)}`
      : "",
    ...result.goals.map((g) => `Goal: ${g.name}: ${g.status} (${g.detail})`),
  ].join("\n");
}

if (import.meta.main) {
  const result = await runPublishBench((m) => process.stderr.write(`bench: ${m}\n`));
  process.stdout.write(`${formatPublishReport(result)}\n`);
}
