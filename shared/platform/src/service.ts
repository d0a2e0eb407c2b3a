import type { z } from "zod";
import { decodeJson, encodeJson, type Bus, type BusMessage, type BusReply, type BusSubscription } from "./bus/types.ts";
import {
  acceptRequestId,
  type CallContext,
  type CallReply,
  CallRequestSchema,
  checkConfirm,
  type ConfirmClaims,
  confirmProblem,
  CONTEXT_VERSIONS_READ,
  describeIssues,
  HEADER_REQUEST_ID,
  HEADER_TRACEPARENT,
  isAskReply,
  isToolError,
  openContext,
  type RpcReply,
  RpcRequestSchema,
  type OpenedContext,
  type Question,
  type ServiceName,
  type ToolContract,
  ToolError,
  type ToolInput,
  type ToolOutput,
  traceIdOf,
} from "@hatch/contracts";
import { databaseUnavailableMessage, isDatabaseUnavailable } from "./db-errors.ts";
import { withDeadlineOr } from "./deadline.ts";
import type { OutboxRelay } from "./events/outbox.ts";
import type { Logger } from "./logger.ts";
import { metrics, watchOutbox } from "./telemetry/metrics.ts";
import { inSpan, SpanKind } from "./telemetry/tracing.ts";

export interface ToolCall<I> {
  ctx: CallContext;
  input: I;
  /** The user's answer to an earlier `ask`, with its confirm token. */
  answer?: Record<string, unknown>;
  confirm?: string;
  /**
   * Set when `confirm` was checked (signature, user, tool, exact input, expiry). The handler makes it single
   * use by calling `consumeConfirm` inside the transaction that does the action.
   */
  confirmation?: ConfirmClaims;
  requestId: string;
  log: Logger;
}

export type ToolOutcome<O> = { text: string; data: O } | { ask: Question };

export type ToolHandler<C extends ToolContract> = (call: ToolCall<ToolInput<C>>) => Promise<ToolOutcome<ToolOutput<C>>>;

export interface ToolBinding {
  readonly contract: ToolContract;
  readonly handler: (call: ToolCall<unknown>) => Promise<ToolOutcome<unknown>>;
}

/** Pairs a contract with its handler; the handler's input and output types come from the contract. */
export function bindTool<C extends ToolContract>(contract: C, handler: ToolHandler<C>): ToolBinding {
  return { contract, handler: handler as ToolBinding["handler"] };
}

export interface RpcCall<I> {
  /** Present when the caller signed one; methods that act for a user must require it. */
  ctx: CallContext | null;
  input: I;
  requestId: string;
  log: Logger;
}

export interface RpcBinding {
  readonly input: z.ZodType;
  /** Whether a valid signed context is required (true for anything acting as a user). */
  readonly requiresContext: boolean;
  /** The method may write events: the outbox is flushed before it answers. */
  readonly writes: boolean;
  readonly handler: (call: RpcCall<unknown>) => Promise<unknown>;
}

export function bindRpc<S extends z.ZodType>(
  input: S,
  handler: (call: RpcCall<z.infer<S>>) => Promise<unknown>,
  options: { requiresContext?: boolean; writes?: boolean } = {},
): RpcBinding {
  return {
    input,
    requiresContext: options.requiresContext ?? true,
    writes: options.writes ?? false,
    handler: handler as RpcBinding["handler"],
  };
}

export interface ServiceOptions {
  name: ServiceName;
  version: string;
  bus: Bus;
  /** Verifies the gateway's signature on every call context. */
  contextKey: Buffer;
  /** Signs and checks the confirm tokens of this service's questions; without it, no answer is accepted. */
  confirmKey?: Buffer;
  /** Every contract this service owns; those without a binding answer "not built yet". */
  contracts: readonly ToolContract[];
  tools: readonly ToolBinding[];
  rpc?: Readonly<Record<string, RpcBinding>>;
  /**
   * Turns a valid input into the one the handler sees, before a confirmation is checked against it (so a question
   * asked about the prepared input matches the answered call): apps resolves an app given by URL or name to its
   * address here.
   */
  prepareInput?: (contract: ToolContract, input: unknown, ctx: CallContext) => Promise<unknown>;
  /**
   * The relay of this service's event outbox. The runtime starts and stops it, and flushes it after every
   * tool call that may change something (and rpc methods bound with `writes`) before answering, so the
   * events of a change are on the stream by the time its caller hears back.
   */
  outbox?: OutboxRelay;
  /** The call context versions this copy reads (default: this build's); tests set others to act as another release. */
  contextVersions?: readonly number[];
  logger: Logger;
}

/** Longest a reply waits for the outbox flush; whatever is left goes out on the relay's next poll. */
const FLUSH_WAIT_MS = 2_000;

export interface RunningService {
  readonly name: ServiceName;
  /** Public HTTP endpoints the service serves itself (the apps service's app host), by purpose. */
  readonly urls?: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

/** Subscribes a service to its tool and rpc subjects (queue group = service name) and answers them. */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { name, bus, logger } = options;
  const contextVersions = options.contextVersions ?? CONTEXT_VERSIONS_READ;
  const owned = new Map(options.contracts.filter((c) => c.service === name).map((c) => [c.name, c]));
  const handlers = new Map(options.tools.map((b) => [b.contract.name, b]));
  for (const tool of handlers.keys()) {
    if (!owned.has(tool)) throw new Error(`service ${name} binds tool "${tool}" that it does not own`);
  }
  const rpc: Record<string, RpcBinding> = {
    health: bindRpc(RpcRequestSchema.shape.input, async () => ({ service: name, version: options.version }), {
      requiresContext: false,
    }),
    ...options.rpc,
  };

  const subs: BusSubscription[] = [
    bus.subscribe(`tools.${name}.*`, (msg) => answerTool(msg), { queue: name }),
    bus.subscribe(`rpc.${name}.>`, (msg) => answerRpc(msg), { queue: name }),
  ];
  await bus.flush();
  options.outbox?.start();
  const outbox = options.outbox;
  const unwatchOutbox = outbox ? watchOutbox(name, () => outbox.lag()) : undefined;
  logger.info("service ready", { service: name, version: options.version, tools: [...handlers.keys()] });

  /** The handler's span: a child of the caller's `send` span, so the SQL it runs nests under the MCP request. */
  const serverSpan = <T>(msg: BusMessage, fn: Parameters<typeof inSpan<T>>[2]) =>
    inSpan(
      `process ${msg.subject}`,
      {
        kind: SpanKind.SERVER,
        parent: msg.headers[HEADER_TRACEPARENT] ?? null,
        attributes: {
          "messaging.destination.name": msg.subject,
          "messaging.operation.type": "process",
          "hatch.service": name,
        },
      },
      fn,
    );

  function answerTool(msg: BusMessage): Promise<BusReply> {
    return serverSpan(msg, async (span) => {
      const tool = msg.subject.split(".")[2] ?? "";
      const requestId = acceptRequestId(msg.headers[HEADER_REQUEST_ID]);
      const log = logger.child({
        service: name,
        tool,
        rid: requestId,
        trace: traceIdOf(msg.headers[HEADER_TRACEPARENT]),
      });
      const started = performance.now();
      const reply = await runTool(tool, msg, requestId, log);
      if (reply.ok && !isAskReply(reply) && owned.get(tool)?.class !== "read") await flushOutbox();
      const seconds = (performance.now() - started) / 1000;
      const outcome = reply.ok ? (isAskReply(reply) ? "ask" : "ok") : reply.error.code;
      // Only tools this service owns become label values: a caller cannot grow the series with made-up names.
      const label = owned.has(tool) ? tool : "unknown";
      metrics.serviceToolCalls.inc({ service: name, tool: label, outcome });
      metrics.serviceToolCallSeconds.observe({ service: name, tool: label }, seconds);
      span.set("hatch.tool", tool);
      span.set("hatch.outcome", outcome);
      if (!reply.ok && reply.error.code === "internal") span.fail("internal");
      log.info("tool call", { ms: Math.round(seconds * 100_000) / 100, outcome });
      // No headers on a reply: the caller knows its request id, and NATS headers cost an encode here and a decode in
      // the caller on every call.
      return { data: encodeJson(reply) };
    });
  }

  async function runTool(tool: string, msg: BusMessage, requestId: string, log: Logger): Promise<CallReply> {
    try {
      const request = CallRequestSchema.safeParse(safeJson(msg.data));
      if (!request.success) throw new ToolError("invalid_input", "The call envelope was malformed.");
      const opened = openContext(request.data.ctx, options.contextKey, contextVersions);
      if (!opened.ok && opened.reason === "version") return versionReply(opened, log);
      if (!opened.ok) {
        log.warn("refused call without a valid context");
        throw new ToolError("forbidden", "This call was not signed by the Hatch gateway, so it was refused.");
      }
      const ctx = opened.ctx;
      const contract = owned.get(tool);
      // The gateway signed a call to a tool this copy does not own: a newer gateway during a rolling deploy.
      if (!contract)
        throw new ToolError(
          "unavailable",
          `Hatch is being upgraded: this copy of the ${name} service does not have "${tool}" yet. Nothing was changed. Try again in a minute.`,
        );
      checkAllowed(contract, ctx);
      const binding = handlers.get(tool);
      if (!binding) {
        throw new ToolError(
          "unavailable",
          `The tool "${tool}" is not available on this Hatch server yet (the ${name} service does not handle it). Nothing was changed.`,
        );
      }
      const input = parseCallInput(contract, request.data.input, request.data.ignorable ?? [], name, log);
      const prepared = options.prepareInput ? await options.prepareInput(contract, input, ctx) : input;
      const confirmation = request.data.confirm ? checkAnswer(request.data.confirm, ctx, tool, prepared) : undefined;
      const outcome = await binding.handler({
        ctx,
        input: prepared,
        answer: request.data.answer,
        confirm: request.data.confirm,
        confirmation,
        requestId,
        log: log.child({ user: ctx.sub }),
      });
      if ("ask" in outcome) return { ok: true, ask: outcome.ask };
      const data = contract.output.safeParse(outcome.data);
      if (!data.success) {
        log.error("handler output does not match the contract", { issues: describeIssues(data.error) });
        throw new Error("output contract violation");
      }
      return { ok: true, result: { text: outcome.text, data: data.data as Record<string, unknown> } };
    } catch (error) {
      return { ok: false, error: toWireError(error, name, requestId, log, owned.get(tool)?.class !== "read") };
    }
  }

  /** A context the gateway signed in a version this copy does not read: say which it reads, so the caller signs again. */
  function versionReply(opened: Extract<OpenedContext, { reason: "version" }>, log: Logger) {
    log.info("call context in a version this copy does not read", { version: opened.version, reads: contextVersions });
    return {
      ok: false as const,
      error: {
        code: "unavailable" as const,
        message: `Hatch is being upgraded: this copy of the ${name} service cannot read the call yet. Nothing was changed. Try again in a minute.`,
      },
      accepts: { ctx: [...contextVersions] },
    };
  }

  function checkAnswer(token: string, ctx: CallContext, tool: string, input: unknown): ConfirmClaims {
    if (!options.confirmKey) throw new ToolError("invalid_input", confirmProblem("invalid"));
    const check = checkConfirm(options.confirmKey, token, { sub: ctx.sub, tool, input });
    if (!check.ok) throw new ToolError("invalid_input", confirmProblem(check.reason));
    return check.claims;
  }

  function answerRpc(msg: BusMessage): Promise<BusReply> {
    return serverSpan(msg, () => runRpc(msg));
  }

  async function runRpc(msg: BusMessage): Promise<BusReply> {
    const method = msg.subject.split(".").slice(2).join(".");
    const requestId = acceptRequestId(msg.headers[HEADER_REQUEST_ID]);
    const log = logger.child({
      service: name,
      rpc: method,
      rid: requestId,
      trace: traceIdOf(msg.headers[HEADER_TRACEPARENT]),
    });
    let reply: RpcReply;
    try {
      const binding = rpc[method];
      if (!binding) throw new ToolError("not_found", `The ${name} service has no method "${method}".`);
      const request = RpcRequestSchema.safeParse(safeJson(msg.data));
      if (!request.success) throw new ToolError("invalid_input", "The call envelope was malformed.");
      const opened = request.data.ctx ? openContext(request.data.ctx, options.contextKey, contextVersions) : null;
      if (opened && !opened.ok && opened.reason === "version") {
        const { ok, error, accepts } = versionReply(opened, log);
        return { data: encodeJson({ ok, error, accepts }) };
      }
      const ctx = opened?.ok ? opened.ctx : null;
      if (binding.requiresContext && !ctx) {
        log.warn("refused rpc without a valid context");
        throw new ToolError("forbidden", "This call was not signed by the Hatch gateway, so it was refused.");
      }
      const input = binding.input.safeParse(request.data.input);
      if (!input.success) throw new ToolError("invalid_input", describeIssues(input.error));
      reply = { ok: true, result: await binding.handler({ ctx, input: input.data, requestId, log }) };
      if (binding.writes) await flushOutbox();
    } catch (error) {
      reply = { ok: false, error: toWireError(error, name, requestId, log, rpc[method]?.writes === true) };
    }
    return { data: encodeJson(reply) };
  }

  async function flushOutbox(): Promise<void> {
    if (!options.outbox) return;
    await withDeadlineOr(options.outbox.flush(), FLUSH_WAIT_MS, undefined);
  }

  return {
    name,
    async stop() {
      // Drained, not unsubscribed: NATS stops routing calls here, and every call it routed before (on its way, or
      // running) is answered, so a copy that stops while others run loses none (the caller's wait is bounded by the
      // shutdown step). Then the outbox sends the events of those last calls.
      await Promise.all(subs.map((sub) => sub.drain()));
      unwatchOutbox?.();
      await options.outbox?.stop();
    },
  };
}

/**
 * The tool's input by this copy's contract. Keys this copy does not know come from a newer caller (the gateway checked
 * the input against its own contract, a newer one during a rolling deploy): those the caller marks `ignorable` are
 * dropped; any other is a retryable `unavailable` naming the key, since doing the call without it would do something
 * else than asked.
 */
function parseCallInput(
  contract: ToolContract,
  raw: unknown,
  ignorable: readonly string[],
  service: string,
  log: Logger,
): unknown {
  const first = contract.input.safeParse(raw);
  if (first.success) return first.data;
  const invalid = () =>
    new ToolError(
      "invalid_input",
      `Invalid arguments for ${contract.name}: ${describeIssues(first.error, 5, contract.input)}`,
    );
  const unknown: { path: PropertyKey[]; key: string }[] = [];
  for (const issue of first.error.issues) {
    if (issue.code !== "unrecognized_keys") throw invalid();
    for (const key of issue.keys) unknown.push({ path: issue.path, key });
  }
  const named = (u: { path: PropertyKey[]; key: string }) =>
    [...u.path, u.key].map((part) => (typeof part === "number" ? "*" : String(part))).join(".");
  const refused = unknown.filter((u) => !ignorable.includes(named(u)));
  if (refused.length > 0) {
    const keys = refused.map((u) => `"${named(u)}"`).join(", ");
    log.info("input keys from a newer caller", { keys: refused.map(named) });
    throw new ToolError(
      "unavailable",
      `Hatch is being upgraded: this copy of the ${service} service does not know ${keys} of ${contract.name} yet. Nothing was changed. Try the same call again in a minute.`,
    );
  }
  const stripped = structuredClone(raw);
  for (const u of unknown) {
    let at: unknown = stripped;
    for (const part of u.path) at = (at as Record<PropertyKey, unknown>)?.[part as string];
    if (at && typeof at === "object") delete (at as Record<string, unknown>)[u.key];
  }
  const second = contract.input.safeParse(stripped);
  if (!second.success) throw invalid();
  log.info("dropped ignorable input keys from a newer caller", { keys: unknown.map(named) });
  return second.data;
}

/** Checks that hold for every tool, in the service itself and not only in the gateway. */
function checkAllowed(contract: ToolContract, ctx: CallContext): void {
  if (contract.class !== "read" && ctx.scope === "read") {
    throw new ToolError(
      "forbidden",
      `This connection was approved for read-only access, so "${contract.name}" (which changes things) was refused. ` +
        "Nothing was changed. To allow changes, the user can reconnect this client and approve full access.",
    );
  }
  if (contract.hiddenFor.includes(ctx.client.kind)) {
    throw new ToolError("forbidden", `"${contract.name}" is not offered in this client.`);
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return decodeJson(data);
  } catch {
    return undefined;
  }
}

/**
 * Expected failures keep their code and message; a database that cannot be reached is `unavailable` (try again);
 * anything else is logged in full and shown only as `internal`. `changes`: the call may have changed something.
 */
function toWireError(
  error: unknown,
  service: string,
  requestId: string,
  log: Logger,
  changes: boolean,
): { code: ToolError["code"]; message: string } {
  if (isToolError(error)) return { code: error.code, message: error.message };
  if (isDatabaseUnavailable(error)) {
    log.warn("database unavailable", { error });
    return { code: "unavailable", message: databaseUnavailableMessage(changes) };
  }
  log.error("unexpected failure", { error });
  return {
    code: "internal",
    message: `Something went wrong in the Hatch ${service} service. Try again; if it keeps failing, report request id ${requestId}.`,
  };
}
