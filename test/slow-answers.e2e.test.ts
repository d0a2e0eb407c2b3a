import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import { eq } from "drizzle-orm";
import { appsTable } from "../services/apps/src/db/schema.ts";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";

// Answers slower than a silent connection is allowed to last. Bun closes a connection that sends nothing for its idle
// timeout (10 s unless set), which cut off an app's GET whose server code waited on an API or an AI provider that
// took longer, though server code may run 30 s and an AI call wait 60 s. The app host now allows the longest of
// those. (POSTs were not cut, since Bun stops the timer once a body is read; the data tools' writes are POSTs.)

const WAIT_MS = 13_000;
const SERVER = `
export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/api/slow") {
      await new Promise((resolve) => setTimeout(resolve, ${WAIT_MS}));
      return new Response("late but here");
    }
    return new Response("no route", { status: 404 });
  },
};`;

describe("slow answers at the app host (embedded)", () => {
  let hatch: TestHatch;
  let origin = "";

  beforeAll(async () => {
    hatch = await startTestHatch("embedded");
    const owner = await connectClient(hatch, (await userWithToken(hatch, { name: "Patient" })).accessToken);
    const { address } = await callOk<{ address: string }>(owner, "publish", {
      name: "Slow API",
      visibility: "private",
      files: [
        { path: "index.html", content: "<h1>Slow</h1>", encoding: "utf8" },
        { path: "api/index.js", content: SERVER, encoding: "utf8" },
        { path: "service.json", content: JSON.stringify({ server: "api/index.js" }), encoding: "utf8" },
      ],
    });
    await owner.close();
    // Public without the confirmation round (publish-public covers that): an anonymous GET reaches the code.
    const apps = hatch.services.get("apps") as AppsService;
    await apps.context.db.update(appsTable).set({ visibility: "public" }).where(eq(appsTable.address, address));
    apps.host.invalidate(address);
    origin = hatch.appHostUrl.replace("//", `//${address}.`);
  }, 90_000);
  afterAll(async () => {
    await hatch?.stop();
  });

  test(
    "a GET whose server code answers after 13 s gets that answer",
    async () => {
      const response = await fetch(`${origin}/api/slow`);
      expect([response.status, await response.text()]).toEqual([200, "late but here"]);
    },
    WAIT_MS + 30_000,
  );
});
