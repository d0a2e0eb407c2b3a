/**
 * The tool-schema portability rules of the MCP Inspector CLI's `--strict` mode (2.12), for tests: a `type` array
 * (`["string", "null"]`), a `$ref` outside the document, a bare `true`/`false` where a schema object belongs, and a
 * schema with no validation keyword at all. Each finding names the tool, the schema and the path, as the Inspector does.
 */

const SUBSCHEMA_MAPS = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];
const SUBSCHEMA_ARRAYS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const SUBSCHEMA_SINGLE = [
  "items",
  "contains",
  "not",
  "propertyNames",
  "if",
  "then",
  "else",
  "additionalProperties",
  "unevaluatedProperties",
  "additionalItems",
  "unevaluatedItems",
  "contentSchema",
];
const BOOLEAN_ALLOWED = new Set([
  "additionalProperties",
  "unevaluatedProperties",
  "additionalItems",
  "unevaluatedItems",
]);
const CONSTRAINING = new Set([
  ...["type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"],
  ...["maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding", "contentSchema"],
  ...["maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"],
  ...["required", "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems", "contains"],
  ...["additionalItems", "unevaluatedItems", "properties", "patternProperties", "additionalProperties"],
  ...["unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies", "$ref", "$dynamicRef"],
  "$recursiveRef",
]);

export interface SchemaFinding {
  tool: string;
  schema: "inputSchema" | "outputSchema";
  path: string;
  rule: "type-union" | "remote-ref" | "boolean-schema" | "untyped-schema";
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function children(node: Record<string, unknown>, path: string): [unknown, string, string][] {
  const out: [unknown, string, string][] = [];
  for (const key of SUBSCHEMA_MAPS) {
    const map = node[key];
    if (isObject(map)) for (const [name, sub] of Object.entries(map)) out.push([sub, `${path}.${key}.${name}`, key]);
  }
  for (const key of SUBSCHEMA_ARRAYS) {
    const list = node[key];
    if (Array.isArray(list)) list.forEach((sub, i) => out.push([sub, `${path}.${key}[${i}]`, key]));
  }
  for (const key of SUBSCHEMA_SINGLE) {
    if (!(key in node)) continue;
    const value = node[key];
    if (key === "items" && Array.isArray(value)) value.forEach((sub, i) => out.push([sub, `${path}.items[${i}]`, key]));
    else out.push([value, `${path}.${key}`, key]);
  }
  return out;
}

function walk(
  node: unknown,
  path: string,
  keyword: string | undefined,
  report: (p: string, r: SchemaFinding["rule"]) => void,
) {
  if (typeof node === "boolean") {
    if (!keyword || !BOOLEAN_ALLOWED.has(keyword)) report(path, "boolean-schema");
    return;
  }
  if (!isObject(node)) return;
  if (Array.isArray(node.type)) report(path, "type-union");
  if (typeof node.$ref === "string" && node.$ref !== "" && !node.$ref.startsWith("#")) report(path, "remote-ref");
  const constrains =
    Object.keys(node).some((k) => CONSTRAINING.has(k)) || ("if" in node && ("then" in node || "else" in node));
  if (!constrains && keyword !== "not") report(path, "untyped-schema");
  for (const [child, childPath, childKeyword] of children(node, path)) walk(child, childPath, childKeyword, report);
}

/** Every finding in a tools/list answer's tools. */
export function lintToolSchemas(
  tools: { name: string; inputSchema?: unknown; outputSchema?: unknown }[],
): SchemaFinding[] {
  const findings: SchemaFinding[] = [];
  for (const tool of tools) {
    for (const schema of ["inputSchema", "outputSchema"] as const) {
      if (tool[schema] === undefined) continue;
      walk(tool[schema], "$", undefined, (path, rule) => findings.push({ tool: tool.name, schema, path, rule }));
    }
  }
  return findings;
}
