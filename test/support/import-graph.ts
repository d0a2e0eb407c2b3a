import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";

// The repository's TypeScript import graph: relative imports and `@hatch/<package>` (its src/index.ts), static and
// dynamic, type imports too (a circle of types is still two files that cannot be read one before the other).
// test/import-circles.test.ts keeps the circles at 0 and the contracts package on zod alone.

export const ROOT = join(import.meta.dir, "../..");
export const FOLDERS = ["shared", "gateway", "services", "scripts", "bench", "test"];
const SKIP = new Set(["node_modules", ".data", "fixtures", "drizzle"]);

const PACKAGE_ENTRIES: Record<string, string> = {
  "@hatch/contracts": "shared/contracts/src/index.ts",
  "@hatch/platform": "shared/platform/src/index.ts",
  "@hatch/gateway": "gateway/src/index.ts",
  "@hatch/apps": "services/apps/src/index.ts",
  "@hatch/billing": "services/billing/src/index.ts",
  "@hatch/domains": "services/domains/src/index.ts",
  "@hatch/orgs": "services/orgs/src/index.ts",
};

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir)) {
    if (SKIP.has(entry) || entry.startsWith(".")) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (entry.endsWith(".ts") && !entry.endsWith(".d.ts")) yield path;
  }
}

/** Every specifier a file imports (import or export … from, import(), `import("x").Type`). */
export function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const found: string[] = [];
  for (const m of code.matchAll(/^\s*(import|export)\s+(type\s+)?([^"';]*?)\s*from\s*"([^"]+)"/gm)) {
    found.push(m[4]!);
  }
  for (const m of code.matchAll(/^\s*import\s+"([^"]+)"/gm)) found.push(m[1]!);
  for (const m of code.matchAll(/(?<![\w.])import\(\s*"([^"]+)"\s*\)/g)) found.push(m[1]!);
  return found;
}

function resolve(from: string, specifier: string): string | null {
  const entry = PACKAGE_ENTRIES[specifier];
  if (entry) return entry;
  if (!specifier.startsWith(".")) return null;
  const path = relative(ROOT, join(dirname(join(ROOT, from)), specifier));
  for (const candidate of [path, `${path}.ts`, join(path, "index.ts")]) {
    if (existsSync(join(ROOT, candidate)) && statSync(join(ROOT, candidate)).isFile()) return candidate;
  }
  return null;
}

/** file (relative to the root) → the files it loads. */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const folder of FOLDERS) {
    for (const path of sourceFiles(join(ROOT, folder))) {
      const file = relative(ROOT, path);
      const targets = importSpecifiers(readFileSync(path, "utf8"))
        .map((s) => resolve(file, s))
        .filter((t): t is string => t !== null && t.endsWith(".ts"));
      graph.set(file, [...new Set(targets)]);
    }
  }
  return graph;
}

/** The graph's circles: each strongly connected group of two or more files (or a file importing itself). */
export function importCircles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || (graph.get(node) ?? []).includes(node)) circles.push(group.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
}
