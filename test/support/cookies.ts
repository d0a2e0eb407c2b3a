import { expect } from "bun:test";

/**
 * A browser's cookie store for host-only cookies (RFC 6265 §5.3: no Domain attribute → sent back only to the exact
 * host name that set it, on any port). Hatch never sets a Domain attribute; the jar refuses one, so a test notices
 * if that ever changes. Requests are real HTTP; redirects are returned, not followed.
 */
export class HostCookieJar {
  private readonly hosts = new Map<string, Map<string, string>>();

  /** The cookie names this jar would send to `url`. */
  namesFor(url: string): string[] {
    return [...(this.hosts.get(new URL(url).hostname)?.keys() ?? [])];
  }

  /** The value of one cookie this jar holds for `url`'s host (tests that look inside a cookie). */
  valueFor(url: string, name: string): string | undefined {
    return this.hosts.get(new URL(url).hostname)?.get(name);
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookies = this.hosts.get(new URL(url).hostname);
    if (cookies?.size) headers.set("cookie", [...cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    this.absorb(url, response);
    return response;
  }

  /** POSTs a form the way a browser does: urlencoded, with the page's own Origin. */
  post(url: string, fields: Record<string, string>): Promise<Response> {
    return this.fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(url).origin },
      body: new URLSearchParams(fields),
    });
  }

  private absorb(url: string, response: Response): void {
    const host = new URL(url).hostname;
    for (const line of response.headers.getSetCookie()) {
      if (/;\s*domain=/i.test(line)) throw new Error(`${host} set a cookie with a Domain attribute: ${line}`);
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let cookies = this.hosts.get(host);
      if (!cookies) this.hosts.set(host, (cookies = new Map()));
      if (/max-age=0/i.test(line) || value === "") cookies.delete(name);
      else cookies.set(name, value);
    }
  }
}

/** The CSRF token of the first form on a page. */
export function csrfOf(page: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(page);
  if (!match?.[1]) throw new Error("no CSRF field on the page");
  return match[1];
}

/**
 * Signs `jar` in on the gateway's sign-in page at `signInUrl` (its `next`, if any, sent along), as a browser would:
 * the page, then the form with its CSRF token. Returns the 303 that answered the form.
 */
export async function signInWithForm(
  jar: HostCookieJar,
  signInUrl: string,
  email: string,
  password: string,
): Promise<Response> {
  const page = await jar.fetch(signInUrl);
  expect(page.status).toBe(200);
  const next = new URL(signInUrl).searchParams.get("next");
  const done = await jar.post(new URL("/signin", signInUrl).href, {
    email,
    password,
    ...(next === null ? {} : { next }),
    csrf: csrfOf(await page.text()),
  });
  expect(done.status).toBe(303);
  return done;
}

/** A new jar signed in on the gateway at `baseUrl` (signInWithForm): a person's browser on the dashboard. */
export async function signedInJar(baseUrl: string, email: string, password: string): Promise<HostCookieJar> {
  const jar = new HostCookieJar();
  await signInWithForm(jar, `${baseUrl}/signin`, email, password);
  return jar;
}

/** Follows an app's sign-in with real requests (gateway sign-in page, viewer ticket) until the app's cookie is set. */
export async function signInToApp(
  hatch: { baseUrl: string },
  jar: HostCookieJar,
  appUrl: string,
  email: string,
  password = "correct horse battery",
): Promise<void> {
  const first = await jar.fetch(appUrl);
  expect(first.status).toBe(302);
  let location = new URL(first.headers.get("location")!).href;
  for (let hops = 0; hops < 6 && new URL(location).origin === hatch.baseUrl; hops++) {
    if (new URL(location).pathname === "/signin") {
      const submitted = await signInWithForm(jar, location, email, password);
      location = new URL(submitted.headers.get("location")!, hatch.baseUrl).href;
    } else {
      const answer = await jar.fetch(location);
      expect(answer.status).toBe(303);
      location = new URL(answer.headers.get("location")!, hatch.baseUrl).href;
    }
  }
  expect(new URL(location).pathname).toBe("/_hatch/auth");
  const back = await jar.fetch(location);
  expect(back.status).toBe(302);
  expect(back.headers.get("location")).toBe(appUrl);
}
