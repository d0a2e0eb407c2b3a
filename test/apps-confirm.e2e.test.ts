import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  CallReplySchema,
  deriveKey,
  signContext,
  subjects,
  type CallContextClaims,
  type CallReply,
} from "@hatch/contracts";
import { decodeJson, encodeJson } from "@hatch/platform";
import { startTestHatch, TEST_SECRET, type TestHatch } from "./support/hatch.ts";
import { callOk, connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// A confirm token is checked by the apps service itself: bound to the user, the tool and the exact input,
// single use, and it expires. Driven on the bus directly, as a client that kept a token would replay it.

const ctxKey = deriveKey(TEST_SECRET, "ctx");

for (const mode of MODES) {
  describe(`confirm tokens in the apps service (${mode})`, () => {
    let hatch: TestHatch;
    let owner: { id: string; email: string; name: string };
    let other: { id: string; email: string; name: string };

    beforeAll(async () => {
      hatch = await startTestHatch(mode);
      const a = await userWithToken(hatch, { name: "Owner" });
      const b = await userWithToken(hatch, { name: "Other" });
      owner = { id: a.id, email: a.email, name: a.name };
      other = { id: b.id, email: b.email, name: b.name };
      const client = await connectClient(hatch, a.accessToken);
      for (const name of ["First", "Second"]) {
        await callOk(client, "publish", {
          name,
          visibility: "private",
          files: [{ path: "index.html", content: `<h1>${name}</h1>`, encoding: "utf8" }],
        });
      }
      await client.close();
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
    });

    async function call(
      user: typeof owner,
      tool: string,
      input: Record<string, unknown>,
      extra: Record<string, unknown> = {},
    ): Promise<CallReply> {
      // The account comes from orgs, as the gateway would resolve it.
      const account = await hatch.gateway.accounts.resolve(claims(user), { requestId: "test", traceparent: "" });
      const ctx = signContext(
        {
          ...claims(user),
          account: account.account,
          accountKind: account.accountKind,
          org: account.org,
          role: account.role,
          permissions: account.permissions,
        },
        ctxKey,
      );
      const reply = await hatch.bus.request(subjects.tool("apps", tool), encodeJson({ ctx, input, ...extra }), {
        timeoutMs: 10_000,
      });
      return CallReplySchema.parse(decodeJson(reply.data));
    }

    function claims(user: typeof owner): CallContextClaims {
      return {
        sub: user.id,
        email: user.email,
        name: user.name,
        permissions: [],
        scope: "write",
        client: { kind: "cli", name: "test", elicitation: { form: true, url: false } },
        grant: "test-grant",
        rid: "test",
      };
    }

    async function askDelete(address: string): Promise<string> {
      const reply = await call(owner, "delete_tool", { address });
      if (!reply.ok || !("ask" in reply)) throw new Error(`expected a question, got ${JSON.stringify(reply)}`);
      expect(reply.ask.fallback).toBe("link");
      return reply.ask.confirm;
    }

    test("a token works once for its own input; a replay is refused", async () => {
      const token = await askDelete("first");
      const forOther = await call(
        owner,
        "delete_tool",
        { address: "second" },
        { answer: { confirm: true }, confirm: token },
      );
      expect(forOther).toMatchObject({
        ok: false,
        error: { code: "invalid_input", message: expect.stringContaining("another user, tool or input") },
      });

      const done = await call(
        owner,
        "delete_tool",
        { address: "first" },
        { answer: { confirm: true }, confirm: token },
      );
      expect(done).toMatchObject({ ok: true, result: { data: { status: "deleted", address: "first" } } });

      const replay = await call(
        owner,
        "delete_tool",
        { address: "first" },
        { answer: { confirm: true }, confirm: token },
      );
      expect(replay.ok).toBe(false);
    });

    test("another user cannot use the owner's token", async () => {
      const token = await askDelete("second");
      const stolen = await call(
        other,
        "delete_tool",
        { address: "second" },
        { answer: { confirm: true }, confirm: token },
      );
      expect(stolen).toMatchObject({ ok: false, error: { code: "invalid_input" } });
      const list = await call(owner, "list_tools", {});
      expect(list).toMatchObject({
        ok: true,
        result: { data: { apps: [expect.objectContaining({ address: "second" })] } },
      });
    });

    test("a token for one tool does not confirm another", async () => {
      const token = await askDelete("second");
      const share = await call(owner, "share", { address: "second" }, { answer: { confirm: true }, confirm: token });
      expect(share).toMatchObject({ ok: false, error: { code: "invalid_input" } });
      const forged = await call(
        owner,
        "delete_tool",
        { address: "second" },
        { answer: { confirm: true }, confirm: `${token.slice(0, -4)}AAAA` },
      );
      expect(forged).toMatchObject({
        ok: false,
        error: { code: "invalid_input", message: expect.stringContaining("not valid") },
      });
    });

    test("the used token is refused as already used, with nothing changed", async () => {
      const token = await askDelete("second");
      expect(
        await call(owner, "delete_tool", { address: "second" }, { answer: { confirm: false }, confirm: token }),
      ).toMatchObject({ ok: true });
      const list = await call(owner, "list_tools", {});
      expect(list).toMatchObject({
        ok: true,
        result: { data: { apps: [expect.objectContaining({ address: "second" })] } },
      });
    });
  });
}
