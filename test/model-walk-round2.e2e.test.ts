import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { refused } from "./support/orgs.ts";
import { folderTar } from "./support/publish-tar.ts";
import { MODES } from "./support/servers.ts";

// Issue 26, as a model walks it through the SDK client: binary files that cannot be right are refused with what to
// do, too many inline files point to upload: true, answers name accounts instead of ids, an app shared by email says
// whose it is, every tool_ai choice that can cost money is asked, and the upload command fails in the shell when
// Hatch refuses the upload.

type User = Awaited<ReturnType<typeof userWithToken>>;
const page = (title: string) => `<!doctype html><title>${title}</title><h1>${title}</h1>`;
const indexFile = (title: string) => ({ path: "index.html", content: page(title), encoding: "utf8" });
/** A real 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
/** An internal account id (orgs' acc_…) anywhere in a text. */
const ACCOUNT_ID = /acc_[A-Za-z0-9_-]{6,}/;

for (const mode of MODES) {
  describe(`the AI's side, round 2 (${mode})`, () => {
    let hatch: TestHatch;
    let ann: User;
    let annC: Client;

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { AI_PROVIDERS: "fake=http://127.0.0.1:9/v1" } });
      ann = await userWithToken(hatch, { name: "Ann Owner" });
      annC = await connectClient(hatch, ann.accessToken);
    }, 60_000);
    afterAll(async () => {
      await annC?.close();
      await hatch?.stop();
    });

    test("a PNG sent as base64 without encoding is refused and told to add encoding base64", async () => {
      const text = await refused(annC, "publish", {
        name: "Logo Base64",
        visibility: "private",
        files: [indexFile("logo"), { path: "img/logo.png", content: PNG.toString("base64") }],
      });
      expect(text).toContain('"img/logo.png"');
      expect(text).toContain('encoding "base64"');
      expect(text).toContain("Nothing was published");
      // The same PNG as a data: URL: the prefix is named too.
      const dataUrl = await refused(annC, "publish", {
        name: "Logo Data Url",
        visibility: "private",
        files: [indexFile("logo"), { path: "logo.png", content: `data:image/png;base64,${PNG.toString("base64")}` }],
      });
      expect(dataUrl).toContain("data:image/png;base64,");
      expect(dataUrl).toContain('encoding "base64"');
    });

    test("a binary file whose bytes were read as UTF-8 text is refused, not stored mangled", async () => {
      // What a model's file reader hands over: invalid UTF-8 replaced by U+FFFD.
      const mangled = new TextDecoder().decode(PNG);
      expect(mangled).toContain("\uFFFD");
      const text = await refused(annC, "publish", {
        name: "Logo Mangled",
        visibility: "private",
        files: [indexFile("logo"), { path: "logo.png", content: mangled }],
      });
      expect(text).toContain('"logo.png"');
      expect(text).toContain("replacement characters");
      expect(text).toContain('encoding "base64"');
      expect(text).toContain("upload: true");
      // Bytes read one per character (latin1) are changed by UTF-8 as well: the file does not start as a PNG does.
      const latin1 = await refused(annC, "publish", {
        name: "Logo Latin1",
        visibility: "private",
        files: [indexFile("logo"), { path: "logo.png", content: PNG.toString("latin1") }],
      });
      expect(latin1).toContain("does not start as a PNG file does");
      // Done right, it is published.
      await callOk(annC, "publish", {
        name: "Logo Right",
        visibility: "private",
        files: [indexFile("logo"), { path: "logo.png", content: PNG.toString("base64"), encoding: "base64" }],
      });
      // Text in a text file is untouched by these checks, base64-looking or not.
      await callOk(annC, "publish", {
        name: "Plain Text",
        visibility: "private",
        files: [indexFile("text"), { path: "token.txt", content: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" }],
      });
    });

    test("more inline files than allowed point to upload: true", async () => {
      const files = Array.from({ length: 600 }, (_, i) => ({ path: `p/${i}.html`, content: page(String(i)) }));
      const text = await refused(annC, "publish", {
        name: "Six Hundred",
        visibility: "private",
        files: [indexFile("many"), ...files],
      });
      expect(text).toContain("601 files");
      expect(text).toContain("at most 500");
      expect(text).toContain("upload: true");
      expect(text).not.toContain("Too big");
    });

    test("answers name the account (an organization's name, your personal account), never its internal id", async () => {
      const boss = await userWithToken(hatch, { name: "Bea Boss" });
      const bossC = await connectClient(hatch, boss.accessToken);
      try {
        const said: string[] = [];
        const say = async (name: string, args: Record<string, unknown>) => {
          const result = await bossC.callTool({ name, arguments: args });
          expect(result.isError).toBeFalsy();
          said.push(textOf(result));
          return textOf(result);
        };
        expect(
          await say("publish", { name: "Bea Personal", visibility: "private", files: [indexFile("p")] }),
        ).toContain("your personal account");
        const orgName = `Acme ${mode}`;
        await say("org_setup", { action: "create", name: orgName });
        expect(await say("publish", { name: "Acme Board", visibility: "org", files: [indexFile("a")] })).toContain(
          orgName,
        );
        expect(await say("publish", { address: "acme-board", files: [indexFile("a2")] })).toContain(orgName);
        // Her own app outside the organization is in her personal account.
        expect(await say("publish", { address: "bea-personal", files: [indexFile("p2")] })).toContain(
          "account personal",
        );
        const upload = await say("publish", { name: "Acme Upload", visibility: "org", upload: true });
        expect(upload).toContain(orgName);
        // The line the upload command prints names the account too.
        const url = upload.match(/curl [^']*'([^']+)'/)?.[1];
        expect(url).toBeDefined();
        const tar = folderTar(new Map([["index.html", new TextEncoder().encode(page("up"))]]));
        const put = await fetch(url!, { method: "PUT", body: tar });
        expect(put.status).toBe(201);
        said.push(await put.text());
        expect(said.at(-1)).toContain(orgName);
        for (const text of said) expect(text).not.toMatch(ACCOUNT_ID);
      } finally {
        await bossC.close();
      }
    });

    test("an app shared by email says whose it is and what only its owner may do", async () => {
      const carol = await userWithToken(hatch, { name: "Carol Friend", verified: true });
      const carolC = await connectClient(hatch, carol.accessToken);
      const stranger = await userWithToken(hatch);
      const strangerC = await connectClient(hatch, stranger.accessToken);
      try {
        await callOk(annC, "publish", { name: "Shared Notes", visibility: "private", files: [indexFile("notes")] });
        await callOk(annC, "share", { address: "shared-notes", add: [carol.email] });
        const owner = `Ann Owner (${ann.email})`;
        for (const [tool, only] of [
          ["tool_data", "read its data"],
          ["tool_logs", "read its logs"],
          ["delete_tool", "delete it"],
        ] as const) {
          const text = await refused(carolC, tool, { address: "shared-notes" });
          expect(text).toContain(`shared-notes is ${owner}'s app, shared with you`);
          expect(text).toContain(`only its owner can ${only}`);
          expect(text).toEndWith("(forbidden)");
          expect(text).not.toContain("list_tools");
          // Someone it is not shared with still learns nothing.
          expect(await refused(strangerC, tool, { address: "shared-notes" })).toContain("no app at the address");
        }
      } finally {
        await carolC.close();
        await strangerC.close();
      }
    });

    test("tool_ai mine on an app shared after the choice asks for acceptCost, without forms", async () => {
      await callOk(annC, "publish", { name: "Chat Later", visibility: "private", files: [indexFile("chat")] });
      const first = await callOk<{ status: string; costWarning: string | null }>(annC, "tool_ai", {
        address: "chat-later",
        value: "mine",
      });
      expect(first).toMatchObject({ status: "updated", costWarning: null });
      await callOk(annC, "share", { address: "chat-later", add: ["reader@example.com"] });
      const again = await annC.callTool({ name: "tool_ai", arguments: { address: "chat-later", value: "mine" } });
      expect(again.structuredContent).toMatchObject({
        status: "needs_user",
        userAction: { kind: "ask_user", fields: ["acceptCost"] },
      });
      expect(textOf(again)).toContain("acceptCost");
      const no = await callOk<{ status: string }>(annC, "tool_ai", {
        address: "chat-later",
        value: "mine",
        acceptCost: false,
      });
      expect(no.status).toBe("needs_user");
      const yes = await callOk<{ status: string }>(annC, "tool_ai", {
        address: "chat-later",
        value: "mine",
        acceptCost: true,
      });
      expect(yes.status).toBe("updated");
    });

    test("tool_ai mine on an app shared after the choice asks the user, with forms", async () => {
      await callOk(annC, "publish", { name: "Chat Form", visibility: "private", files: [indexFile("chat")] });
      await callOk(annC, "tool_ai", { address: "chat-form", value: "mine" });
      await callOk(annC, "share", { address: "chat-form", visibility: "org" });
      const form = await connectFormClient(hatch, ann.accessToken, () => ({
        action: "accept",
        content: { acceptCost: true },
      }));
      try {
        const result = await callOk<{ status: string }>(form.client, "tool_ai", {
          address: "chat-form",
          value: "mine",
        });
        expect(form.asked).toHaveLength(1);
        expect(form.asked[0]).toContain("You pay for every AI call on chat-form");
        expect(result.status).toBe("updated");
      } finally {
        await form.client.close();
      }
    });

    test("the upload command exits non-zero with Hatch's message when the upload is refused", async () => {
      const offer = await annC.callTool({
        name: "publish",
        arguments: { name: "Shell Upload", visibility: "private", upload: true },
      });
      const command = textOf(offer)
        .split("\n")
        .find((line) => line.startsWith("tar -C dist "));
      expect(command).toBeDefined();
      const root = mkdtempSync(join(tmpdir(), "hatch-shell-"));
      try {
        // A folder without index.html: Hatch refuses it.
        mkdirSync(join(root, "dist"));
        writeFileSync(join(root, "dist", "readme.txt"), "no page here");
        const bad = await run(command!, root);
        expect(bad.exitCode).not.toBe(0);
        expect(bad.output).toContain("index.html");
        // Fixed, the same command publishes and exits 0.
        writeFileSync(join(root, "dist", "index.html"), page("shell"));
        const good = await run(command!, root);
        expect(good.output).toContain("Created the app");
        expect(good.exitCode).toBe(0);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  });
}

/** Runs a command line in bash, in `cwd`; its exit code and everything it printed. */
async function run(command: string, cwd: string): Promise<{ exitCode: number; output: string }> {
  const child = Bun.spawn(["bash", "-c", command], { cwd, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, output: stdout + stderr };
}
