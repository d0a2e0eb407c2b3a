import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { readFolder } from "./support/app-folder.ts";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

const PASSWORD = "correct horse battery";
// Bun 1.4.5 keeps its 5 s default whatever bunfig says; these tests sign in through several pages.
const TEST_TIMEOUT_MS = 60_000;
const FIXTURE = new URL("./fixtures/todo-photos", import.meta.url).pathname;
/** A 1×1 PNG: a real image the browser decodes. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

/**
 * Waits until the elements' texts are `expected` (or, with `partial`, each contains it); fails naming what it saw.
 * Playwright's own retrying assertions belong to its test runner, not to playwright-core.
 */
async function shows(locator: Locator, expected: string | string[], partial = false): Promise<void> {
  const want = Array.isArray(expected) ? expected : [expected];
  let seen: string[] = [];
  const deadline = Date.now() + 15_000;
  for (;;) {
    seen = (await locator.allInnerTexts()).map((text) => text.trim());
    const ok = partial
      ? seen.length === want.length && seen.every((text, i) => text.includes(want[i]!))
      : JSON.stringify(seen) === JSON.stringify(want);
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`expected ${JSON.stringify(want)}${partial ? " (contained)" : ""}, saw ${JSON.stringify(seen)}`);
    await Bun.sleep(50);
  }
}

type User = Awaited<ReturnType<typeof userWithToken>>;
interface DataOutput {
  collections: {
    name: string;
    count: number;
    rules: Record<string, string>;
    recent: { id: string; data: Record<string, unknown> }[];
  }[];
  buckets: { name: string; count: number }[];
}

// The app data path as people meet it: an AI publishes a small todo list with a photo per item (the browser
// library, collections and a bucket under rules in service.json), viewers use it in a real browser, and the AI
// reads what it stored with tool_data. The rules: each signed-in person keeps their own todos; photos are for
// signed-in people; anonymous viewers may open the page but neither read nor write.
for (const mode of MODES) {
  describe.skipIf(!hasChromium)(`app data in a browser (${mode})`, () => {
    let hatch: TestHatch;
    let browser: Browser;
    let ai: Client;
    let alice: User, bob: User;
    let url = "";
    let address = "";
    const contexts: BrowserContext[] = [];

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice" });
      bob = await userWithToken(hatch, { name: "Bob" });
      ({ client: ai } = await connectFormClient(hatch, alice.accessToken, () => ({
        action: "accept",
        content: { name: "Todo Photos", visibility: "public", confirm: true },
      })));
      browser = await launchChromium();
    }, 90_000);
    afterAll(async () => {
      for (const context of contexts) await context.close().catch(() => undefined);
      await ai?.close();
      await browser?.close();
      await hatch?.stop();
    });

    async function open(): Promise<Page> {
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(url);
      return page;
    }

    /**
     * The app's own Sign in button: hatch.signIn() → Hatch's sign-in page → (someone else's public app: the consent page,
     * Continue) → back to the app, signed in.
     */
    async function signIn(page: Page, user: User): Promise<void> {
      const appOrigin = new URL(url).origin;
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL((next) => next.pathname === "/signin");
      await page.getByLabel("Email").fill(user.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([
        page.waitForURL((next) => next.origin === appOrigin || next.pathname === "/apps/signin"),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      if (new URL(page.url()).pathname === "/apps/signin")
        await Promise.all([
          page.waitForURL((next) => next.origin === appOrigin),
          page.getByRole("button", { name: "Continue" }).click(),
        ]);
      await shows(page.locator("#who"), user.email);
    }

    const items = (page: Page) => page.locator("#items li span");

    test(
      "the AI publishes the todo app with its service.json; the user confirms it public",
      async () => {
        const folder = await readFolder(FIXTURE);
        const files = [...folder].map(([path, bytes]) => ({
          path,
          content: new TextDecoder().decode(bytes),
          encoding: "utf8",
        }));
        const published = await callOk<{ address: string; url: string }>(ai, "publish", { files });
        ({ address, url } = published);
        expect(address).toBe("todo-photos");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "an anonymous viewer opens the page but may not read or add todos",
      async () => {
        const page = await open();
        await shows(page.locator("#who"), "nobody");
        await shows(page.locator("#error"), "forbidden: Sign in", true);
        await page.locator("#text").fill("Sneaky");
        await page.getByRole("button", { name: "Add" }).click();
        await shows(page.locator("#error"), "forbidden", true);
        const code = await page.evaluate(() =>
          (window as any).todoApp.todos.add({ text: "x" }).then(
            () => "added",
            (error: { code: string }) => error.code,
          ),
        );
        expect(code).toBe("forbidden");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a signed-in viewer adds todos with a photo, marks one done, removes one; the state survives a reload",
      async () => {
        const page = await open();
        await signIn(page, alice);
        await page.locator("#text").fill("Buy milk");
        await page.locator("#photo").setInputFiles({ name: "milk.png", mimeType: "image/png", buffer: PNG });
        await page.getByRole("button", { name: "Add" }).click();
        await shows(items(page), ["Buy milk"]);
        const photo = page.locator("#items img");
        expect(await photo.getAttribute("src")).toMatch(/^\/_hatch\/files\/photos\//);
        await page.waitForFunction(
          () => (document.querySelector("#items img") as HTMLImageElement | null)?.naturalWidth === 1,
        );

        await page.locator("#text").fill("Walk the dog");
        await page.getByRole("button", { name: "Add" }).click();
        await shows(items(page), ["Buy milk", "Walk the dog"]);

        await page.locator("#items li", { hasText: "Buy milk" }).getByRole("checkbox").check();
        await shows(page.locator("#items li.done span"), ["Buy milk"]);
        await page.locator("#items li", { hasText: "Walk the dog" }).getByRole("button", { name: "Remove" }).click();
        await shows(items(page), ["Buy milk"]);

        await page.reload();
        await shows(page.locator("#who"), alice.email);
        await shows(items(page), ["Buy milk"]);
        await shows(page.locator("#items li.done span"), ["Buy milk"]);
        await shows(page.locator("#error"), "");
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "subscribe: a todo added in one tab appears in the viewer's other tab",
      async () => {
        const first = await open();
        await signIn(first, alice);
        const second = await first.context().newPage();
        // The second tab's stream is open once its answer (the event stream's headers) arrived; then the first tab adds.
        // (A resource timing entry would only appear once the stream ended.)
        const streaming = second.waitForResponse(
          (response) => new URL(response.url()).pathname === "/_hatch/db/todos/_changes" && response.status() === 200,
        );
        await second.goto(url);
        await shows(second.locator("#who"), alice.email);
        await shows(items(second), ["Buy milk"]);
        await streaming;
        await first.locator("#text").fill("Call mom");
        await first.getByRole("button", { name: "Add" }).click();
        await shows(items(second), ["Buy milk", "Call mom"]);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "a second viewer sees only their own todos and cannot change or delete someone else's",
      async () => {
        const page = await open();
        await signIn(page, bob);
        await shows(page.locator("#count"), "0");
        await page.locator("#text").fill("Bob's task");
        await page.getByRole("button", { name: "Add" }).click();
        await shows(items(page), ["Bob's task"]);

        const alicePage = await open();
        await signIn(alicePage, alice);
        await shows(items(alicePage), ["Buy milk", "Call mom"]);
        const [milkId, photoSrc] = await alicePage.evaluate(() => {
          const li = document.querySelector("#items li") as HTMLElement;
          return [li.dataset.id!, li.querySelector("img")!.getAttribute("src")!];
        });
        const photoId = photoSrc.split("/").pop()!;
        const attempts = await page.evaluate(
          async ([id, photo]) => {
            const { todos, photos } = (window as any).todoApp;
            const codeOf = (p: Promise<unknown>) =>
              p.then(
                () => "done",
                (error: { code: string }) => error.code,
              );
            return {
              get: await codeOf(todos.get(id)),
              update: await codeOf(todos.update(id, { done: false })),
              remove: await codeOf(todos.remove(id)),
              removePhoto: await codeOf(photos.remove(photo)),
              seePhoto: (await fetch(photos.url(photo))).status,
            };
          },
          [milkId, photoId] as const,
        );
        // Read is `creator`: someone else's todo does not exist for Bob. The photo bucket lets signed-in people see it.
        expect(attempts).toEqual({
          get: "not_found",
          update: "not_found",
          remove: "not_found",
          removePhoto: "forbidden",
          seePhoto: 200,
        });
        await alicePage.reload();
        await shows(items(alicePage), ["Buy milk", "Call mom"]);
        await shows(alicePage.locator("#items li.done span"), ["Buy milk"]);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "tool_data shows the counts, the rules and the newest documents, marked as written by the app's users",
      async () => {
        const data = await callOk<DataOutput>(ai, "tool_data", { address });
        const todos = data.collections.find((c) => c.name === "todos")!;
        expect(todos.count).toBe(3);
        expect(todos.rules).toEqual({ read: "creator", create: "signed_in", update: "creator", delete: "creator" });
        expect(todos.recent.map((d) => d.data.text)).toEqual(["Bob's task", "Call mom", "Buy milk"]);
        expect(data.buckets).toEqual([{ name: "photos", count: 1 }]);
        const result = await ai.callTool({ name: "tool_data", arguments: { address } });
        expect(textOf(result)).toMatch(/written by the app's users/i);

        const theirs = await connectFormClient(hatch, bob.accessToken, () => ({ action: "decline" }));
        const refused = await theirs.client.callTool({ name: "tool_data", arguments: { address } });
        expect(refused.isError).toBe(true);
        await theirs.client.close();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
