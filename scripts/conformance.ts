// `bun run conformance`: the official MCP conformance suite against `bun run dev`, for both protocol eras Hatch serves
// and for its authorization server.
//
// - `server --requirements 2026-07-28` and `server --requirements 2025-11-25`: every server scenario the suite runs
//   for that revision, at that revision's wire, with its wire schema checks. The runner cannot send an Authorization
//   header, so a loopback proxy in front of /mcp adds the harness user's token, keeping the Host and Origin the runner
//   sends (the DNS-rebinding scenario checks that Hatch refuses a foreign Host).
// - `authorization`: the authorization server's metadata and a whole authorization code grant. The script registers a
//   client (dynamic registration, application_type native) for the runner's callback, and a person's browser (real
//   HTTP, cookies) signs in and approves when the runner prints the authorization URL.
//
// What "applies": a scenario applies when it exercises something Hatch offers (tools over streamable HTTP in both eras,
// its own tool list, sessions, resumable SSE, caching hints, input_required on its own terms, the DNS-rebinding
// check, the headers of 2026-07-28, and the tasks extension once Hatch declares it). A scenario does not apply when it
// needs a feature Hatch does not offer (resources, prompts, completions, logging) or calls the suite's own fixture
// tools (test_simple_text, test_input_required_result_*, …), which no production server has; a few checks inside an
// applicable scenario are set aside for the same reasons, each named below. A scenario that does not apply still
// fails the run when a message Hatch sent in it breaks the spec's wire schema. Everything else must pass: the script
// prints a table per revision and exits 1 when an applicable scenario or check fails.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { type DevUnderTest, freePort, run as runCommand, startDevWithUser } from "./dev-harness.ts";

const REVISIONS = ["2026-07-28", "2025-11-25"] as const;
const EMAIL = "conformance@example.com";

const FIXTURE = "calls the suite's own fixture tool";
const MRTR_FIXTURE = `${FIXTURE} test_input_required_result_* (Hatch's own questions: test/mcp-2026.e2e.test.ts)`;

/** Scenarios that do not apply to Hatch, and why (a scenario not listed here applies). */
const NOT_APPLICABLE: Record<string, string> = {
  "logging-set-level": "Hatch offers no logging capability (its logs are the operator's; tool_logs reads an app's)",
  "completion-complete": "Hatch offers no completions",
  "tools-call-simple-text": `${FIXTURE} test_simple_text`,
  "tools-call-image": `${FIXTURE} test_image_content; Hatch's tools answer text and structured content`,
  "tools-call-audio": `${FIXTURE} test_audio_content; Hatch has no audio`,
  "tools-call-embedded-resource": `${FIXTURE} test_embedded_resource; Hatch offers no resources`,
  "tools-call-mixed-content": `${FIXTURE} test_multiple_content_types`,
  "tools-call-with-logging": `${FIXTURE} test_tool_with_logging, and Hatch offers no logging capability`,
  "tools-call-error": `${FIXTURE} test_error_handling (Hatch's own error results are covered by its tests)`,
  "tools-call-with-progress": `${FIXTURE} test_tool_with_progress`,
  "tools-call-sampling": `${FIXTURE} test_sampling; Hatch never asks the client's model`,
  "tools-call-elicitation": `${FIXTURE} test_elicitation (Hatch's forms: test/interaction.e2e.test.ts)`,
  "elicitation-sep1034-defaults": `${FIXTURE} test_elicitation_sep1034_defaults`,
  "elicitation-sep1330-enums": `${FIXTURE} test_elicitation_sep1330_enums`,
  "json-schema-2020-12": `${FIXTURE} json_schema_2020_12_tool`,
  "http-custom-header-server-validation":
    "no Hatch tool declares x-mcp-header parameters, so there is nothing to check",
  "resources-list": "Hatch offers no resources",
  "resources-read-text": "Hatch offers no resources",
  "resources-read-binary": "Hatch offers no resources",
  "resources-templates-read": "Hatch offers no resources",
  "resources-subscribe": "Hatch offers no resources",
  "resources-unsubscribe": "Hatch offers no resources",
  "sep-2164-resource-not-found": "Hatch offers no resources (resources/read is -32601, method not found)",
  "prompts-list": "Hatch offers no prompts",
  "prompts-get-simple": "Hatch offers no prompts",
  "prompts-get-with-args": "Hatch offers no prompts",
  "prompts-get-embedded-resource": "Hatch offers no prompts",
  "prompts-get-with-image": "Hatch offers no prompts",
  "input-required-result-basic-elicitation": MRTR_FIXTURE,
  "input-required-result-basic-sampling": MRTR_FIXTURE,
  "input-required-result-basic-list-roots": MRTR_FIXTURE,
  "input-required-result-request-state": MRTR_FIXTURE,
  "input-required-result-multiple-input-requests": MRTR_FIXTURE,
  "input-required-result-multi-round": MRTR_FIXTURE,
  "input-required-result-missing-input-response": MRTR_FIXTURE,
  "input-required-result-non-tool-request":
    "asks input_required of a prompt or resource request, and Hatch offers neither",
  "input-required-result-result-type": MRTR_FIXTURE,
  "input-required-result-tampered-state": MRTR_FIXTURE,
  "input-required-result-capability-check": MRTR_FIXTURE,
  "input-required-result-ignore-extra-params": `${MRTR_FIXTURE} (it passes only because that tool is unknown)`,
  "input-required-result-validate-input": `${MRTR_FIXTURE} (it passes only because that tool is unknown)`,
};

/** Checks set aside inside a scenario that applies: `scenario/check id` → why. */
const CHECKS_NOT_APPLICABLE: Record<string, string> = {
  "server-stateless/sep-2575-server-rejects-undeclared-capability": `${FIXTURE} test_missing_capability`,
  "server-stateless/sep-2575-missing-capability-http-400": `${FIXTURE} test_missing_capability`,
  "server-stateless/sep-2575-http-server-no-independent-requests-on-stream": `${FIXTURE} test_streaming_elicitation`,
  "server-stateless/sep-2575-server-no-log-without-loglevel": `${FIXTURE} test_logging_tool; Hatch sends no logs`,
  "caching/sep-2549-prompts-list-caching-hints": "Hatch offers no prompts",
  "caching/sep-2549-resources-list-caching-hints": "Hatch offers no resources",
  "caching/sep-2549-resources-templates-list-caching-hints": "Hatch offers no resources",
  "server-sse-polling/server-sse-disconnect-resume": `${FIXTURE} test_reconnection, which answers only after the client dropped the stream (Hatch's resumable streams: test/mcp-resume.e2e.test.ts)`,
};

const TASKS_NOT_OFFERED = "Hatch does not declare the io.modelcontextprotocol/tasks extension";
/**
 * The tasks scenarios drive the suite's own fixture tools (greet, slow_compute, failing_job, …); Hatch's tasks are
 * buy_domain and custom_domain followed to live (test/mcp-tasks.e2e.test.ts). A tasks check that failed on such a
 * tool, or could not run because its fixture made no task, is set aside; the checks that need no fixture are judged.
 */
const TASK_FIXTURE =
  /Unknown tool "(greet|slow_compute|failing_job|protocol_error_job|confirm_delete|multi_input|test_tool_with_task)"|for (failing_job|slow_compute|greet) returned|no task was created by the preceding step|fixture from Check \d+ unavailable/;
const TASK_FIXTURE_WHY = `${FIXTURE}s (greet, slow_compute, failing_job, …): Hatch's tasks are buy_domain and custom_domain (test/mcp-tasks.e2e.test.ts)`;

interface Check {
  id: string;
  status: string;
  errorMessage?: string | null;
  description?: string;
}

interface Row {
  scenario: string;
  result: string;
  failed: boolean;
}

const RUNNER = new URL("../node_modules/@modelcontextprotocol/conformance/dist/index.js", import.meta.url).pathname;

async function runner(args: string[]): Promise<{ code: number; out: string }> {
  const result = await runCommand(["bun", RUNNER, ...args], {});
  return { code: result.code, out: result.out + result.err };
}

/** Every scenario's checks in a results directory (`server-<scenario>-<timestamp>/checks.json`). */
function resultsIn(dir: string): Map<string, Check[]> {
  const out = new Map<string, Check[]>();
  for (const entry of readdirSync(dir)) {
    const name = entry.replace(/^(authorization-server|server)-/, "").replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
    out.set(name, JSON.parse(readFileSync(join(dir, entry, "checks.json"), "utf8")) as Check[]);
  }
  return out;
}

/** The server scenarios a revision requires, and those it runs without scoring (name → reason). */
async function requirementSet(revision: string): Promise<{ required: string[]; unscored: Map<string, string> }> {
  const listed = await runner(["list", "--requirements", revision]);
  if (listed.code !== 0) throw new Error(`conformance list failed: ${listed.out}`);
  const required: string[] = [];
  const unscored = new Map<string, string>();
  let section = "";
  let reason = "";
  for (const line of listed.out.split("\n")) {
    if (line.startsWith("Server scenarios")) section = "server";
    else if (line.startsWith("Client scenarios")) section = "client";
    else if (line.startsWith("Run and reported")) section = "unscored";
    const group = /^ {2}([a-z-]+) \(\d+\):$/.exec(line);
    if (group) reason = group[1]!;
    const item = /^\s+- (\S+)(?: \[(\w+)\])?$/.exec(line);
    if (!item) continue;
    if (section === "server") required.push(item[1]!);
    if (section === "unscored" && item[2] === "server") unscored.set(item[1]!, reason);
  }
  return { required, unscored };
}

function judge(scenario: string, checks: Check[], tasksOffered: boolean): { result: string; failed: boolean } {
  const why =
    NOT_APPLICABLE[scenario] ?? (scenario.startsWith("tasks-") && !tasksOffered ? TASKS_NOT_OFFERED : undefined);
  const wire = checks.find((c) => c.id === "wire-schema-valid");
  if (why) {
    // What Hatch sent must fit the schema even where the scenario's point does not apply.
    if (wire?.status === "FAILURE") return { result: `FAILED: wire schema (${wire.errorMessage ?? ""})`, failed: true };
    return { result: `not applicable: ${why}${wire ? " (what Hatch sent fits the wire schema)" : ""}`, failed: false };
  }
  const counted = checks.filter((c) => c.status === "SUCCESS" || c.status === "FAILURE" || c.status === "WARNING");
  const fixtureTask = (c: Check) =>
    scenario.startsWith("tasks-") && c.status === "FAILURE" && TASK_FIXTURE.test(c.errorMessage ?? "");
  const setAside = counted.filter((c) => CHECKS_NOT_APPLICABLE[`${scenario}/${c.id}`] || fixtureTask(c));
  const judged = counted.filter((c) => !setAside.includes(c));
  if (judged.length === 0 && scenario.startsWith("tasks-"))
    return { result: `not applicable: ${TASK_FIXTURE_WHY}`, failed: false };
  const failures = judged.filter((c) => c.status === "FAILURE");
  const warnings = judged.filter((c) => c.status === "WARNING");
  const passed = judged.length - failures.length - warnings.length;
  const aside = setAside.length ? `; ${setAside.length} set aside: ${setAside.map((c) => c.id).join(", ")}` : "";
  if (failures.length)
    return {
      result: `FAILED ${failures.length} of ${judged.length}: ${failures.map((c) => `${c.id} (${(c.errorMessage ?? c.description ?? "").slice(0, 200)})`).join("; ")}${aside}`,
      failed: true,
    };
  if (judged.length === 0) return { result: `FAILED: no check ran${aside}`, failed: true };
  const warned = warnings.length ? `, ${warnings.length} warning(s): ${warnings.map((c) => c.id).join(", ")}` : "";
  return {
    result: `passed (${passed} check${passed === 1 ? "" : "s"}${wire ? " incl. wire schema" : ""}${warned}${aside})`,
    failed: false,
  };
}

/** Whether Hatch declares the tasks extension to a 2026-07-28 client (then the tasks scenarios apply). */
async function declaresTasks(base: string): Promise<boolean> {
  const response = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-method": "server/discover",
      "mcp-protocol-version": "2026-07-28",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "server/discover",
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "conformance-probe", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    }),
  });
  return (await response.text()).includes("io.modelcontextprotocol/tasks");
}

async function serverRun(base: string, revision: string, tasksOffered: boolean): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), `hatch-conformance-${revision}-`));
  try {
    const { required, unscored } = await requirementSet(revision);
    const ran = await runner(["server", "--url", `${base}/mcp`, "--requirements", revision, "-o", dir]);
    const results = resultsIn(dir);
    const rows: Row[] = [];
    for (const scenario of [...required, ...unscored.keys()]) {
      const checks = results.get(scenario);
      const label = unscored.has(scenario) ? `${scenario} (not scored: ${unscored.get(scenario)})` : scenario;
      if (!checks) {
        rows.push({ scenario: label, result: "FAILED: no results (the runner did not run it)", failed: true });
        continue;
      }
      rows.push({ scenario: label, ...judge(scenario, checks, tasksOffered) });
    }
    if (rows.some((r) => r.failed)) process.stdout.write(`--- runner output (${revision})\n${ran.out.trim()}\n`);
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A public client for the runner's callback, registered the way a 2026 client does (application_type native). */
async function registerCallbackClient(base: string, port: number): Promise<string> {
  const response = await fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "MCP conformance suite",
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
      application_type: "native",
      token_endpoint_auth_method: "none",
    }),
  });
  if (response.status !== 201) throw new Error(`registration failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { client_id: string }).client_id;
}

/** A person at the authorization URL the runner prints: signs in, approves, and the browser follows the redirect. */
async function approveInBrowser(base: string, authorizeUrl: string): Promise<void> {
  const browser = new Browser((path, init) => fetch(`${base}${path}`, { ...init, redirect: "manual" }));
  const url = new URL(authorizeUrl);
  const path = url.pathname + url.search;
  const signedIn = await browser.signIn(EMAIL, "harness-password-1", path);
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`);
  const approved = await browser.submit(path, "/oauth/authorize", { decision: "write" });
  const location = approved.headers.get("location");
  if (approved.status !== 303 || !location) throw new Error(`consent answered ${approved.status}`);
  await (await fetch(location)).text();
}

async function authorizationRun(base: string): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "hatch-conformance-authorization-"));
  try {
    const port = freePort();
    const clientId = await registerCallbackClient(base, port);
    const child = Bun.spawn(
      [
        "bun",
        RUNNER,
        "authorization",
        "--url",
        base,
        "--client-id",
        clientId,
        "--resource",
        `${base}/mcp`,
        "-p",
        String(port),
        "-o",
        dir,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    let out = "";
    let approving: Promise<void> | undefined;
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      out += decoder.decode(chunk);
      const asked = out.match(new RegExp(`^${base}/oauth/authorize\\?\\S+$`, "m"))?.[0];
      if (asked && !approving) approving = approveInBrowser(base, asked);
    }
    const err = await new Response(child.stderr).text();
    await child.exited;
    await approving;
    const rows: Row[] = [];
    for (const [scenario, checks] of resultsIn(dir)) {
      for (const check of checks) {
        const failed = check.status === "FAILURE";
        const result = failed
          ? `FAILED: ${check.errorMessage ?? ""}`
          : check.status === "WARNING"
            ? `passed with a warning: ${check.errorMessage ?? ""}`
            : check.status === "SUCCESS"
              ? "passed"
              : `${check.status.toLowerCase()}: ${check.errorMessage ?? ""}`;
        rows.push({ scenario: `${scenario} / ${check.id}`, result, failed: failed || check.status === "SKIPPED" });
      }
    }
    if (rows.length === 0) rows.push({ scenario: "authorization", result: "FAILED: no results", failed: true });
    if (rows.some((r) => r.failed)) process.stdout.write(`--- runner output (authorization)\n${out}${err}\n`);
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(title: string, rows: Row[]): string {
  const lines = rows.map((r) => `| ${r.scenario} | ${r.result.replaceAll("|", "\\|")} |`);
  return `\n### ${title}\n\n| scenario | result |\n| --- | --- |\n${lines.join("\n")}\n`;
}

const proxyPort = freePort();
const base = `http://localhost:${proxyPort}`;
let dev: DevUnderTest | undefined;
let proxy: ReturnType<typeof Bun.serve> | undefined;
let failed = 0;

try {
  // The gateway believes its address is the proxy's, so the Host the runner sends through the proxy is its own, and
  // the issuer the authorization scenarios expect is the proxy's address.
  dev = await startDevWithUser({
    email: EMAIL,
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
      // Only /mcp gets the token: the authorization scenarios talk to the OAuth endpoints as a client would.
      if (url.pathname === "/mcp") headers.set("authorization", `Bearer ${token}`);
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

  const tasksOffered = await declaresTasks(base);
  const version = JSON.parse(
    readFileSync(new URL("../node_modules/@modelcontextprotocol/conformance/package.json", import.meta.url), "utf8"),
  ).version as string;
  process.stdout.write(`MCP conformance suite ${version} against bun run dev\n`);
  const sections: [string, Row[]][] = [];
  for (const revision of REVISIONS)
    sections.push([`server, --requirements ${revision}`, await serverRun(base, revision, tasksOffered)]);
  sections.push(["authorization (Hatch's authorization server)", await authorizationRun(base)]);

  for (const [title, rows] of sections) {
    process.stdout.write(table(title, rows));
    failed += rows.filter((r) => r.failed).length;
  }
  const applicable = sections.flatMap(([, rows]) => rows).filter((r) => !r.result.startsWith("not applicable"));
  process.stdout.write(
    `\nconformance: ${applicable.length - failed} passed, ${failed} failed (of those that apply; see "not applicable" rows for why the rest do not)\n`,
  );
} catch (error) {
  failed++;
  process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  proxy?.stop(true);
  await dev?.stop();
}
process.exit(failed ? 1 : 0);
