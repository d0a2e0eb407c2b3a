import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, eq } from "drizzle-orm";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import type { AppsService } from "@hatch/apps";
import { appsTable, folderUploads, versionFiles } from "../services/apps/src/db/schema.ts";
import { TAR_MAX_BYTES } from "../services/apps/src/publish/folder-upload.ts";
import { runShell, uploadCommandOf, writeFolder, type Folder } from "./support/app-folder.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, connectFormClient, textOf, userWithToken } from "./support/mcp.ts";
import { folderTar, makeTar } from "./support/publish-tar.ts";
import { EMBEDDED_MODES } from "./support/servers.ts";

// publish { upload: true }: a one-time URL and one shell command (tar | curl) that uploads the built folder and
// publishes it; the manifest path's compact answer finished by uploadId; forgiving paths; the one inline limit.

type Published = {
  status: string;
  address?: string;
  url?: string;
  version?: number;
  account?: string;
  uploadUrl?: string;
  uploadId?: string;
  missing?: string[];
  uploads?: unknown;
};

const encoder = new TextEncoder();
const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const page = (title: string) => encoder.encode(`<!doctype html><title>${title}</title><h1>${title}</h1>`);

function siteFolder(title: string, extra = 0): Folder {
  const folder: Folder = new Map();
  folder.set("index.html", page(title));
  folder.set("assets/app.js", encoder.encode(`console.log(${JSON.stringify(title)})`));
  for (let i = 0; i < extra; i++)
    folder.set(
      `assets/chunks/chunk-${String(i).padStart(5, "0")}-${"x".repeat(40)}.js`,
      encoder.encode(`export const n = ${i};`),
    );
  return folder;
}

for (const mode of EMBEDDED_MODES) {
  describe(`publish-upload: a folder with one shell command (${mode})`, () => {
    let hatch: TestHatch;
    let ai: Client;
    let apps: AppsService;

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      apps = hatch.services.get("apps") as AppsService;
      const alice = await userWithToken(hatch, { name: "Alice" });
      ai = await connectClient(hatch, alice.accessToken);
    }, 60_000);
    afterAll(async () => {
      await ai?.close();
      await hatch?.stop();
    });

    /** A file of the app's current version, as stored (the apps are private: no browser session here). */
    const served = async (address: string, path = "index.html") => {
      const db = apps.context.db;
      const [app] = await db.select().from(appsTable).where(eq(appsTable.address, address));
      const [file] = await db
        .select()
        .from(versionFiles)
        .where(
          and(
            eq(versionFiles.appId, app!.id),
            eq(versionFiles.version, app!.currentVersion!),
            eq(versionFiles.path, path),
          ),
        );
      return file ? await (await apps.context.blobs.get(file.sha256))!.text() : null;
    };
    const offer = async (args: Record<string, unknown>) => {
      const result = await ai.callTool({ name: "publish", arguments: { upload: true, ...args } });
      if (result.isError) throw new Error(textOf(result));
      return {
        text: textOf(result),
        data: result.structuredContent as Published,
        bytes: JSON.stringify(result).length,
      };
    };
    const put = (url: string, body: Uint8Array<ArrayBuffer>) => fetch(url, { method: "PUT", body });

    test("the command in the text, run for real (sh -c 'tar | curl'), publishes a new app and prints address, URL and version", async () => {
      const { text, data } = await offer({ name: "Shell App", visibility: "private" });
      expect(data).toMatchObject({ status: "needs_upload", account: "personal" });
      expect(text).toContain("with dist replaced by the built folder");
      expect(text).toContain(`tar -C dist -cf - . | curl -sS --fail-with-body -T - '${data.uploadUrl}'`);
      expect(text).toContain('the new app "Shell App" (private) in your personal account');
      const dir = writeFolder(siteFolder("Shell"));
      const run = await runShell(uploadCommandOf(text, dir));
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toStartWith(
        `Created the app "Shell App" at shell-app, version 1: ${hatch.appHostUrl.replace("://", "://shell-app.")}/ (private, account personal; 2 files,`,
      );
      expect(run.stdout.trim().split("\n")).toHaveLength(1);

      // One use: the same command again is refused, and nothing changes.
      const again = await runShell(uploadCommandOf(text, dir));
      expect(again.stdout).toContain("already used to publish. Call publish with upload: true for a new URL.");
      const listed = await callOk<{ apps: { address: string; currentVersion?: number }[] }>(ai, "list_tools");
      expect(listed.apps.filter((a) => a.address === "shell-app")).toHaveLength(1);
    });

    test("a gzip tar publishes a new version; contents Hatch has are not stored again", async () => {
      const folder = siteFolder("Shell");
      const first = await offer({ address: "shell-app" });
      expect(first.text).toContain("a new version of shell-app");
      const same = await put(first.data.uploadUrl!, Bun.gzipSync(folderTar(folder)));
      expect(same.status).toBe(201);
      expect(same.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(await same.text()).toMatch(
        /^Published shell-app version 2: .* \(private, account personal; 2 files, \d+ bytes, 0 new to Hatch\)\n$/,
      );

      folder.set("assets/app.js", encoder.encode("console.log('changed')"));
      const next = await offer({ address: "shell-app" });
      const changed = await put(next.data.uploadUrl!, folderTar(folder));
      expect(await changed.text()).toContain("version 3: ");
      expect(await served("shell-app", "assets/app.js")).toBe("console.log('changed')");
    });

    test("an expired URL is refused with what to do", async () => {
      const { data } = await offer({ address: "shell-app" });
      const token = new URL(data.uploadUrl!).pathname.split("/").pop()!;
      await apps.context.db
        .update(folderUploads)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(folderUploads.token, token));
      const response = await put(data.uploadUrl!, folderTar(siteFolder("Late")));
      expect(response.status).toBe(410);
      expect(await response.text()).toMatch(
        /^This upload URL expired at .*Call publish with upload: true for a new URL\.\n$/,
      );
      expect(await served("shell-app")).not.toContain("Late");
    });

    test("bad entries, a missing index.html and a folder archived from outside are refused; the URL stays usable", async () => {
      const { data } = await offer({ address: "shell-app" });
      const url = data.uploadUrl!;
      const index = { name: "./index.html", body: page("Fixed") };
      const cases: [Uint8Array<ArrayBuffer>, string][] = [
        [makeTar([index, { name: "./link.js", type: "2", linkname: "/etc/passwd" }]), '"./link.js" is a symbolic link'],
        [makeTar([index, { name: "../up.js", body: "x" }]), 'the path "../up.js", which leaves the folder (..)'],
        [makeTar([index, { name: "/abs.js", body: "x" }]), 'the absolute path "/abs.js"'],
        [makeTar([{ name: "./about.html", body: "x" }]), "The folder has no index.html at its root"],
        [
          makeTar([{ name: "dist/index.html", body: page("x") }]),
          "The archive has dist/index.html but no index.html at its root. Archive the folder's content: tar -C dist -cf - .",
        ],
        [encoder.encode("not a tar at all".repeat(64)), "is not a tar archive (plain or gzip)"],
      ];
      for (const [body, message] of cases) {
        const response = await put(url, body);
        expect(response.status).toBe(400);
        expect(await response.text()).toContain(message);
      }
      // A real symlink through the real command, too.
      const dir = writeFolder(siteFolder("Linked"));
      symlinkSync("index.html", join(dir, "again.html"));
      const linked = await runShell(`tar -C '${dir}' -cf - . | curl -sS -T - '${url}'`);
      expect(linked.stdout).toContain('"./again.html" is a symbolic link');
      const fixed = await put(url, makeTar([index]));
      expect(fixed.status).toBe(201);
      expect(await served("shell-app")).toContain("Fixed");
    });

    test("413 names the limit: a file over 25 MB, and a body declared over the tar limit", async () => {
      const { data } = await offer({ address: "shell-app" });
      const big = makeTar([
        { name: "index.html", body: page("Big") },
        { name: "video.bin", body: new Uint8Array(25 * 1024 * 1024 + 1) },
      ]);
      const response = await put(data.uploadUrl!, big);
      expect(response.status).toBe(413);
      expect(await response.text()).toContain('"video.bin" is 25 MB; one file may be at most 25 MB.');

      // Declared larger than any folder may be: refused before a byte of the body is read.
      const url = new URL(data.uploadUrl!);
      const declared = TAR_MAX_BYTES + 1;
      const reply = await new Promise<string>((resolve, reject) => {
        let answer = "";
        Bun.connect({
          hostname: url.hostname === "localhost" ? "127.0.0.1" : url.hostname,
          port: Number(url.port),
          socket: {
            open(socket) {
              socket.write(`PUT ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: ${declared}\r\n\r\n`);
            },
            data(socket, chunk) {
              answer += new TextDecoder().decode(chunk);
              if (
                answer.includes("\r\n\r\n") &&
                answer.endsWith("\n\n") === false &&
                answer.includes("Nothing was published")
              )
                socket.end();
            },
            close: () => resolve(answer),
            error: (_socket, error) => reject(error),
          },
        });
      });
      expect(reply).toStartWith("HTTP/1.1 413");
      expect(reply).toContain("a version may hold at most 250 MB (25 MB a file)");
    });

    test("the tool's answer stays under 4,000 bytes whatever the folder holds; the folder never passes through it", async () => {
      const big = siteFolder("Big Folder", 2500);
      const first = await offer({ name: "Big Folder", visibility: "private" });
      const response = await put(first.data.uploadUrl!, folderTar(big));
      const line = await response.text();
      expect(response.status).toBe(201);
      expect(line.length).toBeLessThan(300);
      expect(line).toContain("2502 files");
      // Again for the app that now holds 2,502 files: the answer does not grow with it.
      const { text, bytes } = await offer({ address: "big-folder", expectedVersion: 1 });
      expect(bytes).toBeLessThanOrEqual(4000);
      expect(text).not.toContain("chunk-");
    }, 60_000);

    test("a form client answers the new app's questions once; the upload URL carries that decision", async () => {
      const alice2 = await userWithToken(hatch, { name: "Formy" });
      const form = await connectFormClient(hatch, alice2.accessToken, () => ({
        action: "accept",
        content: { name: "Chosen By Form", visibility: "people" },
      }));
      const result = await form.client.callTool({ name: "publish", arguments: { upload: true } });
      expect(form.asked).toEqual(["This publishes a new app. What should it be called, and who may open it?"]);
      expect(textOf(result)).toContain('the new app "Chosen By Form" (people)');
      const done = await put((result.structuredContent as Published).uploadUrl!, folderTar(siteFolder("Form")));
      expect(await done.text()).toContain('Created the app "Chosen By Form" at chosen-by-form, version 1');
      await form.client.close();
    });

    test("a new public app: the user confirms before any URL is given; no confirmation, no URL", async () => {
      const asked = await ai.callTool({
        name: "publish",
        arguments: { upload: true, name: "Loud", visibility: "public" },
      });
      expect((asked.structuredContent as Published & { userAction?: { kind: string } }).userAction?.kind).toBe(
        "open_link",
      );
      expect((asked.structuredContent as Published).uploadUrl).toBeUndefined();
    });

    test("the manifest path: one base URL and the missing paths in the text, PUT to base + path, finished by uploadId", async () => {
      const folder = siteFolder("Manifest", 298);
      for (const [path, bytes] of folder)
        folder.set(path, new Uint8Array([...bytes, ...encoder.encode("// manifest")])); // contents Alice never had
      const manifest = [...folder].map(([path, bytes]) => ({ path, sha256: sha256(bytes), size: bytes.byteLength }));
      const result = await ai.callTool({
        name: "publish",
        arguments: { name: "Manifest App", visibility: "private", manifest },
      });
      const data = result.structuredContent as Published;
      const text = textOf(result);
      expect(data.status).toBe("needs_upload");
      expect(data.uploadId).toMatch(/^upl_/);
      expect(data.uploadUrl).toMatch(/\/_hatch\/uploads\/[A-Za-z0-9_-]+\/$/);
      expect(data.uploads).toBeUndefined();
      expect(data.missing).toHaveLength(300);
      expect(text.split(data.uploadUrl!).length - 1).toBe(2); // the base, and the example command
      expect(text).toContain("300 of 300 files are not on Hatch yet.");
      expect(text).toContain(`Then call publish with uploadId "${data.uploadId}" (nothing else) to finish`);
      expect(text).toContain("assets/chunks/chunk-00297-");
      // Compact: each missing path twice (text, structured), plus a few hundred bytes; no object per file.
      const pathBytes = data.missing!.reduce((sum, path) => sum + path.length + 4, 0);
      expect(JSON.stringify(result).length).toBeLessThan(2 * pathBytes + 2000);

      const early = await ai.callTool({ name: "publish", arguments: { uploadId: data.uploadId } });
      expect(textOf(early)).toContain("300 of 300 files are not on Hatch yet.");
      for (const path of data.missing!)
        expect((await put(`${data.uploadUrl}${path}`, folder.get(path)!)).status).toBe(201);
      expect((await put(`${data.uploadUrl}index.html`, folder.get("index.html")!)).status).toBe(200);
      const stranger = await put(`${data.uploadUrl}nope.js`, encoder.encode("x"));
      expect(stranger.status).toBe(404);
      expect(await stranger.text()).toContain('"nope.js" is not one of the files this publish is missing');
      const done = await callOk<Published>(ai, "publish", { uploadId: data.uploadId });
      expect(done).toMatchObject({ status: "published", address: "manifest-app", version: 1, account: "personal" });
      const twice = await ai.callTool({ name: "publish", arguments: { uploadId: data.uploadId } });
      expect(textOf(twice)).toContain("was already published");
    });

    test("forgiving input: no encoding means utf8; /, ./ and backslashes are normalised and the answer says so", async () => {
      const result = await ai.callTool({
        name: "publish",
        arguments: {
          name: "Forgiving",
          visibility: "private",
          files: [
            { path: "/index.html", content: "<!doctype html><h1>forgiving</h1>" },
            { path: "./style.css", content: "h1{}" },
            { path: "assets\\app.js", content: "console.log(1)" },
          ],
        },
      });
      expect(result.isError).toBeFalsy();
      expect(textOf(result)).toContain(
        "Paths were normalised (relative, with /): /index.html → index.html, ./style.css → style.css, assets\\app.js → assets/app.js.",
      );
      expect(textOf(result)).toContain("in your personal account");
      expect(await served("forgiving", "assets/app.js")).toBe("console.log(1)");
    });

    test("inline over the limit: a tool result naming upload: true, not a JSON-RPC body error", async () => {
      const files = [
        { path: "index.html", content: "<h1>big</h1>" },
        { path: "photo.bin", content: Buffer.alloc(3_700_000, 7).toString("base64"), encoding: "base64" },
      ];
      const result = await ai.callTool({
        name: "publish",
        arguments: { name: "Too Big", visibility: "private", files },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("inline files may hold at most 3 MB in all");
      expect(textOf(result)).toContain("Call publish with upload: true instead");
    });
  });
}
