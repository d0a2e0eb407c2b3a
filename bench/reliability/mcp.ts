// MCP clients for the reliability run: the SDK's real Client over streamable HTTP with a bearer token, and the
// classification of a call's outcome (answered, failed with a clear error, failed unclearly, hung).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { getToolContract } from "@hatch/contracts";

export interface Caller {
  readonly label: string;
  /** One tool call; never throws: the outcome says what happened. */
  call(tool: string, args: Record<string, unknown>): Promise<Outcome>;
  close(): Promise<void>;
}

export type Outcome =
  | { kind: "ok"; data: Record<string, unknown>; text: string; ms: number }
  /** A tool error (isError): clear when its text says what to do. */
  | { kind: "tool_error"; clear: boolean; text: string; ms: number }
  /** No answer at all: connection refused, session gone, HTTP 5xx, a broken stream. */
  | { kind: "transport"; text: string; ms: number }
  /** No answer within the tool's own timeout plus a margin. */
  | { kind: "hung"; ms: number };

/**
 * Past the tool's own deadline (the gateway's bus timeout), how long the client waits before it calls it hung: the
 * gateway may first spend up to 5 s resolving the session with orgs (callRpc's default), plus 5 s of slack.
 */
const HANG_MARGIN_MS = 10_000;

export function textOf(result: object): string {
  const content = ((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[];
  return content.map((c) => c.text ?? "").join("\n");
}

/** Words that tell a person or an AI what to do next (retry, wait, fix an input, open a link). */
const ADVICE =
  /try again|retry|in a (moment|minute|few)|later|wait|not answering|unavailable|could not|give |use |must |should |expected|open |ask |call |set |add |choose|pick|at most|at least|only /i;
/** What never belongs in an answer: stack frames, SQL, raw driver errors. */
const INTERNALS =
  /\bat [^\s()]+ \([^)]*:\d+:\d+\)|\.ts:\d+|\bselect .* from\b|\binsert into\b|\brelation "|ECONNREFUSED|TypeError|ReferenceError|undefined is not/i;

export function isClearError(text: string): boolean {
  return text.length > 0 && ADVICE.test(text) && !INTERNALS.test(text);
}

export function hasInternals(text: string): boolean {
  return INTERNALS.test(text);
}

/**
 * The SDK client's reports that a dropped stream could not be resumed because the server no longer knows the session
 * (a killed gateway takes its sessions with it), or that it gave up resuming. Calls waiting on that session will never
 * be answered; the SDK leaves them pending until their own timeout, so they would look hung though no server held them.
 */
const SESSION_LOST =
  /Failed to reconnect SSE stream: .*(?:\b404\b|Not Found|Session not found)|Maximum reconnection attempts/i;

/**
 * A user's connection: reconnects on its own after a transport failure (a gateway restart loses its sessions,
 * as a real client would see a 404 and start a new one). Answers every question with a yes (the run's users
 * confirm making their own apps public). When the session is lost, its calls in flight end at once as "no answer",
 * as a client that follows the spec (404: start a new session) would end them.
 */
export function connectCaller(
  mcpUrl: string,
  accessToken: string,
  label: string,
  options: { confirm?: boolean } = {},
): Caller {
  const confirm = options.confirm ?? true;
  let client: Client | null = null;
  const inFlight = new Map<AbortController, Client>();
  const open = async (): Promise<Client> => {
    if (client) return client;
    const next = new Client(
      { name: "reliability", version: "1.0.0" },
      { capabilities: confirm ? { elicitation: {} } : {} },
    );
    if (confirm)
      next.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { confirm: true } }));
    next.onerror = (error) => {
      if (!SESSION_LOST.test(messageOf(error))) return;
      if (client === next) drop();
      for (const [call, on] of inFlight) if (on === next) call.abort(messageOf(error));
    };
    await next.connect(
      new StreamableHTTPClientTransport(new URL(mcpUrl), {
        requestInit: { headers: { Authorization: `Bearer ${accessToken}` } },
      }),
      { timeout: 10_000 },
    );
    client = next;
    return next;
  };
  const drop = () => {
    const old = client;
    client = null;
    void old?.close().catch(() => {});
  };
  return {
    label,
    async call(tool, args) {
      const timeout = (getToolContract(tool)?.timeoutMs ?? 10_000) + HANG_MARGIN_MS;
      const started = performance.now();
      const ms = () => Math.round(performance.now() - started);
      let c: Client;
      try {
        c = await open();
      } catch (error) {
        return { kind: "transport", text: `connect: ${messageOf(error)}`, ms: ms() };
      }
      const lost = new AbortController();
      inFlight.set(lost, c);
      try {
        const result = await c.callTool({ name: tool, arguments: args }, undefined, { timeout, signal: lost.signal });
        const text = textOf(result);
        if (result.isError) return { kind: "tool_error", clear: isClearError(text), text, ms: ms() };
        return { kind: "ok", data: (result.structuredContent ?? {}) as Record<string, unknown>, text, ms: ms() };
      } catch (error) {
        if (lost.signal.aborted)
          return {
            kind: "transport",
            text: `stream lost with its session (the gateway restarted): ${String(lost.signal.reason).slice(0, 200)}`,
            ms: ms(),
          };
        const message = messageOf(error);
        // The SDK's own request timeout (McpError -32001): the call hung past its deadline. (Not an HTTP error whose
        // body carries -32001: that is the gateway's "Session not found", an answer.)
        if (!(error instanceof StreamableHTTPError) && /timed out|-32001/i.test(message)) {
          drop();
          return { kind: "hung", ms: ms() };
        }
        // A JSON-RPC error answer from the server: an answer, not a broken connection.
        if (error instanceof McpError) {
          const text = `JSON-RPC ${error.code}: ${error.message.replace(/^MCP error -?\d+: /, "")}`;
          return { kind: "tool_error", clear: isClearError(text), text, ms: ms() };
        }
        drop();
        return { kind: "transport", text: message, ms: ms() };
      } finally {
        inFlight.delete(lost);
      }
    },
    async close() {
      await client?.close().catch(() => {});
      client = null;
    },
  };
}

/**
 * A service's own answer for a tool it has no handler for yet (the domains service while issue 10 is open): the
 * service answered, so for reliability it counts as answered.
 */
export function answeredNotImplemented(outcome: Outcome): boolean {
  return outcome.kind === "tool_error" && /is not available on this Hatch server yet/.test(outcome.text);
}

/** The error code a tool error ends with, e.g. `(not_found)`. */
export function codeOf(text: string): string | null {
  return /\(([a-z_]+)\)\s*$/.exec(text)?.[1] ?? null;
}

export function messageOf(error: unknown): string {
  if (error instanceof StreamableHTTPError)
    return `HTTP ${error.code}: ${error.message.replace(/\s+/g, " ").slice(0, 200)}`;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
