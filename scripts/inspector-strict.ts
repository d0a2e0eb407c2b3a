// `bun run inspector:strict`: the MCP Inspector CLI's strict schema check (`--method tools/list --strict`) against
// `bun run dev`, with a bearer token, for the full tool list, the read-only one and one narrowed to two groups. The
// Inspector is fetched by bunx on first use. Prints what it reports; exits 1 on any warning or error, since strict
// clients refuse or degrade a tool for either (test/pages-schemas.e2e.test.ts checks the same rules without it).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const INSPECTOR = "@modelcontextprotocol/inspector@2.12.0";
const QUERIES = ["", "?read_only=true", "?features=apps,data"];

function freePort(): number {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

async function waitUntil(check: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await Bun.sleep(200);
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function run(
  command: string[],
  env: Record<string, string>,
): Promise<{ code: number; out: string; err: string }> {
  const child = Bun.spawn(command, { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, out, err };
}

const dataDir = mkdtempSync(join(tmpdir(), "hatch-inspector-"));
const port = freePort();
const env = {
  PORT: String(port),
  BASE_URL: `http://localhost:${port}`,
  APP_PORT: String(freePort()),
  DATA_DIR: dataDir,
  LOG_LEVEL: "warn",
};
const dev = Bun.spawn(["bun", "scripts/dev.ts"], { env: { ...process.env, ...env }, stdout: "ignore", stderr: "pipe" });
let failed = 0;

try {
  await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, "bun run dev to answer /healthz");
  const email = "inspector@example.com";
  const admin = (args: string[]) => run(["bun", "scripts/admin.ts", ...args], env);
  const created = await admin([
    "user:create",
    "--email",
    email,
    "--password",
    "inspector-password-1",
    "--name",
    "Inspector",
  ]);
  if (created.code !== 0) throw new Error(`user:create failed: ${created.out}${created.err}`);
  const issued = await admin(["token:issue", "--email", email]);
  const token = issued.out.match(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/m)?.[0];
  if (issued.code !== 0 || !token) throw new Error(`token:issue failed: ${issued.out}${issued.err}`);

  for (const query of QUERIES) {
    const url = `${env.BASE_URL}/mcp${query}`;
    const result = await run(
      ["bunx", INSPECTOR, "--cli", url, "--transport", "http", "--header", `Authorization: Bearer ${token}`].concat([
        "--method",
        "tools/list",
        "--strict",
      ]),
      {},
    );
    const tools = (JSON.parse(result.out || "{}") as { tools?: { outputSchema?: unknown }[] }).tools ?? [];
    const findings = (result.err.match(/^(Warning|Error): tool /gm) ?? []).length;
    const withOutput = tools.filter((t) => t.outputSchema !== undefined).length;
    const ok = result.code === 0 && findings === 0 && tools.length > 0;
    if (!ok) failed++;
    process.stdout.write(
      `${ok ? "ok  " : "FAIL"} ${url}: ${tools.length} tools, ${withOutput} with output schemas, ${findings} findings (exit ${result.code})\n`,
    );
    if (result.err.trim()) process.stdout.write(`${result.err.trim()}\n`);
  }
} catch (error) {
  failed++;
  process.stderr.write(`inspector:strict: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  dev.kill("SIGTERM");
  await dev.exited;
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
