import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppsService } from "@hatch/apps";
import { callRpc } from "@hatch/platform";
import {
  deriveKey,
  LocalActResultSchema,
  PLAN_TABLE,
  rpcMethods,
  signContext,
  type CallContextClaims,
} from "@hatch/contracts";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { dataUsage } from "../services/apps/src/db/schema.ts";
import { seedApp } from "../services/apps/test/support/seed.ts";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, textOf, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

type User = Awaited<ReturnType<typeof userWithToken>>;

// A plan limit holds under concurrency: many changes at once that each fit alone, but not all together, end with
// exactly the limit reached and the rest refused with needs_payment (the count and the change are one atomic step,
// under a per-account lock). Real SDK Clients over HTTP and the app host's data routes, in both modes.

const CALLS = 8;

for (const mode of MODES) {
  describe(`plan limits under concurrency (${mode})`, () => {
    let hatch: TestHatch;
    let apps: AppsService;
    const clients: Client[] = [];
    const ctxKey = deriveKey(TEST_SECRET, "ctx");

    beforeAll(async () => {
      hatch = await startTestHatch(mode, { serviceEnv: { BILLING_ENFORCE_LIMITS: "true" } });
      apps = hatch.services.get("apps") as AppsService;
    }, 60_000);
    afterAll(async () => {
      await Promise.all(clients.map((c) => c.close()));
      await hatch?.stop();
    });

    /** `n` SDK Clients of one user, each its own MCP session (as many AI windows would be). */
    async function clientsOf(user: User, n = CALLS): Promise<Client[]> {
      const made = await Promise.all(Array.from({ length: n }, () => connectClient(hatch, user.accessToken)));
      clients.push(...made);
      return made;
    }

    async function sessionOf(user: User) {
      return hatch.gateway.accounts.resolve(claimsOf(user), { requestId: "test", traceparent: "" });
    }
    async function accountOf(user: User): Promise<string> {
      return (await sessionOf(user)).account;
    }
    function claimsOf(user: User): CallContextClaims {
      return {
        sub: user.id,
        email: user.email,
        name: user.name,
        permissions: [],
        scope: "write",
        client: { kind: "other", name: "test", elicitation: { form: false, url: false } },
        grant: "test",
        rid: "test",
      };
    }

    /** Calls that succeeded, and the texts of those refused with needs_payment (anything else fails the test). */
    function sortOut(results: object[]): { ok: number; refused: string[] } {
      const refused = results.filter((r) => (r as { isError?: boolean }).isError).map(textOf);
      for (const text of refused) expect(text).toMatch(/\(needs_payment\)$/);
      return { ok: results.length - refused.length, refused };
    }

    test(`${CALLS} publish calls at once on the free plan create exactly its apps; the rest get needs_payment`, async () => {
      const user = await userWithToken(hatch, { name: "Burst" });
      const ais = await clientsOf(user);
      const results = await Promise.all(
        ais.map((ai, i) =>
          ai.callTool({
            name: "publish",
            arguments: {
              name: `Burst ${mode} ${i}`,
              visibility: "private",
              files: [{ path: "index.html", content: `<h1>${i}</h1>`, encoding: "utf8" }],
            },
          }),
        ),
      );
      const allowed = PLAN_TABLE.free.limits.apps!;
      const { ok, refused } = sortOut(results);
      expect({ ok, refused: refused.length }).toEqual({ ok: allowed, refused: CALLS - allowed });
      expect(refused[0]).toContain(`The free plan allows ${allowed} apps, and this account has ${allowed}.`);
      const listed = await callOk<{ apps: unknown[] }>(ais[0]!, "list_tools");
      expect(listed.apps).toHaveLength(allowed);
    }, 60_000);

    test("custom domains connected at once stop at the plan's limit", async () => {
      const user = await userWithToken(hatch, { name: "Domains" });
      const s = await sessionOf(user);
      const account = s.account;
      const paid = await callRpc(
        hatch.bus,
        "billing",
        rpcMethods.billing.localAct,
        { action: "checkout", card: "ok", plan: "pro" },
        LocalActResultSchema,
        {
          ctx: signContext(
            {
              ...claimsOf(user),
              account,
              accountKind: s.accountKind,
              org: s.org,
              role: s.role,
              permissions: s.permissions,
            },
            ctxKey,
          ),
        },
      );
      expect(paid.ok).toBe(true);
      const allowed = PLAN_TABLE.pro.limits.customDomains!;
      const app = await seedApp(apps.context, {
        address: `domains-${mode}-${process.pid}`,
        owner: { id: user.id, email: user.email },
        accountId: account,
        visibility: "private",
        files: { "index.html": "<h1>Domains</h1>" },
      });
      const ais = await clientsOf(user);
      const tries = allowed + 4;
      const results = await Promise.all(
        Array.from({ length: tries }, (_, i) =>
          ais[i % ais.length]!.callTool({
            name: "custom_domain",
            arguments: { address: app.address, hostname: `d${i}.burst-${mode}-${process.pid}.example.com` },
          }),
        ),
      );
      const { ok, refused } = sortOut(results);
      expect({ ok, refused: refused.length }).toEqual({ ok: allowed, refused: tries - allowed });
      expect(refused[0]).toContain(`The pro plan allows ${allowed} custom domains, and this account has ${allowed}.`);
      const listed = await callOk<{ domains: unknown[] }>(ais[0]!, "custom_domains", { address: app.address });
      expect(listed.domains).toHaveLength(allowed);
    }, 60_000);

    test(`${CALLS} invitations sent at once fill the free plan's seats and no more`, async () => {
      const user = await userWithToken(hatch, { name: "Seats" });
      const ais = await clientsOf(user);
      await callOk(ais[0]!, "org_setup", { action: "create", name: `Burst ${mode}` });
      const seats = PLAN_TABLE.free.limits.seats!;
      const results = await Promise.all(
        ais.map((ai, i) =>
          ai.callTool({
            name: "org_invite",
            arguments: { action: "invite", emails: [`burst${i}-${mode}-${process.pid}@example.com`], role: "member" },
          }),
        ),
      );
      // The owner holds one seat.
      const { ok, refused } = sortOut(results);
      expect({ ok, refused: refused.length }).toEqual({ ok: seats - 1, refused: CALLS - (seats - 1) });
      expect(refused[0]).toContain(`allows ${seats} people, and this account has ${seats}.`);
      const members = await callOk<{ invitations: unknown[] }>(ais[0]!, "org_members");
      expect(members.invitations).toHaveLength(seats - 1);
    }, 60_000);

    /** An app of the user's with an open bucket and collection, its account's storage full but for `room` bytes. */
    let stores = 0;
    async function appWithRoom(user: User, room: number) {
      const account = await accountOf(user);
      const app = await seedApp(apps.context, {
        address: `store-${mode}-${process.pid}-${++stores}`,
        owner: { id: user.id, email: user.email },
        accountId: account,
        visibility: "public",
        files: { "index.html": "<h1>Store</h1>" },
        config: {
          buckets: { open: { read: "anyone", create: "anyone", delete: "anyone" } },
          collections: { notes: { read: "anyone", create: "anyone", update: "anyone", delete: "anyone" } },
        },
      });
      // What the account's apps already hold, counted as the service counts it.
      await apps.context.db
        .insert(dataUsage)
        .values({ appId: app.id, fileBytes: PLAN_TABLE.free.limits.storageBytes! - room });
      return `${hatch.appHostUrl.replace("//", `//${app.address}.`)}`;
    }

    test(`${CALLS} file uploads at once stop at the plan's storage`, async () => {
      const size = 1000;
      const fits = 3;
      const origin = await appWithRoom(
        await userWithToken(hatch, { name: "Files" }),
        fits * size + Math.floor(size / 2),
      );
      const statuses = await Promise.all(
        Array.from({ length: CALLS }, async (_, i) => {
          const response = await fetch(`${origin}/_hatch/files/open?name=f${i}.txt`, {
            method: "POST",
            headers: { "content-type": "text/plain" },
            body: "x".repeat(size),
          });
          const text = await response.text();
          if (response.status === 201) return "stored";
          try {
            return (JSON.parse(text) as { error: { code: string } }).error.code;
          } catch {
            return `${response.status} ${text.slice(0, 300)}`;
          }
        }),
      );
      expect(statuses.filter((s) => s === "stored")).toHaveLength(fits);
      expect(statuses.filter((s) => s === "needs_payment")).toHaveLength(CALLS - fits);
      const listed = (await (await fetch(`${origin}/_hatch/files/open`)).json()) as { files: unknown[] };
      expect(listed.files).toHaveLength(fits);
    }, 60_000);

    test(`${CALLS} documents added at once stop at the plan's storage`, async () => {
      const fields = { text: "y".repeat(988) };
      const size = JSON.stringify(fields).length;
      const fits = 3;
      const origin = await appWithRoom(
        await userWithToken(hatch, { name: "Docs" }),
        fits * size + Math.floor(size / 2),
      );
      const statuses = await Promise.all(
        Array.from({ length: CALLS }, async () => {
          const response = await fetch(`${origin}/_hatch/db/notes`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(fields),
          });
          const body = (await response.json()) as { error?: { code: string } };
          return response.status === 201 ? "stored" : (body.error?.code ?? String(response.status));
        }),
      );
      expect(statuses.filter((s) => s === "stored")).toHaveLength(fits);
      expect(statuses.filter((s) => s === "needs_payment")).toHaveLength(CALLS - fits);
      const listed = (await (await fetch(`${origin}/_hatch/db/notes`)).json()) as { documents: { id: string }[] };
      expect(listed.documents).toHaveLength(fits);

      // The counts follow every change: a removed document frees its room, a grown one takes more.
      const add = (body: object) =>
        fetch(`${origin}/_hatch/db/notes`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const [first, second] = listed.documents;
      expect((await fetch(`${origin}/_hatch/db/notes/${first!.id}`, { method: "DELETE" })).status).toBe(200);
      expect((await add(fields)).status).toBe(201);
      expect((await add(fields)).status).toBe(402);
      const grow = await fetch(`${origin}/_hatch/db/notes/${second!.id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ more: "z".repeat(size) }),
      });
      expect(grow.status).toBe(402);
      const shrink = await fetch(`${origin}/_hatch/db/notes/${second!.id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "" }),
      });
      expect(shrink.status).toBe(200);
      expect((await add({ text: "w".repeat(size - 20) })).status).toBe(201);
    }, 60_000);
  });
}
