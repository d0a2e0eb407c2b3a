import { BusError, callRpc, decodeJson, encodeJson, requestTraced, unavailable, type Bus } from "@hatch/platform";
import {
  CallReplySchema,
  childTraceparent,
  ContextVersions,
  randomId,
  signContext,
  subjects,
  type CallContextClaims,
  type CallReply,
  list_tools,
  type ClientKind,
  type ListToolsOutput,
  type ServiceName,
  type Session,
  type ToolContract,
} from "@hatch/contracts";
import type { z } from "zod";
import type { AccessIdentity, PublicUser } from "./auth/index.ts";
import { type AccountSessions, withSession } from "./mcp/accounts.ts";
import type { ElicitationSupport } from "./mcp/profile.ts";

// The gateway's one way to a service: a call context signed for the caller (with the account, organization, role and
// permissions they act as, resolved as for every call), sent over the bus with its span and deadline, and a reply or
// failure mapped to what the gateway shows (a ToolError `unavailable` when the service cannot be reached). MCP tool
// calls, the confirm pages and the dashboard pages all call services through here, so a service checks each the same.

export interface ServiceClientDeps {
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  /**
   * The call context version to sign for each service, learned from copies that read only older ones during a rolling
   * deploy (gateway/DESIGN.md): a hint each gateway copy relearns in one round trip, nothing a request needs. Default:
   * one per bus connection, starting at this build's newest; tests pass one that starts at another release's.
   */
  contextVersions?: ContextVersions;
}

const versionsByBus = new WeakMap<Bus, ContextVersions>();
function contextVersions(deps: Pick<ServiceClientDeps, "bus" | "contextVersions">): ContextVersions {
  if (deps.contextVersions) return deps.contextVersions;
  let versions = versionsByBus.get(deps.bus);
  if (!versions) versionsByBus.set(deps.bus, (versions = new ContextVersions()));
  return versions;
}

/** Who is calling: an AI client through an OAuth grant, or a person on one of Hatch's pages (`websiteCaller`). */
export interface CallerInfo {
  identity: AccessIdentity;
  client: { kind: ClientKind; name: string; elicitation: ElicitationSupport };
  requestId: string;
  traceparent: string;
  /** An account the person chose on the dashboard (its switcher) instead of the one they act as now. */
  account?: string;
}

/**
 * A person acting on Hatch's own pages: no AI client, no OAuth grant (`grant` says where: "browser", "signup"), no
 * forms to elicit. `client` is how the activity log names the place ("Hatch website", "dashboard", "browser").
 */
export function websiteCaller(
  user: PublicUser,
  options: {
    scope: "read" | "write";
    client: string;
    grant?: string;
    requestId?: string;
    traceparent?: string;
    account?: string;
  },
): CallerInfo {
  return {
    identity: {
      userId: user.id,
      email: user.email,
      emailVerified: user.emailVerified,
      name: user.name,
      grantId: options.grant ?? "browser",
      clientId: options.client,
      clientName: options.client,
      scope: options.scope,
    },
    client: { kind: "other", name: options.client, elicitation: { form: false, url: false } },
    requestId: options.requestId ?? randomId(12),
    traceparent: options.traceparent ?? childTraceparent(null),
    ...(options.account ? { account: options.account } : {}),
  };
}

/**
 * The signed call context of this caller. With `account` (the default) the account they act as is resolved first
 * (orgs `session.resolve`, cached); without it the context names the person only (mails about their own sign-in).
 */
export async function signedContext(
  deps: Pick<ServiceClientDeps, "contextKey" | "accounts"> &
    Partial<Pick<ServiceClientDeps, "bus" | "contextVersions">>,
  caller: CallerInfo,
  options: { account?: boolean; timeoutMs?: number; service?: ServiceName } = {},
): Promise<string> {
  const version =
    options.service && deps.bus
      ? contextVersions({ bus: deps.bus, contextVersions: deps.contextVersions }).for(options.service)
      : undefined;
  return signContext(await callerClaims(deps, caller, options), deps.contextKey, Date.now(), version);
}

async function callerClaims(
  deps: Pick<ServiceClientDeps, "accounts">,
  caller: CallerInfo,
  options: { account?: boolean; timeoutMs?: number },
): Promise<CallContextClaims> {
  const base = baseClaims(caller);
  if (options.account === false) return base;
  return withSession(base, await callerSession(deps, caller, options));
}

/** Signs `claims` again for a copy of `service` that reads only `read`; null when this gateway knows none of them. */
function resigner(deps: ServiceClientDeps, service: ServiceName, claims: CallContextClaims) {
  return (read: readonly number[]): string | null => {
    const version = contextVersions(deps).learn(service, read);
    return version === null ? null : signContext(claims, deps.contextKey, Date.now(), version);
  };
}

/** The account, organization, role and permissions this caller acts as (orgs `session.resolve`, cached). */
export function callerSession(
  deps: Pick<ServiceClientDeps, "accounts">,
  caller: CallerInfo,
  options: { timeoutMs?: number } = {},
): ReturnType<AccountSessions["resolve"]> {
  return deps.accounts.resolve(
    baseClaims(caller),
    {
      requestId: caller.requestId,
      traceparent: caller.traceparent,
      timeoutMs: options.timeoutMs ?? ACCOUNT_LOOKUP_MS,
    },
    caller.account,
  );
}

/** The account this caller acts as now (orgs `session.resolve`, cached briefly and dropped on membership changes). */
export function sessionOf(deps: Pick<ServiceClientDeps, "accounts">, caller: CallerInfo): Promise<Session> {
  return deps.accounts.resolve(baseClaims(caller), {
    requestId: caller.requestId,
    traceparent: caller.traceparent,
    timeoutMs: ACCOUNT_LOOKUP_MS,
  });
}

/**
 * An internal method of a service (`rpc.<service>.<method>`) for this caller, its result parsed by `schema`. A service
 * that is down or slow is a ToolError `unavailable`; an error reply is the ToolError it carried.
 */
export async function callServiceRpc<S extends z.ZodType>(
  deps: ServiceClientDeps,
  service: ServiceName,
  method: string,
  input: unknown,
  schema: S,
  caller: CallerInfo,
  options: { account?: boolean } = {},
): Promise<z.infer<S>> {
  const claims = await callerClaims(deps, caller, options);
  return callRpc(retryOnceOnNoResponders(deps.bus), service, method, input, schema, {
    ctx: signContext(claims, deps.contextKey, Date.now(), contextVersions(deps).for(service)),
    resign: resigner(deps, service, claims),
    requestId: caller.requestId,
    traceparent: caller.traceparent,
  });
}

/**
 * A public method of a service (`rpc.<service>.<method>`, bound without `requiresContext`): nobody is calling, so no
 * context is signed (the developer reference at /mcp/docs). Failures as callServiceRpc's.
 */
export function callPublicRpc<S extends z.ZodType>(
  deps: Pick<ServiceClientDeps, "bus">,
  service: ServiceName,
  method: string,
  input: unknown,
  schema: S,
  options: { requestId?: string; traceparent?: string; timeoutMs?: number } = {},
): Promise<z.infer<S>> {
  return callRpc(retryOnceOnNoResponders(deps.bus), service, method, input, schema, options);
}

function baseClaims(caller: CallerInfo): CallContextClaims {
  const { identity } = caller;
  return {
    sub: identity.userId,
    email: identity.email,
    emailVerified: identity.emailVerified,
    name: identity.name,
    permissions: [],
    scope: identity.scope,
    client: caller.client,
    grant: identity.grantId,
    rid: caller.requestId,
  };
}

/**
 * Signs a fresh call context for this caller (account resolved as for every call) and sends the call. Throws
 * ToolError `unavailable` when the service cannot be reached; the confirm page uses it to send the user's answer.
 */
export async function callService(
  deps: ServiceClientDeps,
  contract: ToolContract,
  caller: CallerInfo,
  body: { input: unknown; answer?: Record<string, unknown>; confirm?: string },
): Promise<CallReply> {
  // One deadline for the whole call (the account lookup and the service's answer), so the AI hears back within the
  // tool's own timeout even when orgs is slow too.
  const deadline = Date.now() + contract.timeoutMs;
  const claims = await callerClaims(deps, caller, { timeoutMs: Math.min(ACCOUNT_LOOKUP_MS, contract.timeoutMs) });
  const ctx = signContext(claims, deps.contextKey, Date.now(), contextVersions(deps).for(contract.service));
  // Keys a copy of an older release may drop (the contract's `ignorable`), so it does not refuse the call for them.
  const envelope = { ...body, ...(contract.ignorable.length > 0 ? { ignorable: contract.ignorable } : {}) };
  const reply = await send(
    deps.bus,
    contract,
    { ctx, ...envelope },
    caller,
    Math.max(MIN_SEND_MS, deadline - Date.now()),
  );
  if (reply.ok || !reply.accepts) return reply;
  // A copy that reads only older context versions (a rolling deploy) did nothing: sign in one it reads and send again.
  const again = resigner(deps, contract.service, claims)(reply.accepts.ctx);
  if (!again) return reply;
  return send(deps.bus, contract, { ctx: again, ...envelope }, caller, Math.max(MIN_SEND_MS, deadline - Date.now()));
}

type ListedApp = ListToolsOutput["apps"][number];

/** The app at `address` as list_tools shows it to this caller (every app they can see), or null. */
export async function appAsListed(
  deps: ServiceClientDeps,
  caller: CallerInfo,
  address: string,
): Promise<ListedApp | null> {
  const reply = await callService(deps, list_tools, caller, { input: { include: "all" } });
  if (!reply.ok || !("result" in reply)) return null;
  return (reply.result.data as ListToolsOutput).apps.find((a) => a.address === address) ?? null;
}

/** At most this long for the account lookup (orgs `session.resolve`), within the tool's deadline. */
const ACCOUNT_LOOKUP_MS = 5_000;
/** A call whose lookup took nearly all its time still gets this long to be answered. */
const MIN_SEND_MS = 1_000;

async function send(
  bus: Bus,
  contract: ToolContract,
  envelope: Record<string, unknown>,
  caller: CallerInfo,
  timeoutMs: number,
): Promise<CallReply> {
  let raw: unknown;
  try {
    const reply = await requestTraced(
      retryOnceOnNoResponders(bus),
      subjects.tool(contract.service, contract.name),
      encodeJson(envelope),
      {
        timeoutMs,
        requestId: caller.requestId,
        traceparent: caller.traceparent,
      },
    );
    raw = decodeJson(reply.data);
  } catch (error) {
    if (error instanceof BusError && error.code === "timeout" && contract.class !== "read") {
      return {
        ok: false,
        error: {
          code: "unavailable",
          message: `The ${contract.service} service did not answer in time, so Hatch cannot tell whether ${contract.name} took effect. Check the current state (for example with a listing tool) before trying again.`,
        },
      };
    }
    if (error instanceof BusError) throw unavailable(contract.service);
    throw error;
  }
  const parsed = CallReplySchema.safeParse(raw);
  if (!parsed.success)
    return {
      ok: false,
      error: { code: "internal", message: `The ${contract.service} service sent a reply Hatch could not read.` },
    };
  return parsed.data;
}

/** Before the one retry of a call that found no copy: long enough for a copy that is (re)subscribing to be seen. */
export const NO_RESPONDERS_RETRY_MS = 250;
const retrying = new WeakMap<Bus, Bus>();

/**
 * The bus with each request sent once more, after NO_RESPONDERS_RETRY_MS, when NATS answered "no responders": that
 * request reached no copy of the service (nothing was subscribed where it was routed: a copy restarting, a rolling
 * deploy, interest not yet spread across the cluster), so nothing ran and a second try cannot do anything twice.
 * A timeout is never retried (the call may have run). The retry keeps the first request's deadline.
 */
export function retryOnceOnNoResponders(bus: Bus): Bus {
  let wrapped = retrying.get(bus);
  if (!wrapped) {
    wrapped = {
      ...bus,
      async request(subject, data, options) {
        const started = Date.now();
        try {
          return await bus.request(subject, data, options);
        } catch (error) {
          if (!(error instanceof BusError) || error.code !== "no_responders") throw error;
          const left = options.timeoutMs - (Date.now() - started) - NO_RESPONDERS_RETRY_MS;
          if (left <= 0) throw error;
          await Bun.sleep(NO_RESPONDERS_RETRY_MS);
          return bus.request(subject, data, { ...options, timeoutMs: left });
        }
      },
    };
    retrying.set(bus, wrapped);
  }
  return wrapped;
}
