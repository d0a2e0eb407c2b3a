// `bun run inspector:strict`: the MCP Inspector CLI's strict schema check (`--method tools/list --strict`) against
// `bun run dev`, with a bearer token, for the full tool list, the read-only one and one narrowed to two groups. The
// Inspector is fetched by bunx on first use. Prints what it reports; exits 1 on any warning or error, since strict
// clients refuse or degrade a tool for either (test/pages-schemas.e2e.test.ts checks the same rules without it).
import { run, startDevWithUser } from "./dev-harness.ts";

const INSPECTOR = "@modelcontextprotocol/inspector@2.12.0";
const QUERIES = ["", "?read_only=true", "?features=apps,data"];

let failed = 0;
let dev: Awaited<ReturnType<typeof startDevWithUser>> | undefined;

try {
  dev = await startDevWithUser({ email: "inspector@example.com" });
  const token = dev.token;
  for (const query of QUERIES) {
    const url = `${dev.baseUrl}/mcp${query}`;
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
  await dev?.stop();
}
process.exit(failed ? 1 : 0);
