// Forgiving paths where the intent is clear: `/index.html`, `./index.html` and `assets\app.js` name the files
// index.html and assets/app.js of the folder. `..` is never "fixed": checkFolder refuses it.

/** The path with backslashes as `/`, no leading `/` or `./`, no empty or `.` segments. */
export function normalisePath(path: string): string {
  const parts = path.replace(/\\/g, "/").split("/");
  return parts.filter((p) => p !== "" && p !== ".").join("/");
}

/** Normalises every path; `notes` names the ones that changed (a few examples and a count), or null. */
export function normalisePaths<T extends { path: string }>(items: readonly T[]): { items: T[]; note: string | null } {
  const changed: string[] = [];
  const out = items.map((item) => {
    const path = normalisePath(item.path);
    if (path === item.path || path === "") return item;
    changed.push(`${item.path} → ${path}`);
    return { ...item, path };
  });
  if (changed.length === 0) return { items: out, note: null };
  const examples = changed.slice(0, 3).join(", ");
  const more = changed.length > 3 ? ` and ${changed.length - 3} more` : "";
  return { items: out, note: `Paths were normalised (relative, with /): ${examples}${more}.` };
}
