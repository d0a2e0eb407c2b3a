// Rewrites code written against the old `@hatch/shared` package for its two successors: `@hatch/contracts`
// (shared/contracts: zod contracts, subjects, error codes, envelope, call context) and `@hatch/platform`
// (shared/platform: bus, database, outbox, jobs, rate counting, telemetry, service runtime). Re-runnable: a file
// without `@hatch/shared` is left as it is. Kept only while branches written before the split are being merged.
//
//   bun scripts/codemods/split-shared.ts [folder…]     (default: the whole repository)
//
// What it rewrites: named imports and re-exports (`import { a, type B } from "@hatch/shared"`, split by the package
// that exports each name), `import("@hatch/shared").Name` types, `const { a } = await import("@hatch/shared")`,
// the dependency in package.json files, and `shared/src/<file>` paths in comments and docs. A name neither package
// exports is listed at the end and left on `@hatch/shared`, so typecheck points at it: so are the apps-only names that
// left the contracts for the apps service (services/apps/src/spec, reference), imported there by path.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const PACKAGES = ["@hatch/contracts", "@hatch/platform"] as const;
type Target = (typeof PACKAGES)[number];

/** The names each package's one entry exports (`export { a, type B } from …` statements only: no `export *`). */
function exportedNames(entry: string): Set<string> {
  const names = new Set<string>();
  const text = readFileSync(join(ROOT, entry), "utf8");
  for (const [, list] of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const spec of list!.split(",")) {
      const name = spec
        .trim()
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/)
        .pop();
      if (name) names.add(name);
    }
  }
  return names;
}

const owners = new Map<string, Target>();
for (const name of exportedNames("shared/platform/src/index.ts")) owners.set(name, "@hatch/platform");
for (const name of exportedNames("shared/contracts/src/index.ts")) owners.set(name, "@hatch/contracts");
const unknown = new Set<string>();

function ownerOf(name: string): Target | "@hatch/shared" {
  const owner = owners.get(name);
  if (!owner) unknown.add(name);
  return owner ?? "@hatch/shared";
}

/** `{ a, type B as C }` → the specifiers grouped by package, in their order. */
function splitSpecifiers(list: string): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const raw of list.split(",")) {
    const spec = raw.trim();
    if (!spec) continue;
    const imported = spec.replace(/^type\s+/, "").split(/\s+as\s+/)[0]!;
    const owner = ownerOf(imported);
    groups.set(owner, [...(groups.get(owner) ?? []), spec]);
  }
  return groups;
}

function statement(keyword: string, typeOnly: boolean, specs: string[], from: string): string {
  const head = `${keyword} ${typeOnly ? "type " : ""}`;
  const oneLine = `${head}{ ${specs.join(", ")} } from "${from}";`;
  if (oneLine.length <= 120) return oneLine;
  return `${head}{\n${specs.map((s) => `  ${s},`).join("\n")}\n} from "${from}";`;
}

function rewriteSource(text: string): string {
  let out = text.replace(
    /(import|export)\s+(type\s+)?\{([^}]*)\}\s*from\s*"@hatch\/shared";/g,
    (_, keyword: string, type: string | undefined, list: string) =>
      [...splitSpecifiers(list)].map(([from, specs]) => statement(keyword, Boolean(type), specs, from)).join("\n"),
  );
  out = out.replace(/import\("@hatch\/shared"\)\.(\w+)/g, (_, name: string) => `import("${ownerOf(name)}").${name}`);
  out = out.replace(/const\s*\{([^}]*)\}\s*=\s*await\s+import\("@hatch\/shared"\);/g, (_, list: string) =>
    [...splitSpecifiers(list)]
      .map(([from, specs]) => `const { ${specs.join(", ")} } = await import("${from}");`)
      .join("\n"),
  );
  return out;
}

/** Old file or folder under shared/src → where it lives now (longest match first). */
const MOVED: [string, string][] = [
  ["shared/src/contracts/", "shared/contracts/src/tools/"],
  ["shared/src/contracts", "shared/contracts/src/tools"],
  // Since the split, most of shared/src/apps is the apps service's own (services/apps/src/spec and reference).
  ["shared/src/apps/reference", "services/apps/src/reference/reference"],
  ["shared/src/apps/example-app.ts", "services/apps/src/reference/example-app.ts"],
  ["shared/src/apps/limits.ts", "shared/contracts/src/apps/limits.ts"],
  ["shared/src/apps/", "services/apps/src/spec/"],
  ["shared/src/apps", "shared/contracts/src/apps"],
  ["shared/src/billing/plans.ts", "shared/contracts/src/billing/plans.ts"],
  ["shared/src/billing/settings.ts", "shared/contracts/src/billing/settings.ts"],
  ["shared/src/events/event.ts", "shared/contracts/src/events/event.ts"],
  ...[
    "ctx.ts",
    "signed.ts",
    "confirm.ts",
    "envelope.ts",
    "errors.ts",
    "ids.ts",
    "internal-rpc.ts",
    "session.ts",
    "subjects.ts",
    "text.ts",
    "validation.ts",
    "viewer-ticket.ts",
  ].map((f): [string, string] => [`shared/src/${f}`, `shared/contracts/src/${f}`]),
  ["shared/src/", "shared/platform/src/"],
  ["shared/test/", "shared/platform/test/"],
];

function rewritePaths(text: string): string {
  return text.replace(/shared\/(?:src|test)\/[\w./-]*|shared\/src\b/g, (path) => {
    const hit = MOVED.find(([from]) => path.startsWith(from));
    return hit ? hit[1] + path.slice(hit[0].length) : path;
  });
}

function rewritePackageJson(text: string, usesContracts: boolean, usesPlatform: boolean): string {
  const deps = [
    usesContracts ? `"@hatch/contracts": "workspace:*"` : "",
    usesPlatform ? `"@hatch/platform": "workspace:*"` : "",
  ].filter(Boolean);
  return text.replace(/"@hatch\/shared": "workspace:\*"(,?)(\n\s*)/, (_, comma: string, gap: string) =>
    deps.length ? deps.join(`,${gap}`) + comma + gap : "",
  );
}

const SKIP = new Set(["node_modules", ".git", ".data", "codemods"]);
function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir)) {
    if (SKIP.has(entry) || entry.startsWith(".data")) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (/\.(ts|tsx|md|json|yaml|toml)$/.test(entry) || entry === "Dockerfile") yield path;
  }
}

const roots = process.argv.slice(2).map((p) => join(process.cwd(), p));
const changed: string[] = [];
const packageJsons: string[] = [];
for (const root of roots.length ? roots : [ROOT]) {
  for (const path of files(root)) {
    if (path.endsWith("package.json")) {
      packageJsons.push(path);
      continue;
    }
    const before = readFileSync(path, "utf8");
    let after = rewritePaths(before);
    if (path.endsWith(".ts") || path.endsWith(".tsx")) after = rewriteSource(after);
    if (after !== before) {
      writeFileSync(path, after);
      changed.push(relative(ROOT, path));
    }
  }
}
for (const path of packageJsons) {
  const before = readFileSync(path, "utf8");
  if (!before.includes(`"@hatch/shared"`)) continue;
  const folder = join(path, "..");
  const sources = [...files(folder)].filter((f) => f.endsWith(".ts")).map((f) => readFileSync(f, "utf8"));
  const uses = (name: string) => sources.some((s) => s.includes(`"${name}"`));
  writeFileSync(path, rewritePackageJson(before, uses("@hatch/contracts"), uses("@hatch/platform")));
  changed.push(relative(ROOT, path));
}

const say = (line: string) => process.stdout.write(`${line}\n`);
say(`split-shared: ${changed.length} files rewritten${changed.length ? `:\n  ${changed.join("\n  ")}` : ""}`);
if (unknown.size) {
  say(`names neither package exports (left on @hatch/shared; add them to an index): ${[...unknown].sort().join(", ")}`);
  process.exitCode = 1;
}
say("then: bun install (bun.lock), bunx biome format --write <files>, bun run typecheck");
