import { acceptRequestId, deriveKey, parseFeatures, randomId, TOOL_GROUP_NAMES } from "@hatch/contracts";
import {
  BusError,
  decodeJson,
  encodeJson,
  inSpan,
  metrics,
  SpanKind,
  type BusSubscription,
  type Logger,
} from "@hatch/platform";
import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type JSONRPCMessage,
  type Server,
  type Transport,
  type TransportSendOptions,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import { insufficientScope } from "../auth/challenges.ts";
import { BodyTooLargeError } from "../auth/errors.ts";
import { readBodyText } from "../auth/http.ts";
import type { Auth } from "../auth/index.ts";
import type { GatewayConfig } from "../config.ts";
import type { ToolCallDeps } from "./call.ts";
import { createChangeFeed } from "./changes.ts";
import { createEventLog, postedRequests, SessionEventStore } from "./event-store.ts";
import { resumeStream } from "./resume.ts";
import { createMcpServer, type ConnectionChoice, type RequestScope } from "./server.ts";
import { declaresViews } from "./views/index.ts";
import { readGrantRefusal, writeOnReadGrant } from "./scope-check.ts";
import { createSessionDirectory, type SessionRecord } from "./session-directory.ts";

const IDLE_MS = 30 * 60_000;
/** Waits between the tries of a session record that could not be written (about a minute in all). */
const RECORD_RETRY_MS = [250, 500, 1_000, 1_500, 2_000, 4_000, 8_000, 15_000, 30_000];
/** How many of those the client's initialize waits for (3.25 s); the rest run in the background. */
const RECORD_RETRIES_AWAITED = 4;
/** A session in use writes its record again at most this often (each write restarts the record's idle time). */
const TOUCH_EVERY_MS = 5 * 60_000;

interface SessionEntry {
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  /** The server's side of the transport: names the requests it sends after this copy (answers find their way back). */
  wire: CopyTransport;
  userId: string;
  grantId: string;
  lastSeen: number;
  lastTouched: number;
}

/** How long a client waits before reconnecting a dropped SSE stream (the priming event's `retry`). */
const SSE_RETRY_MS = 2_000;

/** Where another copy sends this copy the answer to a question it asked a 2025 client (`<copy>` is its id). */
const answerSubject = (copy: string) => `broadcast.gateway.mcp.answer.${copy}`;
/** Asked by a copy that follows another copy's stream: is that copy still there (no responders = gone)? */
const aliveSubject = (copy: string) => `rpc.gateway.mcp.alive.${copy}`;
/** A 2025 session was ended (DELETE) on one copy: every copy forgets its local half. */
const SESSION_CLOSED = "broadcast.gateway.mcp.session.closed";

export interface McpEndpointDeps extends Omit<ToolCallDeps, "askUser" | "offerLink" | "deferQuestion"> {
  config: GatewayConfig;
  auth: Pick<Auth, "authenticate">;
  version: string;
  logger: Logger;
}

export interface McpEndpoint {
  handle(request: Request): Promise<Response>;
  /** 2025-11-25 sessions this copy holds in memory (any copy can rebuild any session from its record). */
  readonly sessionCount: number;
  /**
   * The first step of a shutdown: new requests are refused (503) and each session's GET event stream ends, since a
   * client holds it open for as long as the server lets it. Calls in flight go on; close() ends the sessions after.
   */
  beginClose(): void;
  close(): Promise<void>;
}

/**
 * `/mcp`, for both eras of the protocol on one endpoint, served by any gateway copy:
 * - 2026-07-28 (a request with the `_meta` envelope): stateless, one server per request from the SDK's
 *   `createMcpHandler` (server/discover, Mcp-Method/Mcp-Name checks, `ttlMs`/`cacheScope`); a question to the user is
 *   an `input_required` answer whose `requestState` is sealed and bound to user, grant, tool and arguments.
 * - 2025-11-25 (initialize, then Mcp-Session-Id): sessions whose record (user, grant, the client's initialize) is in
 *   the session directory, so a copy that has not seen a session rebuilds it by replaying the initialize. A form the
 *   gateway shows mid-call waits on the copy that asked; the client's answer reaches it over the bus from any copy.
 * Every request is authenticated on its own (a revoked grant stops working on the next call); a session answers only
 * the user and the grant that opened it.
 */
export function createMcpEndpoint(deps: McpEndpointDeps): McpEndpoint {
  const { config, logger } = deps;
  const sessions = new Map<string, SessionEntry>();
  const allowedOrigin = new URL(config.baseUrl).origin;
  const directory = createSessionDirectory(deps.bus, IDLE_MS, logger);
  const copy = randomId(9);
  const events = createEventLog(deps.bus, logger);
  /** Aborted when this copy begins to close: its listen streams and the streams it resumes for other copies end (the
   * client listens or reconnects again, on another copy). */
  const closingSignal = new AbortController();
  const serverDeps = {
    ...deps,
    requestStateKey: deriveKey(config.secret, "mcp-request-state"),
    taskKey: deriveKey(config.secret, "mcp-task-id"),
    views: { baseUrl: config.baseUrl, appOrigins: config.appOrigins },
  };
  // subscriptions/listen streams: fed on every copy from Hatch's events, each stream only its user's changes.
  const changes = createChangeFeed(deps);

  const modern = createMcpHandler(
    (ctx) => {
      const choice = ctx.requestInfo ? connectionChoice(new URL(ctx.requestInfo.url)) : null;
      return createMcpServer(
        serverDeps,
        deps.version,
        logger,
        choice && !(choice instanceof Response) ? choice : undefined,
        ctx.era,
        (ctx.authInfo?.extra as RequestScope | undefined)?.views === true,
      );
    },
    {
      legacy: "reject",
      bus: changes.events,
      maxRequestBodySize: Math.max(config.maxBodyBytes, MAX_BODY_BYTES),
      onerror: (error) => logger.debug("MCP request refused", { error: error.message }),
    },
  );

  const subscriptions: BusSubscription[] = [
    // An answer to a question this copy asked, posted to another copy.
    deps.bus.subscribe(answerSubject(copy), (msg) => {
      const { session, message } = decodeJson(msg.data) as { session?: string; message?: JSONRPCMessage };
      const entry = session ? sessions.get(session) : undefined;
      if (entry && message) entry.wire.deliver(message);
    }),
    deps.bus.subscribe(aliveSubject(copy), () => ({ data: encodeJson({ alive: true }) })),
    deps.bus.subscribe(SESSION_CLOSED, (msg) => {
      const { session } = decodeJson(msg.data) as { session?: string };
      const entry = session ? sessions.get(session) : undefined;
      if (session && entry) void closeSession(session, entry);
    }),
  ];

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
   * Room for one more session of this user in this copy's memory: their own oldest goes past the per-user cap; past
   * the global bound, the oldest of whoever holds the most sessions. One user opening many sessions only ever closes
   * their own. (A session closed here for room keeps its record: a later request rebuilds it.)
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

  /**
   * A session's server and transport on this copy. `restore` names the id of a session opened elsewhere (or before a
   * restart), whose initialize is replayed; otherwise the client's initialize opens a new one.
   */
  async function openSession(
    identity: { userId: string; grantId: string },
    record: Omit<SessionRecord, "user" | "grant">,
    restore?: string,
  ): Promise<SessionEntry> {
    await makeRoom(identity.userId);
    const id = restore ?? randomId(24);
    const capabilities = (record.init as { capabilities?: Parameters<typeof declaresViews>[0] }).capabilities;
    const server = createMcpServer(
      serverDeps,
      deps.version,
      logger,
      record.choice as ConnectionChoice,
      "legacy",
      declaresViews(capabilities),
    );
    const now = Date.now();
    const entry: SessionEntry = {
      server,
      userId: identity.userId,
      grantId: identity.grantId,
      lastSeen: now,
      lastTouched: now,
      transport: undefined as never,
      wire: undefined as never,
    };
    entry.transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      // Plain JSON answers are cheaper; a client that can answer questions mid-call needs the SSE stream.
      enableJsonResponse: !record.stream,
      // Resumable streams: each SSE event has an id, a priming event opens the stream with the client's reconnect
      // delay, and every event goes to the log all copies share; a client that lost a stream resumes with
      // Last-Event-ID on any copy (resume.ts).
      eventStore: new SessionEventStore(events, id, copy, logger),
      retryInterval: SSE_RETRY_MS,
      onsessioninitialized: async (id) => {
        sessions.set(id, entry);
        if (!restore) await recordSession(id, entry, { ...record, user: identity.userId, grant: identity.grantId });
      },
      onsessionclosed: async (id) => {
        sessions.delete(id);
        await directory.delete(id).catch(() => {});
        deps.bus.publish(SESSION_CLOSED, encodeJson({ session: id }));
      },
    });
    entry.wire = new CopyTransport(entry.transport, copy);
    await server.connect(entry.wire);
    if (restore) await replayInitialize(entry, restore, record);
    return entry;
  }

  /**
   * Writes a new session's record so every copy can serve it. When the directory does not answer (JetStream electing a
   * leader after a NATS node went away, a second or two), the client's initialize waits a few seconds for it: its next
   * request may reach another copy, which answers 404 for a session it cannot find, and the client must start over.
   * Past that wait the session starts anyway, served by this copy alone, and the record is written in the background
   * until it lands, as long as the session lives here and the copy runs.
   */
  async function recordSession(id: string, entry: SessionEntry, value: SessionRecord): Promise<void> {
    const put = () => directory.put(id, value).then(() => true);
    const first = await put().catch((error: unknown) => {
      logger.warn("MCP session not recorded yet: only this copy serves it until it is", { error });
      return false;
    });
    if (first) return;
    const current = () => sessions.get(id) === entry && !closingSignal.signal.aborted;
    const waited = RECORD_RETRY_MS.slice(0, RECORD_RETRIES_AWAITED);
    for (const wait of waited) {
      await Bun.sleep(wait);
      if (!current()) return;
      if (await put().catch(() => false)) return;
    }
    void (async () => {
      for (const wait of RECORD_RETRY_MS.slice(waited.length)) {
        await Bun.sleep(wait);
        if (!current()) return;
        if (await put().catch(() => false)) {
          logger.info("MCP session recorded: every copy can serve it");
          return;
        }
      }
      logger.warn("MCP session not recorded: only this copy can serve it");
    })();
  }

  /** Brings a fresh server and transport to where the session is: the client's initialize, then initialized. */
  async function replayInitialize(
    entry: SessionEntry,
    id: string,
    record: Omit<SessionRecord, "user" | "grant">,
  ): Promise<void> {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const init = { jsonrpc: "2.0" as const, id: `${copy}-restore`, method: "initialize", params: record.init };
    const opened = await entry.transport.handleRequest(
      new Request("http://gateway/mcp", { method: "POST", headers, body: "" }),
      { parsedBody: init },
    );
    await opened.text();
    const version = typeof record.init.protocolVersion === "string" ? record.init.protocolVersion : "2025-11-25";
    const sessionHeaders = { ...headers, "mcp-session-id": id, "mcp-protocol-version": version };
    const initialized = { jsonrpc: "2.0" as const, method: "notifications/initialized" };
    await entry.transport.handleRequest(
      new Request("http://gateway/mcp", { method: "POST", headers: sessionHeaders, body: "" }),
      { parsedBody: initialized },
    );
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

    const legacy =
      request.method === "POST"
        ? await isLegacyRequest(request, parsedBody, { maxRequestBodySize: MAX_BODY_BYTES })
        : await isLegacyRequest(request);
    if (!legacy) {
      const choice = connectionChoice(new URL(request.url));
      if (choice instanceof Response) return choice;
      // A read-only grant asking to change something: 403 insufficient_scope, so the client can ask for full access
      // (step-up authorization). 2025 sessions keep the tool error (scope-check.ts, gateway/DESIGN.md).
      const refusedTool = identity.scope === "read" ? writeOnReadGrant(parsedBody, choice.groups) : null;
      if (refusedTool) {
        metrics.mcpToolCalls.inc({ tool: refusedTool, outcome: "forbidden" });
        return insufficientScope(config, readGrantRefusal(refusedTool));
      }
      // Its server advertises MCP Apps only when the request's client declared it (server.ts).
      scope.views = declaresViews(requestCapabilities(parsedBody));
      if (isListenBody(parsedBody)) {
        // The stream is this caller's: the change feed checks each change against them; it ends at shutdown too.
        // (The body was read already; the handler takes it parsed.)
        const listen = new Request(request.url, {
          method: "POST",
          headers: request.headers,
          signal: AbortSignal.any([request.signal, closingSignal.signal]),
        });
        const caller = {
          ...scope,
          client: { kind: "other" as const, name: identity.clientName, elicitation: { form: false, url: false } },
        };
        return changes.listening(caller, () => modern.fetch(listen, { authInfo, parsedBody }));
      }
      const response = await modern.fetch(request, { authInfo, parsedBody });
      return scope.task ? answerWithTask(response, scope.task) : response;
    }

    const sessionId = request.headers.get("mcp-session-id");
    let entry: SessionEntry | undefined;
    if (sessionId) {
      entry = await sessionFor(sessionId, identity);
      // Another user's (or another grant's) session id is answered exactly like an unknown one.
      if (!entry) return rpcError(404, -32001, "Session not found. Start a new session with initialize.");
      const answer = answerForAnotherCopy(parsedBody);
      if (answer) {
        deps.bus.publish(answerSubject(answer), encodeJson({ session: sessionId, message: parsedBody }));
        return new Response(null, { status: 202 });
      }
    } else if (request.method === "POST" && isInitializeBody(parsedBody)) {
      const choice = connectionChoice(new URL(request.url));
      if (choice instanceof Response) return choice;
      const init = initializeParams(parsedBody);
      entry = await openSession(identity, {
        init,
        choice: { groups: choice.groups ? [...choice.groups] : null, readOnly: choice.readOnly },
        stream: declaresElicitation(parsedBody),
      });
    } else {
      return rpcError(
        400,
        -32000,
        "Bad request: send initialize first, then include the Mcp-Session-Id header it returned.",
      );
    }
    entry.lastSeen = Date.now();
    if (sessionId && request.method === "GET" && request.headers.get("last-event-id")) {
      // A dropped stream resumed: from the shared log, whichever copy sent it and whichever copy runs its call.
      return resumeStream({
        log: events,
        session: sessionId,
        lastEventId: request.headers.get("last-event-id")!,
        copyAlive: (other) => copyAlive(other),
        closing: closingSignal.signal,
        logger,
      });
    }
    if (sessionId && entry.lastSeen - entry.lastTouched > TOUCH_EVERY_MS) {
      entry.lastTouched = entry.lastSeen;
      // Best effort: the record stays until its idle time runs out. A failed write must not escape (it would end the
      // process as an unhandled rejection).
      void directory
        .get(sessionId)
        .then((record) => record && directory.put(sessionId, record))
        .catch(() => undefined);
    }
    if (request.method === "GET" && entry.transport.sessionId)
      return openedAtOnce(await entry.transport.handleRequest(request, { authInfo, parsedBody }));
    if (request.method !== "POST" || !entry.transport.sessionId)
      return entry.transport.handleRequest(request, { authInfo, parsedBody });
    // The stream a POST opens records which requests it answers (so a copy that resumes it knows what to wait for).
    return postedRequests.run(requestIdsOf(parsedBody), () =>
      entry.transport.handleRequest(request, { authInfo, parsedBody }),
    );
  }

  /** False only when the copy is known to be gone (nobody answers its subject); a slow answer counts as there. */
  async function copyAlive(other: string): Promise<boolean> {
    if (other === copy) return true;
    try {
      await deps.bus.request(aliveSubject(other), encodeJson({}), { timeoutMs: 2_000 });
      return true;
    } catch (error) {
      return !(error instanceof BusError && error.code === "no_responders");
    }
  }

  /** The session this request names, held here or rebuilt from its record; undefined when it is not this bearer's. */
  async function sessionFor(
    id: string,
    identity: { userId: string; grantId: string },
  ): Promise<SessionEntry | undefined> {
    const held = sessions.get(id);
    if (held) return held.userId === identity.userId && held.grantId === identity.grantId ? held : undefined;
    let record: SessionRecord | null;
    try {
      record = await directory.get(id);
    } catch (error) {
      logger.warn("MCP session directory not answering", { error });
      return undefined;
    }
    if (!record || record.user !== identity.userId || record.grant !== identity.grantId) return undefined;
    const again = sessions.get(id);
    if (again) return again;
    return openSession(identity, record, id);
  }

  /** The copy a posted answer belongs to, when it is not this one (the answer is sent there over the bus). */
  function answerForAnotherCopy(body: unknown): string | null {
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    if (messages.length !== 1) return null;
    const message = messages[0] as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
    if (message?.method !== undefined || (message?.result === undefined && message?.error === undefined)) return null;
    const owner = typeof message.id === "string" ? CopyTransport.copyOf(message.id) : null;
    return owner && owner !== copy ? owner : null;
  }

  return {
    handle,
    get sessionCount() {
      return sessions.size;
    },
    beginClose() {
      closing = true;
      closingSignal.abort();
      for (const entry of sessions.values()) entry.transport.closeStandaloneSSEStream();
    },
    async close() {
      clearInterval(sweep);
      for (const sub of subscriptions) sub.unsubscribe();
      changes.close();
      await modern.close().catch(() => {});
      // The records stay: the sessions go on at another copy (or at this one when it is back).
      await Promise.all([...sessions].map(([id, entry]) => closeSession(id, entry)));
    },
  };
}

/**
 * The server's side of a 2025 session's transport. The requests the server sends (a form for the user) get ids that
 * name this copy (`<copy>~<n>`), so the client's answer, posted to whichever copy, finds the copy that waits for it;
 * the answer arriving here gets its own id back.
 */
class CopyTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(
    message: T,
    extra?: Parameters<NonNullable<Transport["onmessage"]>>[1],
  ) => void;

  constructor(
    private readonly inner: WebStandardStreamableHTTPServerTransport,
    private readonly copy: string,
  ) {}

  static copyOf(id: string): string | null {
    const cut = id.indexOf("~");
    return cut > 0 ? id.slice(0, cut) : null;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions(versions);
  }

  async start(): Promise<void> {
    this.inner.onmessage = (message, extra) => this.onmessage?.(this.inbound(message), extra);
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (error) => this.onerror?.(error);
    await this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const outbound =
      "method" in message && "id" in message && message.id !== undefined
        ? { ...message, id: `${this.copy}~${message.id}` }
        : message;
    return this.inner.send(outbound, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** An answer another copy received for this one. */
  deliver(message: JSONRPCMessage): void {
    this.onmessage?.(this.inbound(message));
  }

  private inbound(message: JSONRPCMessage): JSONRPCMessage {
    if ("method" in message || !("id" in message) || typeof message.id !== "string") return message;
    if (!message.id.startsWith(`${this.copy}~`)) return message;
    const n = Number(message.id.slice(this.copy.length + 1));
    return Number.isSafeInteger(n) ? ({ ...message, id: n } as JSONRPCMessage) : message;
  }
}

/**
 * A 2025 session's standalone event stream, opened at once: the SDK writes nothing on it until its first message or
 * its keep-alive (15 s), and the response's headers leave with the first bytes, so a client (and any proxy between)
 * would wait that long to learn the stream is open. A comment line goes first; the SDK's stream follows as it is, and
 * a client that leaves cancels it (the SDK then forgets the stream).
 */
function openedAtOnce(response: Response): Response {
  if (response.status !== 200 || !response.body || !response.headers.get("content-type")?.includes("text/event-stream"))
    return response;
  const inner = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(OPENED);
    },
    async pull(controller) {
      const { done, value } = await inner.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return inner.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

const OPENED = new TextEncoder().encode(": open\n\n");

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

function requestIdsOf(body: unknown): (string | number)[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    const message = m as { id?: unknown; method?: unknown };
    return typeof message?.method === "string" && (typeof message.id === "string" || typeof message.id === "number")
      ? [message.id]
      : [];
  });
}

function isInitializeBody(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

function initializeParams(body: unknown): Record<string, unknown> {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  const init = messages.find((m) => isInitializeRequest(m)) as { params: Record<string, unknown> };
  return init.params;
}

/**
 * A tools/call that became a task: its JSON answer carries the task (`resultType: "task"`, tasks.ts) in the tool
 * result's place, with the result's `_meta`. An answer that is not plain JSON (an SSE stream) stays the tool's result.
 */
async function answerWithTask(response: Response, task: object): Promise<Response> {
  if (!(response.headers.get("content-type") ?? "").includes("application/json")) return response;
  const body = (await response.json()) as { result?: { _meta?: unknown; isError?: boolean } };
  if (!body.result || body.result.isError) return Response.json(body, response);
  const _meta = body.result._meta;
  return Response.json(
    { ...body, result: { ...task, ...(_meta ? { _meta } : {}) } },
    {
      status: response.status,
      headers: response.headers,
    },
  );
}

function isListenBody(body: unknown): boolean {
  return !!body && typeof body === "object" && (body as { method?: unknown }).method === "subscriptions/listen";
}

function declaresElicitation(body: unknown): boolean {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.some((m) => isInitializeRequest(m) && m.params.capabilities.elicitation !== undefined);
}

function rpcError(status: number, code: number, message: string, headers?: Record<string, string>): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers });
}

/** The client capabilities a 2026-07-28 request carries in its `_meta`. */
function requestCapabilities(body: unknown): Parameters<typeof declaresViews>[0] {
  const meta = (body as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
  return meta?.[CLIENT_CAPABILITIES_META_KEY] as Parameters<typeof declaresViews>[0];
}
