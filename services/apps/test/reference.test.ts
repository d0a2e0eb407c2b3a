import { describe, expect, test } from "bun:test";
import { formatBytes, PLAN_TABLE } from "@hatch/contracts";
import { EXAMPLE_APP } from "../src/reference/example-app.ts";
import { DATA_ERROR_STATUS, DATA_LIMITS, DATA_RULES } from "../src/spec/data-rules.ts";
import { developerReference } from "../src/reference/reference.ts";
import { SERVER_CODE_EXAMPLE } from "../src/reference/reference-server.ts";
import { SERVER_LIMITS } from "../src/spec/server-code.ts";
import { SERVICE_JSON_KEYS, ServiceJsonSchema } from "../src/spec/service-json.ts";

// The developer reference says what the app host does: the browser library, its rules, limits and error codes come
// from the same constants the app host enforces, and the example app is a folder a publish accepts.

describe("developer reference", () => {
  const library = developerReference("browser_library");

  test("the browser library section documents the library instead of saying it is not available", () => {
    expect(library).not.toContain("Not available yet");
    expect(library).toContain('<script src="/_hatch/client.js"></script>');
    expect(library).toContain('import hatch, { me, signIn, db, files, api } from "/_hatch/client.mjs";');
    expect(library).toContain("/_hatch/client.d.ts");
    expect(developerReference("server_code")).not.toContain("Not available yet");
    expect(developerReference()).toContain(library);
  });

  test("every rule word, error code and limit is printed from the shared constants", () => {
    for (const rule of DATA_RULES) expect(library).toContain(`| \`${rule}\` |`);
    for (const [code, status] of Object.entries(DATA_ERROR_STATUS))
      expect(library).toContain(`| \`${code}\` | ${status} |`);
    expect(library).toContain(`| one document (as JSON) | ${formatBytes(DATA_LIMITS.maxDocumentBytes)} |`);
    expect(library).toContain(
      `| documents per app (all collections) | ${DATA_LIMITS.maxDocumentsPerApp.toLocaleString("en-US")} |`,
    );
    expect(library).toContain(`| data requests per viewer per minute | ${DATA_LIMITS.requestsPerViewerPerMinute} |`);
    expect(library).toContain(`| open subscriptions per viewer | ${DATA_LIMITS.subscriptionsPerViewer} |`);
    expect(library).toContain(
      `default ${formatBytes(DATA_LIMITS.defaultMaxFileSize)}, at most ${formatBytes(DATA_LIMITS.maxFileSize)}`,
    );
    expect(library).toContain("An operation without a rule is `owner`");
    expect(library).toContain("`create` cannot be `creator`");
  });

  test("the server code section prints SERVER_LIMITS, the env members and a handler that compiles", () => {
    const section = developerReference("server_code");
    expect(developerReference()).toContain(section);
    expect(section).toContain(
      `| CPU time per request (waiting for env calls does not count) | ${SERVER_LIMITS.cpuMsPerRequest} ms |`,
    );
    expect(section).toContain(`| memory of the running code | ${formatBytes(SERVER_LIMITS.memoryBytes)} |`);
    expect(section).toContain(`| env calls per request | ${SERVER_LIMITS.hostCallsPerRequest} |`);
    for (const member of ["env.viewer", "env.db(name)", "env.files(name)", "env.api(name, path, init)", "env.ai.chat("])
      expect(section).toContain(member);
    expect(section).toContain(SERVER_CODE_EXAMPLE);
    expect(section).toContain("tool_logs");
    expect(section).toContain("What persists between requests");
    // The example is plain JavaScript without imports (server code is one bundled file).
    expect(SERVER_CODE_EXAMPLE).not.toContain("import ");
    expect(() => new Function(SERVER_CODE_EXAMPLE.replace("export default", "return"))).not.toThrow();
  });

  test("the service.json table lists every key service.json accepts", () => {
    const section = developerReference("service_json");
    for (const key of [...SERVICE_JSON_KEYS, "$schema"]) expect(section).toContain(`| \`${key}\` |`);
  });

  test("the example app is printed in full, and its service.json is one a publish accepts", () => {
    expect(library).toContain(EXAMPLE_APP["index.html"]);
    expect(library).toContain(EXAMPLE_APP["service.json"]);
    const parsed = ServiceJsonSchema.parse(JSON.parse(EXAMPLE_APP["service.json"]));
    expect(Object.keys(parsed.collections ?? {})).toEqual(["todos"]);
    expect(parsed.buckets?.photos?.maxFileSize).toBe(5 * 1024 * 1024);
    const html = EXAMPLE_APP["index.html"];
    expect(html).toContain('<script src="/_hatch/client.js"></script>');
    for (const call of [
      "hatch.me()",
      "hatch.signIn()",
      'hatch.db("todos")',
      'hatch.files("photos")',
      "todos.subscribe(",
      "todos.list(",
      "todos.add(",
      "todos.update(",
      "todos.remove(",
      "photos.upload(",
      "photos.url(",
      "photos.remove(",
    ]) {
      expect(html).toContain(call);
    }
    expect(html).not.toContain("innerHTML");
  });

  test("rendered as HTML (GET /mcp/docs), the example's tags stay text: no script, style or form runs on the docs page", () => {
    const page = Bun.markdown.html(developerReference());
    expect(page).not.toMatch(/<(script|style|form|input|img|button)\b/);
    expect(page).toContain("&lt;script src=");
  });

  test("every rule example in the section is valid service.json", () => {
    const blocks = [...library.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const block of blocks) expect(ServiceJsonSchema.safeParse(JSON.parse(block)).success).toBe(true);
  });
});

describe("plans in the developer reference", () => {
  test("the plans topic prints every plan's limits from the plan table the services enforce", async () => {
    const plans = developerReference("plans");
    expect(developerReference()).toContain(plans);
    for (const info of Object.values(PLAN_TABLE)) {
      const row = plans.split("\n").find((line) => line.startsWith(`| ${info.title} |`));
      expect(row).toBeDefined();
      const cells = row!.split("|").map((cell) => cell.trim());
      expect(cells[3]).toBe(info.limits.apps === null ? "no limit" : info.limits.apps.toLocaleString("en-US"));
      expect(cells[4]).toBe(
        info.limits.customDomains === null ? "no limit" : info.limits.customDomains.toLocaleString("en-US"),
      );
    }
    expect(plans).toContain("needs_payment");
  });
});
