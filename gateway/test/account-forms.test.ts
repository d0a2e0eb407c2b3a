import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { users } from "../src/db/schema.ts";
import { BASE, authorizePath, createHarness, registerClientId, type Browser, type Harness } from "./oauth-harness.ts";
import { csrfOf, pkcePair } from "./support.ts";

// The sign-in and sign-up forms against crafted input: where `next` may send the browser, which CSRF tokens a
// session accepts, and which emails and names an account may have.

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
}, 60_000);
afterAll(async () => {
  await h.close();
});

let people = 0;
async function signedIn(): Promise<{ browser: Browser; email: string }> {
  const browser = h.browser();
  const email = `forms${++people}@example.com`;
  const response = await browser.signUp(email);
  if (response.status !== 303) throw new Error(`sign-up failed: ${response.status}`);
  return { browser, email };
}

/** Where a browser goes with this Location: resolved against the page it came from. */
const followed = (response: Response) => new URL(response.headers.get("location") ?? "", `${BASE}/signin`);

const ATTACKS = [
  "/.//evil.example",
  "/%2e//evil.example",
  "/%2E%2E//evil.example",
  "/a/..//evil.example",
  "/a/%2e%2e//evil.example",
  "/./\\evil.example",
  "/.\\/evil.example",
  "/\\evil.example",
  "\\\\evil.example",
  "/\t/evil.example",
  "/\n/evil.example",
  "/\r\n/evil.example",
  " //evil.example",
  "//evil.example",
  "///evil.example",
  "https://evil.example/x",
  "https:evil.example",
  "http://localhost:3000@evil.example/",
  "javascript:alert(1)",
  "/x/../..//evil.example/",
];

describe("next after sign-in never leaves the origin", () => {
  test.each(ATTACKS)("signed-in GET /signin?next=%p stays on the origin", async (next) => {
    const { browser } = await signedIn();
    const response = await browser.get(`/signin?next=${encodeURIComponent(next)}`);
    expect(response.status).toBe(303);
    expect(followed(response).origin).toBe(BASE);
    expect(followed(response).host).toBe("localhost:3000");
  });

  test.each(ATTACKS)("POST sign-in and sign-up with next=%p stay on the origin", async (next) => {
    const { email } = await signedIn();
    const signIn = await h
      .browser()
      .submit(`/signin?next=${encodeURIComponent(next)}`, "/signin", { email, password: "correct horse battery" });
    expect(signIn.status).toBe(303);
    expect(followed(signIn).origin).toBe(BASE);
    const signUp = await h.browser().submit(`/signup?next=${encodeURIComponent(next)}`, "/signup", {
      email: `n${++people}@example.com`,
      password: "correct horse battery",
      name: "N",
    });
    expect(signUp.status).toBe(303);
    expect(followed(signUp).origin).toBe(BASE);
  });

  test("legitimate next values are followed as they are", async () => {
    const { browser } = await signedIn();
    for (const next of [
      "/oauth/authorize?client_id=abc&state=x%20y&scope=read+write",
      "/dashboard/tokens",
      "/apps/signin?app=x&path=/a",
      "/confirm/abc_123",
    ]) {
      const response = await browser.get(`/signin?next=${encodeURIComponent(next)}`);
      expect(response.headers.get("location")).toBe(next);
    }
  });
});

describe("CSRF tokens are bound to the session", () => {
  test("a token from a page shown before sign-in is refused after it; a fresh page's token works", async () => {
    const browser = h.browser();
    const anonymous = csrfOf(await (await browser.get("/signup")).text());
    expect((await browser.signUp(`bound${++people}@example.com`)).status).toBe(303);
    const stale = await browser.post("/signout", { csrf: anonymous });
    expect(stale.status).toBe(403);
    expect(await stale.text()).toContain("This form expired or came from another site");
    const fresh = csrfOf(await (await browser.get("/")).text());
    expect((await browser.post("/signout", { csrf: fresh })).status).toBe(303);
  });

  test("user A's token is refused in user B's session, even with the same CSRF cookie", async () => {
    const a = await signedIn();
    const b = await signedIn();
    const tokenOfA = csrfOf(await (await a.browser.get("/")).text());
    b.browser.jar.set("hatch_csrf", a.browser.jar.get("hatch_csrf") ?? "");
    const refused = await b.browser.post("/signout", { csrf: tokenOfA });
    expect(refused.status).toBe(403);
    // B is still signed in: the refused form changed nothing.
    expect(await (await b.browser.get("/")).text()).toContain(b.email);
  });

  test("Origin: null is refused on forms; a missing Origin is left to the token", async () => {
    const { browser } = await signedIn();
    const csrf = csrfOf(await (await browser.get("/")).text());
    const nullOrigin = await browser.post("/signout", { csrf }, { origin: "null" });
    expect(nullOrigin.status).toBe(403);
    expect(await nullOrigin.text()).toContain("This form expired or came from another site");

    const clientId = await registerClientId(h);
    const consentPage = await (await browser.get(authorizePath(clientId, pkcePair().challenge))).text();
    const consent = await browser.post(
      "/oauth/authorize",
      { csrf: csrfOf(consentPage), decision: "write", client_id: clientId },
      { origin: "null" },
    );
    expect(consent.status).toBe(403);

    expect((await browser.post("/signout", { csrf })).status).toBe(303);
  });
});

async function userCount(): Promise<number> {
  const [row] = await h.database.db.select({ n: sql<number>`count(*)::int` }).from(users);
  return Number(row?.n ?? 0);
}

describe("sign-up refuses emails and names that are not what they look like", () => {
  const BAD_EMAILS: [string, string][] = [
    ["a@b..c", "two dots in a row"],
    ["ada..l@example.com", "two dots in a row"],
    ["ada@example", "must be a domain such as example.com"],
    ["ad\u200Ba@example.com", "invisible or control character"],
    ["ada@exam\u200Dple.com", "invisible or control character"],
    ["ada\uFEFF@example.com", "invisible or control character"],
    ["ad\u00ADa@example.com", "invisible or control character"],
    ["ada@example.com\u0000", "invisible or control character"],
    ["\u0430da@example.com", "plain ASCII"], // Cyrillic а
    ["ada@ex\u0430mple.com", "plain ASCII"],
    ["ada@b\u00FCcher.example", "plain ASCII"],
  ];

  test.each(BAD_EMAILS)("sign-up with %p: 400 with the message, nothing created", async (email, message) => {
    const before = await userCount();
    const response = await h.browser().signUp(email);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain(message);
    expect(await userCount()).toBe(before);
  });

  test("sign-in with such an email says what is wrong (never a 500)", async () => {
    const response = await h.browser().signIn("ada@example.com\u0000", "correct horse battery");
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("invisible or control character");
  });

  test("a NUL or other control character in the name is a 400 with the form error; nothing is logged about it", async () => {
    const before = await userCount();
    const logged = h.logs.length;
    for (const name of ["Ada\u0000Lovelace", "Ada\u202ELovelace", "   "]) {
      const response = await h.browser().signUp(`named${++people}@example.com`, "correct horse battery", name);
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(/must not contain control characters|Enter your name/);
    }
    expect(await userCount()).toBe(before);
    expect(h.logs.slice(logged).some((line) => line.includes('"level":"error"'))).toBe(false);
  });

  test("an international domain in its xn-- form and a plus address are fine", async () => {
    for (const email of [`ada${++people}@xn--bcher-kva.example`, `o'brien+hatch${++people}@mail.example.co.uk`]) {
      expect((await h.browser().signUp(email)).status).toBe(303);
    }
  });
});
