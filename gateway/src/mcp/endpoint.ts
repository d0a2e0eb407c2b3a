import {
  acceptRequestId,
  inSpan,
  parseFeatures,
  randomId,
  SpanKind,
  TOOL_GROUP_NAMES,
  type Logger,
} from "@hatch/shared";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { BodyTooLargeError } from "../auth/errors.ts";
import { readBodyText } from "../auth/http.ts";
import type { Auth } from "../auth/index.ts";
import type { GatewayConfig } from "../config.ts";
import type { ToolCallDeps } from "./call.ts";
import { SessionEventStore } from "./event-store.ts";
import { createMcpServer, type ConnectionChoice, type RequestScope } from "./server.ts";

const IDLE_MS = 30 * 60_000;

interface SessionEntry {
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  userId: string;
  /** The grant whose token opened it: only tokens of that grant (refreshed ones included) reach it. */
  grantId: string;
  lastSeen: number;
}

/** How long a client waits before reconnecting a dropped SSE stream (the priming event's `retry`). */
const SSE_RETRY_MS = 2_000;

export interface McpEndpointDeps extends Omit<ToolCallDeps, "askUser"> {
  config: GatewayConfig;
  auth: Pick<Auth, "authenticate">;
  version: string;
  logger: Logger;
}

export interface McpEndpoint {
  handle(request: Request): Promise<Response>;
  readonly sessionCount: number;
  /**
   * The first step of a shutdown: new requests are refused (503) and each session's GET event stream ends, since a
   * client holds it open for as long as the server lets it. Calls in flight go on; close() ends the sessions after.
   */
  beginClose(): void;
  close(): Promise<void>;
}

/**
 * `/mcp`: MCP over streamable HTTP with stateful sessions. Every request is authenticated on its own (so a
 * revoked grant stops working on the next call), and a session answers only the grant (user and connection) that
 * opened it: another token of the same user, say a read-only one, cannot drive a session opened with full access.
 */
export function createMcpEndpoint(deps: McpEndpointDeps): McpEndpoint {
  const { config, logger } = deps;
  const sessions = new Map<string, SessionEntry>();
  const allowedOrigin = new URL(config.baseUrl).origin;

  const sweep = setInterval(() => {
    const cutoff = Date.now() - IDLE_MS;
    for (const [id, entry] of sessions) if (entry.lastSeen < cutoff) void closeSession(id, entry);
  }, 60_000);
  sweep.unref();

  async function closeSession(id: string, entry: SessionEntry): Promise<void> {
    sessions.delete(id);
    await entry.transport.close().catch(() => {});
  }

  /** Closes the least recently used of these sessions. */
  async function closeOldest(of: Array<[string, SessionEntry]>): Promise<void> {
    const oldest = of.reduce<[string, SessionEntry] | undefined>(
      (a, b) => (!a || b[1].lastSeen < a[1].lastSeen ? b : a),
      undefined,
    );
    if (oldest) await closeSession(oldest[0], oldest[1]);
  }

  /**
   * Room for one more session of this user: their own oldest goes past the per-user cap; past the global bound,
   * the oldest of whoever holds the most sessions. One user opening many sessions only ever closes their own.
   */
  async function makeRoom(userId: string): Promise<void> {
    const mine = [...sessions].filter(([, e]) => e.userId === userId);
    if (mine.length >= config.maxSessionsPerUser) await closeOldest(mine);
    if (sessions.size < config.maxSessions) return;
    const held = new Map<string, number>();
    for (const entry of sessions.values()) held.set(entry.userId, (held.get(entry.userId) ?? 0) + 1);
    const [biggest] = [...held].reduce((a, b) => (b[1] > a[1] ? b : a));
    await closeOldest([...sessions].filter(([, e]) => e.userId === biggest));
  }

  async function openSession(
    owner: { userId: string; grantId: string },
    stream: boolean,
    choice: ConnectionChoice,
  ): Promise<SessionEntry> {
    await makeRoom(owner.userId);
    const server = createMcpServer(deps, deps.version, logger, choice);
    const entry: SessionEntry = { server, ...owner, lastSeen: Date.now(), transport: undefined as never };
    entry.transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomId(24),
      // Plain JSON answers are cheaper; a client that can answer questions mid-call needs the SSE stream.
      enableJsonResponse: !stream,
      // Resumable streams: each SSE event has an id, a priming event opens the stream with the client's reconnect
      // delay, and a client that lost a stream resumes with Last-Event-ID from this session's bounded store.
      eventStore: new SessionEventStore(),
      retryInterval: SSE_RETRY_MS,
      onsessioninitialized: (id) => void sessions.set(id, entry),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await server.connect(entry.transport);
    return entry;
  }

  let closing = false;

  /** The MCP request's server span: the root of everything the request causes (tool call, bus, services, SQL). */
  function handle(request: Request): Promise<Response> {
    const attributes = { "http.request.method": request.method, "url.path": "/mcp" };
    return inSpan(
      `${request.method} /mcp`,
      { kind: SpanKind.SERVER, parent: request.headers.get("traceparent"), attributes },
      async (span, traceparent) => {
        const response = await handleTraced(request, traceparent);
        span.set("http.response.status_code", response.status);
        if (response.status >= 500) span.fail(String(response.status));
        return response;
      },
    );
  }

  async function handleTraced(request: Request, traceparent: string): Promise<Response> {
    if (closing)
      return rpcError(503, -32000, "The server is restarting. Connect again in a few seconds.", { "Retry-After": "5" });
    const refused = checkHostAndOrigin(request, config.allowedHosts, allowedOrigin);
    if (refused) return refused;

    let bearer: Awaited<ReturnType<McpEndpointDeps["auth"]["authenticate"]>>;
    try {
      bearer = await deps.auth.authenticate(request.headers.get("authorization"));
    } catch (error) {
      // The token check reads revocations from the database: when it is down, say so in JSON, never a framework page.
      logger.warn("could not check a bearer token", { error });
      return rpcError(
        503,
        -32000,
        "Hatch cannot check this connection's sign-in right now (its database is not answering). Try again in a few seconds.",
        { "Retry-After": "5" },
      );
    }
    if (!bearer.ok) {
      return Response.json(
        { error: bearer.error, error_description: bearer.description },
        { status: 401, headers: { "WWW-Authenticate": bearer.wwwAuthenticate } },
      );
    }
    const identity = bearer.identity;

    let parsedBody: unknown;
    if (request.method === "POST") {
      const body = await readBody(request, Math.max(config.maxBodyBytes, MAX_BODY_BYTES));
      if (body instanceof Response) return body;
      parsedBody = body;
    }

    const badArguments = toolCallWithBadArguments(parsedBody);
    if (badArguments !== null)
      return rpcResult(
        badArguments,
        -32602,
        'Invalid params: "arguments" of tools/call must be an object of the tool\'s parameters, e.g. {"address": "my-todo"}.',
      );

    const sessionId = request.headers.get("mcp-session-id");
    let entry: SessionEntry | undefined;
    if (sessionId) {
      entry = sessions.get(sessionId);
      // Another grant's session id (another user's, or another token of the same user) is answered exactly like
      // an unknown one: the spec's 404, on which a client starts a new session with the token it holds now.
      if (!entry || entry.userId !== identity.userId || entry.grantId !== identity.grantId)
        return rpcError(404, -32001, "Session not found. Start a new session with initialize.");
    } else if (request.method === "POST" && isInitializeBody(parsedBody)) {
      const choice = connectionChoice(new URL(request.url));
      if (choice instanceof Response) return choice;
      const owner = { userId: identity.userId, grantId: identity.grantId };
      entry = await openSession(owner, declaresElicitation(parsedBody), choice);
    } else {
      return rpcError(
        400,
        -32000,
        "Bad request: send initialize first, then include the Mcp-Session-Id header it returned.",
      );
    }
    entry.lastSeen = Date.now();

    const scope: RequestScope = {
      identity,
      requestId: acceptRequestId(request.headers.get("x-request-id")),
      traceparent,
    };
    const authInfo = {
      token: "",
      clientId: identity.clientId,
      scopes: identity.scope === "read" ? ["read"] : ["read", "write"],
      extra: scope as unknown as Record<string, unknown>,
    };
    return entry.transport.handleRequest(request, { authInfo, parsedBody });
  }

  return {
    handle,
    get sessionCount() {
      return sessions.size;
    },
    beginClose() {
      closing = true;
      for (const entry of sessions.values()) entry.transport.closeStandaloneSSEStream();
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions].map(([id, entry]) => closeSession(id, entry)));
    },
  };
}

/** DNS-rebinding protection: the Host must be ours, and a browser Origin, when sent, must be ours too. */
function checkHostAndOrigin(request: Request, allowedHosts: string[], allowedOrigin: string): Response | null {
  const host = request.headers.get("host") ?? new URL(request.url).host;
  if (!allowedHosts.includes(host))
    return Response.json(
      { error: "forbidden", error_description: `Host ${host} is not served here.` },
      { status: 403 },
    );
  const origin = request.headers.get("origin");
  if (origin && origin !== allowedOrigin)
    return Response.json(
      { error: "forbidden", error_description: "Cross-origin requests to /mcp are not allowed." },
      { status: 403 },
    );
  return null;
}

/**
 * The least the MCP endpoint accepts: well above the inline publish limit (3 MB decoded is ~4 MB of base64, more
 * with JSON escapes), so an inline publish that is too big reaches the tool and gets its own error naming
 * `upload: true` instead of a bare JSON-RPC -32600. Bigger than the bus payload (8 MB) on purpose: the gateway
 * refuses over-limit files before the bus.
 */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

async function readBody(request: Request, limit: number): Promise<unknown | Response> {
  let text: string;
  try {
    text = await readBodyText(request, limit);
  } catch (error) {
    if (error instanceof BodyTooLargeError)
      return rpcError(413, -32600, `Request body too large: the limit is ${limit} bytes.`);
    throw error;
  }
  try {
    return JSON.parse(text);
  } catch {
    return rpcError(400, -32700, "Parse error: the body is not valid JSON.");
  }
}

/** `features` and `read_only` of the connection URL; an unknown group or value is refused when connecting. */
function connectionChoice(url: URL): ConnectionChoice | Response {
  const features = parseFeatures(url.searchParams.getAll("features"));
  if ("unknown" in features) {
    return rpcError(
      400,
      -32602,
      `Unknown tool group ${features.unknown.map((n) => `"${n}"`).join(", ")} in features. The groups are ${TOOL_GROUP_NAMES.join(", ")} (whoami and service_docs are always there), e.g. /mcp?features=apps,data.`,
    );
  }
  const readOnly = url.searchParams.get("read_only");
  if (readOnly !== null && readOnly !== "true" && readOnly !== "false")
    return rpcError(
      400,
      -32602,
      `read_only in the connection URL must be true or false, not "${readOnly.slice(0, 20)}".`,
    );
  return { groups: features.groups, readOnly: readOnly === "true" };
}

/**
 * The id of a tools/call whose `arguments` is not an object (a string, a list), or null. The SDK would answer it with
 * an internal error and a schema dump; this says in one line what to fix.
 */
function toolCallWithBadArguments(body: unknown): string | number | null {
  if (!body || typeof body !== "object" || Array.isArray(body)) return null;
  const message = body as { method?: unknown; id?: unknown; params?: { arguments?: unknown } };
  if (message.method !== "tools/call" || (typeof message.id !== "string" && typeof message.id !== "number"))
    return null;
  const args = message.params?.arguments;
  return args === undefined || (typeof args === "object" && args !== null && !Array.isArray(args)) ? null : message.id;
}

function rpcResult(id: string | number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id });
}

function isInitializeBody(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

function declaresElicitation(body: unknown): boolean {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.some((m) => isInitializeRequest(m) && m.params.capabilities.elicitation !== undefined);
}

function rpcError(status: number, code: number, message: string, headers?: Record<string, string>): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers });
}
