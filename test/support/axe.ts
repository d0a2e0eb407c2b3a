import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Frame, Page } from "playwright-core";

// axe-core in a page of headless Chromium: its source run through the DevTools protocol, so the page's CSP stays as
// it is. Each finding is one line: rule, impact, what it means and where.

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type AxeFinding = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };

export async function axeFindings(page: Page | Frame): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<unknown> } }).axe;
    const result = (await axe.run(document, { resultTypes: ["violations"] })) as { violations: AxeFinding[] };
    return result.violations;
  });
  return violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
  );
}

/** The four ways each page is looked at: wide and narrow, light and dark. */
export const PAGE_SIZES = [
  { width: 1280, height: 800, scheme: "light" },
  { width: 1280, height: 800, scheme: "dark" },
  { width: 390, height: 844, scheme: "light" },
  { width: 390, height: 844, scheme: "dark" },
] as const;

/** What is wrong with the page shown now at this size: sideways scrolling, and each axe-core finding. */
export async function pageProblems(page: Page, label: string, size: (typeof PAGE_SIZES)[number]): Promise<string[]> {
  const problems: string[] = [];
  const overflow = await page.evaluate(() => (document.scrollingElement?.scrollWidth ?? 0) - window.innerWidth);
  if (overflow > 0) problems.push(`${label} ${size.width}px: ${overflow}px sideways scroll`);
  for (const finding of await axeFindings(page)) problems.push(`${label} ${size.width}px ${size.scheme}: ${finding}`);
  return problems;
}
