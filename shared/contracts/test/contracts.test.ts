import { describe, expect, test } from "bun:test";
import { z } from "zod";
import {
  getToolContract,
  org_invite,
  TOOL_CONTRACTS,
  TOOL_NAMES,
  tool_ai,
  tool_logs,
  type ServiceName,
} from "../src/tools/index.ts";

interface Expected {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
  service: ServiceName;
}

const R = { readOnlyHint: true, destructiveHint: false, idempotentHint: true } as const;
const C = { readOnlyHint: false, destructiveHint: false } as const;
const D = { readOnlyHint: false, destructiveHint: true } as const;

// Written out by hand from the interface spec, in its order; the registry must match it exactly.
const EXPECTED: ReadonlyArray<[string, Expected]> = [
  ["publish", { ...C, idempotentHint: false, openWorldHint: true, service: "apps" }],
  ["service_docs", { ...R, openWorldHint: false, service: "apps" }],
  ["list_tools", { ...R, openWorldHint: false, service: "apps" }],
  ["whoami", { ...R, openWorldHint: false, service: "orgs" }],
  ["share", { ...C, idempotentHint: true, openWorldHint: true, service: "apps" }],
  ["rollback", { ...C, idempotentHint: true, openWorldHint: false, service: "apps" }],
  ["delete_tool", { ...D, idempotentHint: true, openWorldHint: false, service: "apps" }],
  ["tool_data", { ...R, openWorldHint: false, service: "apps" }],
  ["tool_logs", { ...R, openWorldHint: false, service: "apps" }],
  ["tool_stats", { ...R, openWorldHint: false, service: "apps" }],
  ["tool_secret", { ...D, idempotentHint: false, openWorldHint: false, service: "apps" }],
  ["ai_key", { ...D, idempotentHint: false, openWorldHint: false, service: "apps" }],
  ["tool_ai", { ...C, idempotentHint: true, openWorldHint: false, service: "apps" }],
  ["company_domain", { ...R, openWorldHint: false, service: "domains" }],
  ["company_domain_set", { ...D, idempotentHint: false, openWorldHint: true, service: "domains" }],
  ["custom_domains", { ...R, openWorldHint: false, service: "domains" }],
  ["custom_domain", { ...D, idempotentHint: false, openWorldHint: true, service: "domains" }],
  ["find_domain", { ...R, openWorldHint: true, service: "domains" }],
  ["buy_domain", { ...C, idempotentHint: false, openWorldHint: true, service: "domains" }],
  ["domain_status", { ...R, openWorldHint: false, service: "domains" }],
  ["billing", { ...R, openWorldHint: true, service: "billing" }],
  ["org", { ...R, openWorldHint: false, service: "orgs" }],
  ["org_setup", { ...C, idempotentHint: false, openWorldHint: false, service: "orgs" }],
  ["org_invite", { ...D, idempotentHint: false, openWorldHint: true, service: "orgs" }],
  ["org_members", { ...R, openWorldHint: false, service: "orgs" }],
  ["org_member_update", { ...D, idempotentHint: false, openWorldHint: false, service: "orgs" }],
  ["org_apps", { ...R, openWorldHint: false, service: "apps" }],
  ["org_app_pause", { ...C, idempotentHint: true, openWorldHint: false, service: "apps" }],
  ["org_activity", { ...R, openWorldHint: false, service: "orgs" }],
];

const FORBIDDEN_INPUT_FIELD = /secret.?value|api.?key|card|password|token/i;

/** Every property name of a JSON schema, at any depth (objects, arrays, unions). */
function propertyNames(schema: unknown): string[] {
  if (schema === null || typeof schema !== "object") return [];
  const names: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === "properties" && value !== null && typeof value === "object") {
      for (const [name, child] of Object.entries(value)) names.push(name, ...propertyNames(child));
    } else {
      names.push(...propertyNames(value));
    }
  }
  return names;
}

function issueMessages(result: { success: boolean; error?: z.ZodError }): string[] {
  return result.error?.issues.map((issue) => issue.message) ?? [];
}

describe("tool contract registry", () => {
  test("has exactly the spec's 29 tools, in the spec's order", () => {
    const names = EXPECTED.map(([name]) => name);
    expect(names).toHaveLength(29);
    expect(TOOL_CONTRACTS.map((c) => c.name)).toEqual(names);
    expect<readonly string[]>(TOOL_NAMES).toEqual(names);
    for (const name of names) expect(getToolContract(name)?.name).toBe(name);
    expect(getToolContract("nope")).toBeUndefined();
  });

  test.each(EXPECTED)("%s has the expected annotations and service", (name, expected) => {
    const contract = getToolContract(name);
    expect(contract).toBeDefined();
    if (!contract) return;
    const { service, ...annotations } = expected;
    expect(contract.annotations).toEqual(annotations);
    expect(contract.service).toBe(service);
  });

  test.each(TOOL_CONTRACTS.map((c) => [c.name, c] as const))("%s converts to JSON Schema objects", (_, c) => {
    expect(c.input).toBeInstanceOf(z.ZodObject);
    expect(c.output).toBeInstanceOf(z.ZodObject);
    expect(z.toJSONSchema(c.input, { io: "input" }).type).toBe("object");
    expect(z.toJSONSchema(c.input).type).toBe("object");
    expect(z.toJSONSchema(c.output).type).toBe("object");
  });

  test("every tool has a title and a description of at least 80 characters", () => {
    for (const c of TOOL_CONTRACTS) {
      expect(c.title.length, c.name).toBeGreaterThan(0);
      expect(c.description.length, c.name).toBeGreaterThanOrEqual(80);
    }
  });

  test("only find_domain and buy_domain are hidden, and only for chatgpt", () => {
    const hidden = TOOL_CONTRACTS.filter((c) => c.hiddenFor.length > 0);
    expect(hidden.map((c) => c.name)).toEqual(["find_domain", "buy_domain"]);
    for (const c of hidden) expect([...c.hiddenFor]).toEqual(["chatgpt"]);
  });

  test("publish and buy_domain get a longer timeout than the default", () => {
    const fallback = getToolContract("whoami")?.timeoutMs ?? 0;
    expect(getToolContract("publish")?.timeoutMs).toBeGreaterThan(fallback);
    expect(getToolContract("buy_domain")?.timeoutMs).toBeGreaterThan(fallback);
  });

  test("no input carries a secret value, an AI key, a card detail, a password or a token", () => {
    for (const c of TOOL_CONTRACTS) {
      const names = propertyNames(z.toJSONSchema(c.input, { io: "input" }));
      expect(
        names.filter((n) => FORBIDDEN_INPUT_FIELD.test(n)),
        c.name,
      ).toEqual([]);
    }
  });

  test("inputs are strict: unknown fields are refused", () => {
    for (const c of TOOL_CONTRACTS) {
      expect(z.toJSONSchema(c.input, { io: "input" }).additionalProperties, c.name).toBe(false);
    }
  });
});

describe("limits from the spec", () => {
  const emails = (n: number) => Array.from({ length: n }, (_, i) => `person${i}@example.com`);

  test("org_invite takes 50 people and refuses 51 with a clear message", () => {
    expect(org_invite.input.safeParse({ emails: emails(50) }).success).toBe(true);
    const refused = org_invite.input.safeParse({ emails: emails(51) });
    expect(refused.success).toBe(false);
    expect(issueMessages(refused).join(" ")).toMatch(/at most 50/i);
  });

  test("tool_logs returns at most 100 lines", () => {
    expect(tool_logs.input.parse({ address: "my-app" }).limit).toBe(100);
    expect(tool_logs.input.safeParse({ address: "my-app", limit: 100 }).success).toBe(true);
    expect(tool_logs.input.safeParse({ address: "my-app", limit: 101 }).success).toBe(false);
  });

  test("tool_ai takes only company, mine, tool or none", () => {
    for (const value of ["company", "mine", "tool", "none"]) {
      expect(tool_ai.input.safeParse({ address: "my-app", value }).success, value).toBe(true);
    }
    expect(tool_ai.input.safeParse({ address: "my-app", value: "openai" }).success).toBe(false);
  });
});
