// `bun run conformance`: the official MCP conformance suite's server scenarios against `bun run dev`, with a bearer
// token. The runner cannot send an Authorization header, so a loopback proxy in front of /mcp adds it, keeping the
// Host and Origin the runner sends (the DNS-rebinding scenario checks that Hatch refuses a foreign Host). Prints a
// table of scenario → result, and the scenarios that do not apply with why. Exits 1 when an applicable one fails.
import { type DevUnderTest, freePort, run as runCommand, startDevWithUser } from "./dev-harness.ts";

/** The server scenarios that test what Hatch offers (tools over streamable HTTP with resumable SSE). */
const APPLICABLE = [
  "server-initialize",
  "ping",
  "tools-list",
  "server-sse-polling",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

/** The rest of the suite, and why each does not apply to Hatch. */
const NOT_APPLICABLE: Record<string, string> = {
  "logging-set-level": "Hatch offers no logging capability (its logs are the operator's, and tool_logs reads an app's)",
  "completion-complete": "Hatch offers no completions",
  "tools-call-simple-text":
    "calls the suite's own fixture tools (test_simple_text …), which a real server does not have",
  "tools-call-image": "fixture tool; Hatch's tools answer text and structured content",
  "tools-call-audio": "fixture tool; Hatch has no audio",
  "tools-call-embedded-resource": "fixture tool; Hatch offers no resources",
  "tools-call-mixed-content": "fixture tool",
  "tools-call-with-logging": "fixture tool, and no logging capability",
  "tools-call-error": "fixture tool (Hatch's own error results are covered by its tests)",
  "tools-call-with-progress": "fixture tool",
  "tools-call-sampling": "fixture tool; Hatch never asks the client's model (sampling)",
  "tools-call-elicitation": "fixture tool (Hatch's elicitation is covered by test/interaction.e2e.test.ts)",
  "json-schema-2020-12": "needs a fixture tool with the suite's own schema",
  "elicitation-sep1034-defaults": "fixture tool",
  "elicitation-sep1330-enums": "fixture tool",
  "resources-list": "Hatch offers no resources",
  "resources-read-text": "no resources",
  "resources-read-binary": "no resources",
  "resources-templates-read": "no resources",
  "resources-subscribe": "no resources",
  "resources-unsubscribe": "no resources",
  "prompts-list": "Hatch offers no prompts",
  "prompts-get-simple": "no prompts",
  "prompts-get-with-args": "no prompts",
  "prompts-get-embedded-resource": "no prompts",
  "prompts-get-with-image": "no prompts",
};

const RUNNER = new URL("../node_modules/@modelcontextprotocol/conformance/dist/index.js", import.meta.url).pathname;

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const result = await runCommand(["bun", ...args], {});
  return { code: result.code, out: result.out + result.err };
}

const proxyPort = freePort();
const base = `http://localhost:${proxyPort}`;
let dev: DevUnderTest | undefined;
let proxy: ReturnType<typeof Bun.serve> | undefined;
let failed = 0;

try {
  // The gateway believes its address is the proxy's, so the Host the runner sends through the proxy is its own.
  dev = await startDevWithUser({
    email: "conformance@example.com",
    baseUrl: () => base,
    env: { TOOL_CALLS_PER_MINUTE_PER_GRANT: "100000", TOOL_CALLS_PER_MINUTE_PER_USER: "100000" },
  });
  const { token, port: gatewayPort } = dev;

  proxy = Bun.serve({
    port: proxyPort,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const headers = new Headers(request.headers);
      headers.set("authorization", `Bearer ${token}`);
      // The Host the runner sent goes on unchanged (fetch would otherwise put the gateway's own).
      const target = `http://127.0.0.1:${gatewayPort}${url.pathname}${url.search}`;
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
      const answer = await fetch(target, {
        method: request.method,
        headers,
        body,
        redirect: "manual",
        decompress: false,
      });
      return new Response(answer.body, { status: answer.status, headers: answer.headers });
    },
  });

  const rows: string[] = [];
  for (const scenario of APPLICABLE) {
    const result = await run([RUNNER, "server", "--url", `${base}/mcp`, "--scenario", scenario]);
    const warnings = (result.out.match(/WARNING/g) ?? []).length;
    const outcome = result.code === 0 ? (warnings ? `passed with ${warnings} warning(s)` : "passed") : "FAILED";
    if (result.code !== 0 || warnings) {
      failed += result.code !== 0 ? 1 : 0;
      process.stdout.write(`--- ${scenario}\n${result.out.trim()}\n`);
    }
    rows.push(`| ${scenario} | ${outcome} |`);
  }
  process.stdout.write(`\n| scenario | result |\n| --- | --- |\n${rows.join("\n")}\n`);
  process.stdout.write(
    `\nNot applicable to Hatch:\n${Object.entries(NOT_APPLICABLE)
      .map(([name, why]) => `- ${name}: ${why}`)
      .join("\n")}\n`,
  );
  process.stdout.write(`\nconformance: ${APPLICABLE.length - failed} passed, ${failed} failed\n`);
} catch (error) {
  failed++;
  process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  proxy?.stop(true);
  await dev?.stop();
}
process.exit(failed ? 1 : 0);
