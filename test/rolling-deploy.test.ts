import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  bindTool,
  createLogger,
  createMemoryBus,
  createNatsBus,
  decodeJson,
  encodeJson,
  startService,
  type Bus,
  type RunningService,
} from "@hatch/platform";
import {
  ContextVersions,
  defineTool,
  deriveKey,
  signPayload,
  type CallContext,
  type Session,
  type ToolContract,
} from "@hatch/contracts";
import { z } from "zod";
import type { ConfirmationOpener } from "../gateway/src/confirm/index.ts";
import type { AccountSessions } from "../gateway/src/mcp/accounts.ts";
import { forwardToolCall } from "../gateway/src/mcp/call.ts";
import { callService, websiteCaller, type ServiceClientDeps } from "../gateway/src/services.ts";
import { TEST_SECRET } from "./support/hatch.ts";
import { realServers, uniqueName } from "./support/servers.ts";

// A rolling deploy runs old and new copies side by side: a gateway whose contract knows a key (or a call context
// version) that a service copy does not, and the reverse. The rule (AGENTS.md, gateway/DESIGN.md "Rolling deploys"):
// a key the contract marks `ignorable` is dropped by an older copy; any other unknown key is a retryable `unavailable`
// that says an upgrade is under way and that nothing was changed; the context version is negotiated per service.

const contextKey = deriveKey(TEST_SECRET, "ctx");
const logger = createLogger({ level: "error" });

const output = z.object({ saved: z.string() });
/** The tool as it first shipped. */
const v1 = defineTool({
  name: "note_add",
  title: "Add a note",
  description: "Adds a note.",
  service: "orgs",
  class: "change",
  input: z.object({ text: z.string() }).strict(),
  output,
});
/** The next release: `color` is a hint an older copy may drop; `pinned` changes what happens, so it may not be dropped. */
const v2 = defineTool({
  ...v1,
  input: z.object({ text: z.string(), color: z.string().optional(), pinned: z.boolean().optional() }).strict(),
  output,
  ignorable: ["color"],
});

const session: Session = {
  account: "acc_1",
  accountKind: "personal",
  org: null,
  orgName: null,
  role: "owner",
  permissions: [],
};
/** Orgs' account lookup is not what this is about: every caller acts in their personal account. */
const accounts = { resolve: async () => session } as unknown as AccountSessions;
const caller = websiteCaller(
  { id: "usr_1", email: "ada@example.com", emailVerified: true, name: "Ada" } as Parameters<typeof websiteCaller>[0],
  { scope: "write", client: "test" },
);

const BUSES: [string, () => Promise<Bus>][] = [["memory", async () => createMemoryBus()]];
if (realServers)
  BUSES.push(["nats", () => createNatsBus({ url: realServers!.natsUrl, prefix: uniqueName("roll"), name: "roll" })]);

for (const [busName, makeBus] of BUSES) {
  describe(`rolling deploy (${busName} bus)`, () => {
    // One bus for every copy and gateway here (the in-memory one is one process's bus); a copy leaves by stopping.
    let bus: Bus;
    const stops: (() => Promise<void>)[] = [];
    beforeAll(async () => {
      bus = await makeBus();
    });
    afterAll(async () => {
      for (const stop of stops.reverse()) await stop();
      await bus.drain();
    });

    /** One service copy on its own bus connection, with the contract and context versions of its release. */
    async function copy(contract: ToolContract, options: { contextVersions?: readonly number[] } = {}) {
      const seen: { input: unknown; ctx: CallContext }[] = [];
      const service: RunningService = await startService({
        name: "orgs",
        version: "test",
        bus,
        contextKey,
        contracts: [contract],
        tools: [
          bindTool(contract, async ({ input, ctx }) => {
            seen.push({ input, ctx });
            return { text: "Saved.", data: { saved: (input as { text: string }).text } };
          }),
        ],
        contextVersions: options.contextVersions,
        logger,
      });
      let stopped: Promise<void> | undefined;
      const stop = () => (stopped ??= service.stop());
      stops.push(stop);
      return { seen, stop };
    }

    async function gateway(options: { contextVersion?: number } = {}): Promise<ServiceClientDeps> {
      return { bus, contextKey, accounts, contextVersions: new ContextVersions(options.contextVersion) };
    }

    test("a new gateway's ignorable key is dropped by an old copy; any other new key is a retryable upgrade notice", async () => {
      const old = await copy(v1);
      const deps = await gateway();
      const hint = await callService(deps, v2, caller, { input: { text: "hello", color: "red" } });
      expect(hint).toEqual({ ok: true, result: { text: "Saved.", data: { saved: "hello" } } });
      expect(old.seen.at(-1)?.input).toEqual({ text: "hello" });

      const before = old.seen.length;
      const meaning = await callService(deps, v2, caller, { input: { text: "hello", pinned: true } });
      expect(meaning.ok).toBe(false);
      if (meaning.ok) return;
      expect(meaning.error.code).toBe("unavailable");
      expect(meaning.error.message).toContain("upgrade");
      expect(meaning.error.message).toContain('"pinned"');
      expect(meaning.error.message).toContain("Nothing was changed");
      expect(old.seen.length).toBe(before);
      await old.stop();
    });

    test("a new gateway's new tool on an old copy is the same retryable upgrade notice", async () => {
      const old = await copy(v1);
      const deps = await gateway();
      const pin = defineTool({ ...v1, name: "note_pin", input: v1.input, output });
      const reply = await callService(deps, pin, caller, { input: { text: "x" } });
      expect(reply.ok ? null : reply.error.code).toBe("unavailable");
      expect(reply.ok ? "" : reply.error.message).toContain(
        'upgraded: this copy of the orgs service does not have "note_pin"',
      );
      expect(old.seen).toEqual([]);
      await old.stop();
    });

    test("an old gateway's call reaches a new copy whose contract has the new optional key", async () => {
      const fresh = await copy(v2);
      const deps = await gateway();
      const reply = await callService(deps, v1, caller, { input: { text: "from an old gateway" } });
      expect(reply).toEqual({ ok: true, result: { text: "Saved.", data: { saved: "from an old gateway" } } });
      expect(fresh.seen.at(-1)?.input).toEqual({ text: "from an old gateway" });
      await fresh.stop();
    });

    test("a new gateway's structured form reads a copy's whole data; a form that cannot read it sends the data whole", async () => {
      // The bus still carries each tool's whole data (the dashboard reads it); the gateway forms what an MCP client
      // gets. A copy of another release sends the shape its contract has: a form expecting a key that copy does not
      // send must not cost the call.
      const old = await copy(v1);
      const deps = { ...(await gateway()), logger, confirmations: {} as ConfirmationOpener };
      const lean = defineTool({ ...v1, structured: (d) => ({ saved: d.saved.length }) });
      const formed = await forwardToolCall(deps, lean, { text: "hello" }, caller);
      expect(formed).toEqual({ content: [{ type: "text", text: "Saved." }], structuredContent: { saved: 5 } });
      // The next release's form reads `savedAt`, which this copy's data does not have.
      const ahead = defineTool({
        ...v1,
        output: z.object({ saved: z.string(), savedAt: z.string() }),
        structured: (d) => ({ day: d.savedAt.slice(0, 10) }),
      });
      const whole = await forwardToolCall(deps, ahead, { text: "hello" }, caller);
      expect(whole).toEqual({ content: [{ type: "text", text: "Saved." }], structuredContent: { saved: "hello" } });
      await old.stop();
    });

    test("a call context of a version the copy does not read is answered with the versions it reads, not refused as unsigned", async () => {
      const old = await copy(v1, { contextVersions: [1] });
      const raw = await requestRaw(bus, 2);
      expect(raw.ok).toBe(false);
      expect(raw.error.code).toBe("unavailable");
      expect(raw.error.message).not.toContain("not signed");
      expect(raw.error.message).toContain("upgrade");
      expect(raw.accepts).toEqual({ ctx: [1] });
      expect(old.seen).toEqual([]);

      // A newer gateway (it signs version 2) negotiates down to the old copy's version 1 and the call goes through.
      const deps = await gateway({ contextVersion: 2 });
      const reply = await callService(deps, v1, caller, { input: { text: "negotiated" } });
      expect(reply.ok).toBe(true);
      expect(old.seen.map((s) => s.ctx.v)).toEqual([1]);
      await old.stop();
    });

    test("an old gateway (version 1) is read by a new copy that reads versions 1 and 2", async () => {
      const fresh = await copy(v1, { contextVersions: [1, 2] });
      const deps = await gateway({ contextVersion: 1 });
      const reply = await callService(deps, v1, caller, { input: { text: "old ctx" } });
      expect(reply.ok).toBe(true);
      expect(fresh.seen.map((s) => s.ctx.v)).toEqual([1]);
      // And a newer gateway's version 2 goes straight through.
      const newer = await gateway({ contextVersion: 2 });
      expect((await callService(newer, v1, caller, { input: { text: "new ctx" } })).ok).toBe(true);
      expect(fresh.seen.map((s) => s.ctx.v)).toEqual([1, 2]);
      await fresh.stop();
    });
  });
}

/** A tool call with a context signed at `version` (as a newer gateway would), straight on the bus. */
async function requestRaw(bus: Bus, version: number) {
  const iat = Math.floor(Date.now() / 1000);
  const ctx = signPayload(
    {
      v: version,
      sub: "usr_1",
      email: "ada@example.com",
      name: "Ada",
      permissions: [],
      scope: "write",
      client: { kind: "other", name: "test", elicitation: { form: false, url: false } },
      grant: "browser",
      rid: "r1",
      iat,
      exp: iat + 60,
    },
    contextKey,
  );
  const reply = await bus.request("tools.orgs.note_add", encodeJson({ ctx, input: { text: "x" } }), {
    timeoutMs: 5_000,
  });
  return decodeJson(reply.data) as {
    ok: boolean;
    error: { code: string; message: string };
    accepts?: { ctx: number[] };
  };
}
