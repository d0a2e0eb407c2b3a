import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { DomainProgressSchema, isToolError, rpcMethods, TOOL_CONTRACTS, type DomainProgress } from "@hatch/contracts";
import { type Logger } from "@hatch/platform";
import {
  hasTaskClientCapabilityV2,
  type CreateTaskResultV2,
  type DetailedTaskV2,
} from "@modelcontextprotocol/ext-tasks/core/v2";
import {
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { callServiceRpc, type CallerInfo, type ServiceClientDeps } from "../services.ts";

// Long work as MCP tasks (the `io.modelcontextprotocol/tasks` extension of 2026-07-28). buy_domain and custom_domain
// finish their call when the purchase or the connection is recorded; the domain then goes through its stages
// (registering, dns, certificate, live) by the domains service's jobs. A 2026 client that declares the extension gets a
// task for that rest instead of a result: its id is sealed (AES-256-GCM, key derived from the deployment secret) and
// names what it follows (the tool, the domain or hostname) and whom it belongs to (user and grant). No copy keeps a task:
// `tasks/get` on any copy opens the id, checks it against the bearer and asks the domains service where the domain is
// (`domain.progress`, its own stage data).

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** How long a task may be asked about: the stage checks of an unproven hostname stop after 7 days. */
export const TASK_TTL_MS = 7 * 24 * 3_600_000;
/** How often a client should ask (the DNS and certificate checks run every few seconds at most). */
export const TASK_POLL_MS = 2_000;

/** The tools whose rest runs as a task, what they answer when the rest begins, and what is followed. */
const FOLLOWED: Record<
  string,
  { kind: "bought" | "custom"; status: string; name: (data: Record<string, unknown>) => unknown }
> = {
  buy_domain: { kind: "bought", status: "bought", name: (data) => data.domain },
  custom_domain: { kind: "custom", status: "connected", name: (data) => data.hostname },
};

const TaskRefSchema = z.object({
  v: z.literal(1),
  sub: z.string(),
  grant: z.string(),
  tool: z.enum(["buy_domain", "custom_domain"]),
  name: z.string(),
  /** When the task was made (ms); createdAt and the ttl count from it. */
  at: z.number(),
});
type TaskRef = z.infer<typeof TaskRefSchema>;

type JsonObject = Extract<DetailedTaskV2, { status: "completed" }>["result"];

const IV_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX = "t1.";

export function sealTaskId(key: Buffer, ref: TaskRef): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(ref), "utf8"), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** The task an id names, or null when it is not one of ours (malformed, altered, sealed under another key). */
export function openTaskId(key: Buffer, id: string): TaskRef | null {
  if (!id.startsWith(PREFIX) || id.length > 2_000) return null;
  const raw = Buffer.from(id.slice(PREFIX.length), "base64url");
  if (raw.length <= IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      "utf8",
    );
    const parsed = TaskRefSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Whether this request's client declared the tasks extension (2026-07-28 `_meta` capabilities). */
export function declaresTasks(server: Server): boolean {
  return hasTaskClientCapabilityV2({ _meta: { [CLIENT_CAPABILITIES_META_KEY]: server.getClientCapabilities() } });
}

/**
 * The task that follows this finished call's rest, or null when there is nothing left to follow (an error, a question
 * for the user, a domain live already, a tool that is not followed).
 */
export function taskFor(
  key: Buffer,
  caller: CallerInfo,
  tool: string,
  result: CallToolResult,
  nowMs = Date.now(),
): CreateTaskResultV2 | null {
  const followed = FOLLOWED[tool];
  const data = result.structuredContent as Record<string, unknown> | undefined;
  if (!followed || result.isError || !data || data.status !== followed.status) return null;
  const stage = tool === "buy_domain" ? data.stage : (data.domain as { stage?: unknown } | null)?.stage;
  const name = followed.name(data);
  if (stage === "live" || typeof name !== "string") return null;
  const taskId = sealTaskId(key, {
    v: 1,
    sub: caller.identity.userId,
    grant: caller.identity.grantId,
    tool: tool as TaskRef["tool"],
    name,
    at: nowMs,
  });
  const first = result.content[0];
  const created = new Date(nowMs).toISOString();
  return {
    resultType: "task",
    taskId,
    status: "working",
    ...(first?.type === "text" ? { statusMessage: first.text } : {}),
    createdAt: created,
    lastUpdatedAt: created,
    ttlMs: TASK_TTL_MS,
    pollIntervalMs: TASK_POLL_MS,
  };
}

export interface TaskMethodDeps extends ServiceClientDeps {
  logger: Logger;
  taskKey: Buffer;
}

const TaskParamsSchema = z.object({ taskId: z.string().min(1).max(2_000) }).passthrough();

/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` on a 2026-07-28 server. Every one checks the id against the bearer
 * (another user's or another grant's task is "not found", as an unknown one). Hatch's tasks ask nothing of the client
 * (a question is asked before the task exists), so an update changes nothing; a cancel is acknowledged and the work
 * goes on (a bought domain stays bought; custom_domain with action disconnect takes a hostname off).
 */
export function registerTaskMethods(
  server: Server,
  deps: TaskMethodDeps,
  callerOf: (ctx: ServerContext) => CallerInfo | undefined,
): void {
  const refOf = (params: { taskId: string }, caller: CallerInfo | undefined): TaskRef => {
    if (!declaresTasks(server))
      throw new ProtocolError(
        ProtocolErrorCode.MissingRequiredClientCapability,
        "Missing required client capability: the tasks extension.",
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      );
    const ref = openTaskId(deps.taskKey, params.taskId);
    if (!ref || !caller || ref.sub !== caller.identity.userId || ref.grant !== caller.identity.grantId)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Failed to retrieve task: Task not found");
    if (Date.now() - ref.at > TASK_TTL_MS)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Failed to retrieve task: Task has expired");
    return ref;
  };

  server.setRequestHandler("tasks/get", { params: TaskParamsSchema }, async (params, ctx) => {
    const caller = callerOf(ctx);
    const ref = refOf(params, caller);
    return { resultType: "complete", ...(await taskNow(deps, caller!, ref, params.taskId)) };
  });
  server.setRequestHandler("tasks/update", { params: TaskParamsSchema }, async (params, ctx) => {
    refOf(params, callerOf(ctx));
    return { resultType: "complete" };
  });
  server.setRequestHandler("tasks/cancel", { params: TaskParamsSchema }, async (params, ctx) => {
    refOf(params, callerOf(ctx));
    return { resultType: "complete" };
  });
}

/** Where the task is now, from the domains service's stage data. */
async function taskNow(
  deps: TaskMethodDeps,
  caller: CallerInfo,
  ref: TaskRef,
  taskId: string,
): Promise<DetailedTaskV2> {
  const followed = FOLLOWED[ref.tool]!;
  const base = {
    taskId,
    createdAt: new Date(ref.at).toISOString(),
    ttlMs: TASK_TTL_MS,
    pollIntervalMs: TASK_POLL_MS,
  };
  let progress: DomainProgress;
  try {
    progress = await callServiceRpc(
      deps,
      "domains",
      rpcMethods.domains.progress,
      { kind: followed.kind, name: ref.name },
      DomainProgressSchema,
      caller,
    );
  } catch (error) {
    if (isToolError(error) && error.code === "not_found") {
      // Taken off meanwhile (disconnected, its app deleted): the task ends with the tool's error, as a call would.
      const result: CallToolResult = {
        resultType: "complete",
        isError: true,
        content: [{ type: "text", text: `${error.message} (not_found)` }],
      };
      return {
        ...base,
        status: "completed",
        lastUpdatedAt: new Date().toISOString(),
        statusMessage: error.message,
        result: result as JsonObject,
      };
    }
    // The domains service cannot say right now: the work goes on, and so does the task.
    if (!isToolError(error)) deps.logger.error("task progress failed", { tool: ref.tool, error });
    return {
      ...base,
      status: "working",
      lastUpdatedAt: new Date().toISOString(),
      statusMessage: "Hatch cannot check right now; the work goes on. Ask again in a moment.",
    };
  }
  if (progress.state === "working")
    return { ...base, status: "working", lastUpdatedAt: progress.updatedAt, statusMessage: progress.text };
  const contract = TOOL_CONTRACTS.find((c) => c.name === ref.tool)!;
  const structured = contract.output.safeParse(progress.data);
  const result: CallToolResult = {
    resultType: "complete",
    ...(progress.state === "failed" ? { isError: true } : {}),
    content: [{ type: "text", text: progress.text }],
    ...(structured.success && progress.state === "live"
      ? { structuredContent: structured.data as Record<string, unknown> }
      : {}),
  };
  return {
    ...base,
    status: "completed",
    lastUpdatedAt: progress.updatedAt,
    statusMessage: progress.text,
    result: result as JsonObject,
  };
}
