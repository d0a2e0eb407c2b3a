import type { z } from "zod";

/**
 * Names a model often writes for an argument, by the argument Hatch calls it. Offered only when the real name is an
 * argument of the object the unknown name was given in.
 */
const ALIASES: Record<string, readonly string[]> = {
  address: [
    "app",
    "appname",
    "app_name",
    "appid",
    "app_id",
    "appaddress",
    "tool",
    "toolname",
    "slug",
    "site",
    "url",
    "appurl",
    "subdomain",
  ],
  content: ["contents", "body", "text", "data"],
  path: ["filename", "file", "name"],
  emails: ["email", "people", "invitees"],
  email: ["member", "user", "person"],
  hostname: ["domain", "host"],
  domain: ["hostname", "name"],
  query: ["q", "search", "name", "domain"],
  visibility: ["access", "privacy"],
  version: ["v", "versionnumber"],
  app: ["address", "appaddress", "url", "tool"],
  invitationId: ["invitation", "invite", "inviteid", "invitation_id"],
};

/** Edit distance (insertions, deletions, substitutions), capped: past `max` it only says "more". */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

const fold = (name: string) => name.toLowerCase().replace(/[_\-\s]/g, "");

/** The argument a model most likely meant by an unknown name, or null: a known alias, else a near spelling. */
export function suggestArgument(unknown: string, known: readonly string[]): string | null {
  const folded = fold(unknown);
  const same = known.find((k) => fold(k) === folded);
  if (same) return same;
  for (const k of known) if (ALIASES[k]?.some((alias) => fold(alias) === folded)) return k;
  const max = folded.length <= 4 ? 1 : 2;
  let best: { name: string; d: number } | null = null;
  for (const k of known) {
    const d = distance(folded, fold(k), max);
    if (d <= max && (!best || d < best.d)) best = { name: k, d };
  }
  return best?.name ?? null;
}

/** The object schema a path leads to (through optional, default, nullable, array and pipe wrappers), or null. */
function objectAt(schema: z.ZodType | undefined, path: readonly PropertyKey[]): Record<string, unknown> | null {
  let node = unwrap(schema);
  for (const key of path) {
    if (!node) return null;
    const def = (node as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
    if (def.type === "object") node = unwrap((def.shape as Record<string, z.ZodType>)[String(key)]);
    else if (def.type === "array") node = unwrap(def.element as z.ZodType);
    else return null;
  }
  const def = node && (node as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  return def?.type === "object" ? (def.shape as Record<string, unknown>) : null;
}

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let node = schema;
  for (let i = 0; node && i < 10; i++) {
    const def = (node as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
    if (def.type === "optional" || def.type === "default" || def.type === "nullable" || def.type === "prefault")
      node = def.innerType as z.ZodType;
    else if (def.type === "pipe") node = def.in as z.ZodType;
    else break;
  }
  return node;
}

/**
 * Turns zod issues into one line an AI can act on: which argument, what is wrong. No values are echoed. Given the
 * schema, an unknown argument name gets the one it most likely meant ("app": did you mean "address"?), or the list of
 * names there are; the "missing" issue of the argument it meant is then left out (said once).
 */
export function describeIssues(error: z.ZodError, max = 5, schema?: z.ZodType): string {
  const meant = new Set<string>();
  const unknownParts = new Map<z.core.$ZodIssue, string>();
  for (const issue of error.issues) {
    if (issue.code !== "unrecognized_keys") continue;
    const shape = objectAt(schema, issue.path);
    if (!shape) continue;
    const known = Object.keys(shape);
    const where = issue.path.length ? `${issue.path.map(String).join(".")}: ` : "";
    const said = issue.keys.map((key) => {
      const suggestion = suggestArgument(
        key,
        known.filter((k) => !issue.keys.includes(k)),
      );
      if (!suggestion) return `"${key}" is not an argument (there are: ${known.join(", ")})`;
      meant.add([...issue.path.map(String), suggestion].join("."));
      return `"${key}": did you mean "${suggestion}"?`;
    });
    unknownParts.set(issue, where + said.join("; "));
  }
  const shown = error.issues.filter(
    (issue) =>
      !(issue.code === "invalid_type" && issue.input === undefined && meant.has(issue.path.map(String).join("."))),
  );
  const parts = shown.slice(0, max).map((issue) => {
    const told = unknownParts.get(issue);
    if (told) return told;
    const where = issue.path.length ? issue.path.map(String).join(".") : "arguments";
    return `${where}: ${issue.message}`;
  });
  const more = shown.length > max ? ` (and ${shown.length - max} more)` : "";
  return parts.join("; ") + more;
}
