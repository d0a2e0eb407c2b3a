import { createHash, randomBytes } from "node:crypto";
import { openServiceDatabase, type Database } from "@hatch/shared";
import { freshDatabase } from "../../test/support/servers.ts";
import { embeddedDatabase } from "../../test/support/templates.ts";

const MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

export interface TestDatabase {
  db: Database;
  close(): Promise<void>;
}

/**
 * The gateway schema, migrated, on a fresh database: a new database on TEST_DATABASE_URL's server when set
 * (dropped on close), otherwise an in-memory PGlite.
 */
export async function openTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const client = await embeddedDatabase([{ schema: "gateway", migrations: MIGRATIONS }]);
    const handle = await openServiceDatabase(
      { kind: "pglite", client },
      { schema: "gateway", migrationsFolder: MIGRATIONS },
    );
    return { db: handle.db, close: () => client.close() };
  }
  const database = await freshDatabase(serverUrl);
  const handle = await openServiceDatabase(
    { kind: "postgres", url: database.url },
    { schema: "gateway", migrationsFolder: MIGRATIONS },
  );
  return {
    db: handle.db,
    async close() {
      await handle.close();
      await database.drop();
    },
  };
}

/** A PKCE pair (RFC 7636, S256). */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** Keeps cookies between requests driven through `app.handle`, the way a browser would. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  absorb(response: Response): Response {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0/i.test(line) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  has(name: string): boolean {
    return this.cookies.has(name);
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** Plants a cookie, as a sibling subdomain or a shared browser could. */
  set(name: string, value: string): void {
    this.cookies.set(name, value);
  }
}

/** The CSRF token of the first form on a page. */
export function csrfOf(page: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(page);
  if (!match?.[1]) throw new Error("no CSRF field on the page");
  return match[1];
}

/** Hidden inputs of a page's form, as a browser would submit them. */
export function hiddenFields(page: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    out[m[1] ?? ""] = (m[2] ?? "")
      .replaceAll("&amp;", "&")
      .replaceAll("&quot;", '"')
      .replaceAll("&#39;", "'")
      .replaceAll("&lt;", "<")
      .replaceAll("&gt;", ">");
  }
  return out;
}
