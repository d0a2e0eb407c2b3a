import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import type { RunningService } from "@hatch/platform";
import { eq } from "drizzle-orm";
import postgres from "postgres";
import { appsTable } from "../services/apps/src/db/schema.ts";
import { expectDatabaseUnavailable, startDatabaseApps } from "./support/database-apps.ts";
import { eventually } from "./support/eventually.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { freePort, realServers } from "./support/servers.ts";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.ts";

// The database going away under a running Hatch: a page's data request (real Postgres, reached through a proxy the
// test cuts) and a tool call (a service whose database port does not answer) are told in plain words that the
// database is not answering and to try again (a change: to check first), never "something went wrong" with a request
// id to report; once the database is back, the same requests work.

describe.skipIf(!realServers)("the database goes away and comes back (real)", () => {
  let hatch: TestHatch;
  let proxy: TcpProxy;
  let origin = "";

  beforeAll(async () => {
    const server = new URL(realServers!.databaseUrl);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    hatch = await startTestHatch("real", {
      databaseVia: (url) => {
        const via = new URL(url);
        via.host = `127.0.0.1:${proxy.port}`;
        return via.toString();
      },
    });
    const owner = await connectClient(hatch, (await userWithToken(hatch, { name: "Dora" })).accessToken);
    const { address } = await callOk<{ address: string }>(owner, "publish", {
      name: "Notes when down",
      visibility: "private",
      files: [
        { path: "index.html", content: "<h1>Notes</h1>", encoding: "utf8" },
        {
          path: "service.json",
          content: JSON.stringify({ collections: { notes: { read: "anyone", create: "anyone" } } }),
          encoding: "utf8",
        },
      ],
    });
    await owner.close();
    const apps = hatch.services.get("apps") as AppsService;
    await apps.context.db.update(appsTable).set({ visibility: "public" }).where(eq(appsTable.address, address));
    apps.host.invalidate(address);
    origin = hatch.appHostUrl.replace("//", `//${address}.`);
  }, 90_000);
  afterAll(async () => {
    await proxy?.restore().catch(() => {});
    await hatch?.stop();
    await proxy?.close();
  });

  const add = (text: string) =>
    fetch(`${origin}/_hatch/db/notes`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: origin },
      body: JSON.stringify({ text }),
    });
  const list = () => fetch(`${origin}/_hatch/db/notes`);

  test("data requests say the database is not answering, then work again when it is back", async () => {
    expect((await add("before")).status).toBe(201);
    expect((await list()).status).toBe(200);

    await proxy.cut();
    const write = await add("while down");
    expect(write.status).toBe(503);
    expect(write.headers.get("retry-after")).toBe("5");
    const writeError = ((await write.json()) as { error: { code: string; message: string } }).error;
    expect(writeError).toEqual({
      code: "unavailable",
      message:
        "Hatch's database is not answering right now (it may be restarting), so this may not have taken effect. Check, then try again in a moment.",
    });
    const read = await list();
    expect(read.status).toBe(503);
    expect(((await read.json()) as { error: { message: string } }).error.message).toBe(
      "Hatch's database is not answering right now (it may be restarting). Try again in a moment.",
    );

    await proxy.restore();
    await eventually(async () => (await add("after")).status === 201, "a write once the database is back");
    const texts = ((await (await list()).json()) as { documents: { text: string }[] }).documents.map((d) => d.text);
    expect(texts).toContain("before");
    expect(texts).toContain("after");
    expect(texts).not.toContain("while down");
  }, 60_000);
});

describe("a service whose database does not answer (embedded)", () => {
  let hatch: TestHatch;
  let apps: RunningService;
  let sqlClient: postgres.Sql;

  beforeAll(async () => {
    hatch = await startTestHatch("embedded", { services: ["orgs"] });
    // A stand-in apps service whose database is a port where nothing listens: its queries fail as a real outage does.
    sqlClient = postgres(`postgres://postgres@127.0.0.1:${freePort()}/gone`, { max: 1, connect_timeout: 2 });
    apps = await startDatabaseApps(hatch, sqlClient);
  }, 60_000);
  afterAll(async () => {
    await apps?.stop();
    await sqlClient?.end({ timeout: 1 });
    await hatch?.stop();
  });

  test("a tool says the database is not answering and to try again (a change: to check first), not an internal error", async () => {
    const ai = await connectClient(hatch, (await userWithToken(hatch, { name: "Ola" })).accessToken);
    await expectDatabaseUnavailable(ai);
    await ai.close();
  });
});
