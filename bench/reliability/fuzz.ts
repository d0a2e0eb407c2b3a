// The fuzz run: malformed JSON-RPC straight at /mcp, and tool arguments generated from each tool's own input schema
// (as tools/list gives it): valid values, boundaries (at and past each limit), wrong types, unknown keys, missing
// required keys. Goals: no crash (the gateway keeps answering), no 5xx, no `internal` error, and every refusal names
// what to fix (heuristic: the text mentions the offending field, or says what is expected).
import { codeOf, hasInternals, type Caller } from "./mcp.ts";

export interface FuzzReport {
  tools: number;
  cases: number;
  crashes: number;
  http5xx: number;
  internal: number;
  /** Bad tool arguments answered with JSON-RPC -32603 (internal error) instead of -32602 (invalid params). */
  rpcInternalCode: number;
  /** Refusals whose text names neither the field nor what is expected: `tool case: text`. */
  unclear: string[];
  /** 5xx answers and internal errors: what was sent and what came back. */
  failures: string[];
  /** Answers that are not failures but not right either (one example per kind). */
  findings: string[];
}

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
  anyOf?: JsonSchema[];
  additionalProperties?: boolean | JsonSchema;
};

export interface FuzzOptions {
  mcpUrl: string;
  token: string;
  /** The fuzz user's caller; it confirms nothing (no form support), so a valid delete only asks. */
  caller: Caller;
  /** The fuzz user's own app, for fields that take an address. */
  address: string;
  email: string;
  /** True while the gateway process runs. */
  alive(): boolean;
}

/** A valid value for a field, by its name where a pattern is involved, else from its schema. */
export function validValue(name: string, schema: JsonSchema, options: Pick<FuzzOptions, "address" | "email">): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  if (schema.anyOf?.length)
    return validValue(name, schema.anyOf.find((s) => s.type !== "null") ?? schema.anyOf[0]!, options);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const byName: Record<string, unknown> = {
    address: options.address,
    app: options.address,
    email: options.email,
    person: options.email,
    appsRecipient: options.email,
    invitationId: "inv_fuzz0000",
    hostname: "fuzz-example.com",
    domain: "fuzz-example.com",
    sha256: "0".repeat(64),
    path: "index.html",
    name: "FUZZ_KEY",
    from: "2025-01-01",
    to: "2025-01-02",
    action: schema.enum?.[0] ?? "app.published",
  };
  if (type === "string") {
    if (name in byName && typeof byName[name] === "string") return byName[name];
    if (schema.format === "email") return options.email;
    if (schema.format === "date") return "2025-01-01";
    return "fuzz".padEnd(schema.minLength ?? 0, "z");
  }
  if (type === "integer" || type === "number")
    return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
  if (type === "boolean") return false;
  if (type === "array") {
    const item = schema.items
      ? validValue(name === "emails" || name === "add" || name === "remove" ? "email" : name, schema.items, options)
      : "x";
    return Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () => item);
  }
  if (type === "object") return validObject(schema, options);
  return "fuzz";
}

function validObject(schema: JsonSchema, options: Pick<FuzzOptions, "address" | "email">): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of schema.required ?? []) out[key] = validValue(key, schema.properties?.[key] ?? {}, options);
  return out;
}

interface Case {
  label: string;
  args: unknown;
  /** The field a refusal should name; null: any outcome but internal/5xx is fine (a valid or boundary-valid value). */
  field: string | null;
}

/** Cases for one tool: valid, then per property boundary and invalid values, unknown key, missing required key. */
function casesFor(schema: JsonSchema, options: FuzzOptions): Case[] {
  const base = validObject(schema, options);
  const cases: Case[] = [{ label: "valid (required only)", args: base, field: null }];
  cases.push({ label: "unknown key", args: { ...base, fuzzUnexpected: 1 }, field: "fuzzUnexpected" });
  cases.push({ label: "arguments not an object", args: "fuzz", field: "" });
  for (const key of schema.required ?? []) {
    const { [key]: _, ...rest } = base;
    cases.push({ label: `${key} missing`, args: rest, field: key });
  }
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    const withValue = (label: string, value: unknown, field: string | null) =>
      cases.push({ label: `${key} ${label}`, args: { ...base, [key]: value }, field });
    const type = Array.isArray(prop.type)
      ? prop.type.find((t) => t !== "null")
      : (prop.type ?? prop.anyOf?.find((s) => s.type !== "null")?.type);
    const valid = validValue(key, prop, options);
    withValue("valid", valid, null);
    if (prop.enum) withValue("not one of the options", "fuzz-not-an-option", key);
    if (type === "string") {
      withValue("a number", 12345, key);
      withValue("null", null, key);
      if (prop.maxLength !== undefined) {
        withValue(`at maxLength ${prop.maxLength}`, "a".repeat(prop.maxLength), null);
        withValue(`past maxLength ${prop.maxLength}`, "a".repeat(prop.maxLength + 1), key);
      }
      if ((prop.minLength ?? 0) > 0) withValue("empty", "", key);
      if (prop.pattern || prop.format) withValue("not matching its pattern", "Fuzz Bad Value !!/..", key);
      withValue("with control characters", "fuzz\u0000\u0007\u202e", null);
    } else if (type === "integer" || type === "number") {
      withValue("a string", "12", key);
      if (type === "integer") withValue("fractional", 1.5, key);
      if (prop.maximum !== undefined) {
        withValue(`at maximum ${prop.maximum}`, prop.maximum, null);
        withValue(`past maximum ${prop.maximum}`, prop.maximum + 1, key);
      }
      if (prop.minimum !== undefined) withValue(`below minimum ${prop.minimum}`, prop.minimum - 1, key);
      withValue("huge", 1e308, key);
    } else if (type === "boolean") {
      withValue("a string", "yes", key);
    } else if (type === "array") {
      withValue("a string", "fuzz", key);
      withValue("items of the wrong type", [{ nested: true }], key);
      if (prop.maxItems !== undefined && prop.maxItems <= 200) {
        withValue(
          `past maxItems ${prop.maxItems}`,
          Array.from({ length: prop.maxItems + 1 }, (_, i) => {
            const first: unknown = Array.isArray(valid) ? valid[0] : valid;
            return typeof first === "string" && first.includes("@") ? `f${i}@reliability.test` : first;
          }),
          key,
        );
      }
      if ((prop.minItems ?? 0) > 0) withValue("empty", [], key);
    } else if (type === "object") {
      withValue("a string", "fuzz", key);
    }
  }
  return cases;
}

/** Whether a refusal names what to fix: the field (or its last path part), or says what is expected. */
function namesTheFix(text: string, field: string): boolean {
  if (field && text.toLowerCase().includes(field.toLowerCase())) return true;
  return /expected|must be|should be|one of|at most|at least/i.test(text);
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = {
    tools: 0,
    cases: 0,
    crashes: 0,
    http5xx: 0,
    internal: 0,
    rpcInternalCode: 0,
    unclear: [],
    failures: [],
    findings: [],
  };
  await rawRpcCases(options, report);

  const tools = await listTools(options);
  report.tools = tools.length;
  for (const tool of tools) {
    for (const c of casesFor(tool.inputSchema, options)) {
      report.cases++;
      const outcome = await options.caller.call(tool.name, c.args as Record<string, unknown>);
      const what = `${tool.name} ${c.label}`;
      if (outcome.kind === "hung" || outcome.kind === "transport") {
        const text = outcome.kind === "transport" ? outcome.text : "no answer within its timeout";
        if (/\b5\d\d\b/.test(text)) report.http5xx++;
        else report.crashes++;
        report.failures.push(`${what}: ${text.slice(0, 200)}`);
        continue;
      }
      if (outcome.kind === "ok") continue;
      if (outcome.text.startsWith("JSON-RPC -32603")) {
        if (report.rpcInternalCode++ === 0)
          report.findings.push(
            `${what} is answered with JSON-RPC -32603 (internal error), not -32602 (invalid params): ${outcome.text.replace(/\s+/g, " ").slice(0, 200)}`,
          );
      } else if (codeOf(outcome.text) === "internal" || hasInternals(outcome.text)) {
        report.internal++;
        report.failures.push(`${what}: ${outcome.text.slice(0, 200)}`);
        continue;
      }
      if (c.field !== null && !namesTheFix(outcome.text, c.field))
        report.unclear.push(`${what}: ${outcome.text.slice(0, 200)}`);
    }
    if (!options.alive()) {
      report.crashes++;
      report.failures.push(`the gateway process exited during the ${tool.name} cases`);
      break;
    }
  }
  return report;
}

/** The tools' own schemas, as a client sees them (tools/list). */
export async function listTools(
  options: Pick<FuzzOptions, "mcpUrl" | "token">,
): Promise<{ name: string; inputSchema: JsonSchema }[]> {
  const listed = await rawRequest(options, await session(options), { jsonrpc: "2.0", id: 1, method: "tools/list" });
  return (listed.body as { result?: { tools?: { name: string; inputSchema: JsonSchema }[] } })?.result?.tools ?? [];
}

interface RawAnswer {
  status: number;
  body: unknown;
  text: string;
}

async function rawRequest(
  options: Pick<FuzzOptions, "mcpUrl" | "token">,
  sessionId: string | null,
  body: unknown,
  init: { raw?: string; headers?: Record<string, string> } = {},
): Promise<RawAnswer> {
  const response = await fetch(options.mcpUrl, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${options.token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2025-06-18",
      ...(sessionId ? { "mcp-session-id": sessionId } : {}),
      ...init.headers,
    },
    body: init.raw ?? JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  // A stream answer: the JSON-RPC message is the data of its last event.
  const data = text
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trim())
    .filter(Boolean)
    .at(-1);
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(data ?? text);
  } catch {}
  return { status: response.status, body: parsed, text };
}

async function session(options: Pick<FuzzOptions, "mcpUrl" | "token">): Promise<string> {
  const response = await fetch(options.mcpUrl, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${options.token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "fuzz", version: "1" } },
    }),
  });
  await response.text();
  const id = response.headers.get("mcp-session-id");
  if (!id) throw new Error(`initialize gave no session (HTTP ${response.status})`);
  await fetch(options.mcpUrl, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${options.token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "mcp-session-id": id,
      "MCP-Protocol-Version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  }).then((r) => r.text());
  return id;
}

/** Malformed envelopes: each must get a 4xx (or a JSON-RPC error) with a message, never a 5xx or a dead gateway. */
async function rawRpcCases(options: FuzzOptions, report: FuzzReport): Promise<void> {
  const sid = await session(options);
  const deep = `${"[".repeat(5_000)}${"]".repeat(5_000)}`;
  const cases: {
    label: string;
    body?: unknown;
    raw?: string;
    headers?: Record<string, string>;
    session?: string | null;
  }[] = [
    { label: "invalid JSON", raw: '{"jsonrpc": "2.0", "id": 1, "method": ' },
    { label: "empty body", raw: "" },
    { label: "empty batch", raw: "[]" },
    { label: "JSON null", raw: "null" },
    { label: "a number", raw: "42" },
    { label: "deeply nested arrays", raw: deep },
    { label: "jsonrpc 1.0", body: { jsonrpc: "1.0", id: 1, method: "tools/list" } },
    { label: "no method", body: { jsonrpc: "2.0", id: 1 } },
    { label: "unknown method", body: { jsonrpc: "2.0", id: 1, method: "fuzz/unknown" } },
    { label: "method not a string", body: { jsonrpc: "2.0", id: 1, method: 7 } },
    { label: "id an object", body: { jsonrpc: "2.0", id: { a: 1 }, method: "tools/list" } },
    { label: "params a string", body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: "fuzz" } },
    { label: "tools/call without a name", body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: {} } },
    {
      label: "tools/call unknown tool",
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "fuzz_tool", arguments: {} } },
    },
    {
      label: "tools/call arguments an array",
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: [1, 2] } },
    },
    {
      label: "tools/call name 100 kB",
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x".repeat(100_000), arguments: {} } },
    },
    {
      label: "batch of mixed messages",
      body: [{ jsonrpc: "2.0", id: 1, method: "tools/list" }, { jsonrpc: "2.0", id: 2, method: "fuzz" }, 5],
    },
    { label: "no session", body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, session: null },
    { label: "unknown session", body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, session: "fuzz-session-0000" },
    {
      label: "text/plain body",
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
      headers: { "Content-Type": "text/plain" },
    },
    { label: "no Accept", body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, headers: { Accept: "" } },
    {
      label: "unknown protocol version",
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
      headers: { "MCP-Protocol-Version": "1999-01-01" },
    },
    {
      label: "initialize again",
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "fuzz", capabilities: "x", clientInfo: 1 },
      },
    },
    {
      label: "a bad bearer token",
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
      headers: { Authorization: "Bearer fuzz.fuzz.fuzz" },
    },
  ];
  for (const c of cases) {
    report.cases++;
    const what = `JSON-RPC ${c.label}`;
    try {
      const answer = await rawRequest(options, c.session === undefined ? sid : c.session, c.body, {
        raw: c.raw,
        headers: c.headers,
      });
      if (answer.status >= 500) {
        report.http5xx++;
        report.failures.push(`${what}: HTTP ${answer.status} ${answer.text.slice(0, 200)}`);
        continue;
      }
      const error = (answer.body as { error?: { message?: string } } | null)?.error;
      const message = error?.message ?? (answer.status >= 400 ? answer.text : "");
      if (answer.status >= 400 || error) {
        if (!message.trim()) report.unclear.push(`${what}: HTTP ${answer.status} with no message`);
        else if (hasInternals(message)) report.internal++, report.failures.push(`${what}: ${message.slice(0, 200)}`);
      }
    } catch (error) {
      report.crashes++;
      report.failures.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
