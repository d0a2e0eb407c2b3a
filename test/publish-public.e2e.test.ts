import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Browser } from "../gateway/test/oauth-harness.ts";
import { csrfOf } from "../gateway/test/support.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;
type Published = {
  status: string;
  address?: string;
  url?: string;
  uploadUrl?: string;
  uploadId?: string;
  userAction?: { kind: string; url: string | null; message: string };
};

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const html = (title: string) => `<!doctype html><title>${title}</title><h1>${title}</h1>`;

// Creating an app as public is the same decision as making one public with `share`: the same permission
// check and the user's own confirmation (a form, or the dashboard confirm page), never the AI's word alone.
for (const mode of EMBEDDED_MODES) {
  describe(`publishing a new app as public asks the user (${mode})`, () => {
    let hatch: TestHatch;
    let alice: User;
    let ai: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      alice = await userWithToken(hatch, { name: "Alice" });
      ai = await connectClient(hatch, alice.accessToken);
    }, 60_000);
    afterAll(async () => {
      await ai?.close();
      await hatch?.stop();
    });

    const addresses = async () =>
      (await callOk<{ apps: { address: string; visibility: string }[] }>(ai, "list_tools")).apps;

    async function confirmInBrowser(url: string): Promise<string> {
      const browser = new Browser((path, init) => fetch(`${hatch.baseUrl}${path}`, { ...init, redirect: "manual" }));
      expect((await browser.signIn(alice.email, "correct horse battery")).status).toBe(303);
      const path = new URL(url).pathname;
      const page = await (await browser.get(path)).text();
      expect(page).toContain("Make the new app &quot;Launch Page&quot; public?");
      const done = await browser.post(path, { csrf: csrfOf(page), action: "confirm" });
      expect(done.status).toBe(200);
      return done.text();
    }

    test("by manifest: uploads first, then a confirm link; nothing exists until the user confirms", async () => {
      const bytes = new TextEncoder().encode(html("Launch"));
      const args = {
        name: "Launch Page",
        visibility: "public",
        manifest: [{ path: "index.html", sha256: sha256(bytes), size: bytes.byteLength }],
      };
      const first = await callOk<Published>(ai, "publish", args);
      expect(first.status).toBe("needs_upload");
      expect((await fetch(`${first.uploadUrl}index.html`, { method: "PUT", body: bytes })).status).toBe(201);

      const finish = { uploadId: first.uploadId };
      const asked = await callOk<Published>(ai, "publish", finish);
      expect(asked).toMatchObject({ status: "needs_user", userAction: { kind: "open_link" } });
      // Calling again is no way around it: it asks again, and still nothing is created.
      const again = await callOk<Published>(ai, "publish", finish);
      expect(again.status).toBe("needs_user");
      expect(await addresses()).toEqual([]);

      expect(await confirmInBrowser(asked.userAction!.url!)).toContain("Created the app &quot;Launch Page&quot;");
      expect(await addresses()).toEqual([expect.objectContaining({ address: "launch-page", visibility: "public" })]);
      expect((await fetch(`${hatch.appHostUrl.replace("://", "://launch-page.")}/`)).status).toBe(200);
    });

    test("a form client: the AI's public is confirmed by the user; a no changes nothing", async () => {
      const files = [{ path: "index.html", content: html("Form"), encoding: "utf8" }];
      const no = await connectFormClient(hatch, alice.accessToken, () => ({
        action: "accept",
        content: { confirm: false },
      }));
      const refused = await no.client.callTool({
        name: "publish",
        arguments: { name: "Form Public", visibility: "public", files },
      });
      // An unticked box is the one "declined" shape (not an error, nothing changed), answered by the gateway.
      expect(refused.isError).toBeFalsy();
      expect(refused.structuredContent).toEqual({ status: "declined" });
      expect(textOf(refused)).toContain("The user declined publish, so nothing was changed.");
      expect(no.asked).toEqual([expect.stringContaining('Make the new app "Form Public" public?')]);
      await no.client.close();
      expect((await addresses()).map((a) => a.address)).not.toContain("form-public");

      const yes = await connectFormClient(hatch, alice.accessToken, () => ({
        action: "accept",
        content: { confirm: true },
      }));
      expect(await callOk(yes.client, "publish", { name: "Form Public", visibility: "public", files })).toMatchObject({
        status: "published",
        address: "form-public",
      });
      await yes.client.close();
    });

    test("the user choosing public in the naming form is their own answer: no second question", async () => {
      const chosen = await connectFormClient(hatch, alice.accessToken, () => ({
        action: "accept",
        content: { name: "Chosen Public", visibility: "public" },
      }));
      const done = await callOk(chosen.client, "publish", {
        files: [{ path: "index.html", content: html("Chosen"), encoding: "utf8" }],
      });
      expect(done).toMatchObject({ status: "published", address: "chosen-public" });
      expect(chosen.asked).toEqual(["This publishes a new app. What should it be called, and who may open it?"]);
      await chosen.client.close();
    });
  });
}
