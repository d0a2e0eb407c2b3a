import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { importCircles, importGraph, importSpecifiers, ROOT } from "./support/import-graph.ts";

// No two files import each other, directly or around a longer circle (type imports count: a circle of types is still
// two files a reader cannot read one before the other). A circle is broken by moving the piece both need one layer
// down (a type into the lower file, a helper into a file of its own), never by a dynamic import.

describe("import graph", () => {
  const graph = importGraph();

  test("has no import circles", () => {
    expect(graph.size).toBeGreaterThan(400);
    const circles = importCircles(graph).sort((a, b) => a[0]!.localeCompare(b[0]!));
    expect(circles).toEqual([]);
  });

  test("finds a circle of two files and one of three", () => {
    const made = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["a.ts", "c.ts"]],
      ["c.ts", []],
      ["d.ts", ["e.ts"]],
      ["e.ts", ["f.ts"]],
      ["f.ts", ["d.ts", "c.ts"]],
    ]);
    expect(importCircles(made)).toEqual([
      ["a.ts", "b.ts"],
      ["d.ts", "e.ts", "f.ts"],
    ]);
  });

  test("reads static, type, re-export and dynamic imports", () => {
    const source = `import { a } from "./a.ts";
import type { B } from "./b.ts";
import {
  c,
  type D,
} from "@hatch/contracts";
export { e } from "./e.ts";
// import { f } from "./commented.ts";
const g = await import("./g.ts");
let h: import("./h.ts").H;`;
    expect(importSpecifiers(source)).toEqual(["./a.ts", "./b.ts", "@hatch/contracts", "./e.ts", "./g.ts", "./h.ts"]);
  });

  test("the contracts package loads zod and its own files only", () => {
    const outside = [...graph.keys()]
      .filter((file) => file.startsWith("shared/contracts/src/"))
      .flatMap((file) =>
        importSpecifiers(readFileSync(join(ROOT, file), "utf8"))
          .filter((s) => !s.startsWith("./") && !s.startsWith("../") && s !== "zod" && s !== "node:crypto")
          .map((s) => `${file}: ${s}`),
      );
    expect(outside).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, "shared/contracts/package.json"), "utf8"));
    expect(Object.keys(manifest.dependencies)).toEqual(["zod"]);
    const relativeOut = [...graph.entries()]
      .filter(([file]) => file.startsWith("shared/contracts/src/"))
      .flatMap(([, targets]) => targets.filter((t) => !t.startsWith("shared/contracts/src/")));
    expect(relativeOut).toEqual([]);
  });
});
