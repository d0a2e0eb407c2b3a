import type { z } from "zod";

/** Turns zod issues into one line an AI can act on: which argument, what is wrong. No values are echoed. */
export function describeIssues(error: z.ZodError, max = 5): string {
  const parts = error.issues.slice(0, max).map((issue) => {
    const where = issue.path.length ? issue.path.map(String).join(".") : "arguments";
    return `${where}: ${issue.message}`;
  });
  const more = error.issues.length > max ? ` (and ${error.issues.length - max} more)` : "";
  return parts.join("; ") + more;
}
