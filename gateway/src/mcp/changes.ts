import { AsyncLocalStorage } from "node:async_hooks";
import { decodeJson, encodeJson, type Bus, type BusSubscription, type Logger } from "@hatch/platform";
import { DomainProgressSchema, HatchEventSchema, isToolError, rpcMethods, type HatchEvent } from "@hatch/contracts";
import {
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  type Resource,
  type Server,
  type ServerContext,
  type ServerEvent,
  type ServerEventBus,
} from "@modelcontextprotocol/server";
import { appAsListed, callServiceRpc, sessionOf, type CallerInfo, type ServiceClientDeps } from "../services.ts";

// Changes as notifications (2026-07-28 `subscriptions/listen`). A client lists the resources it follows
// (`hatch://apps/<address>`: a publish finished; `hatch://domains/<hostname>`: the domain went live) and gets
// `notifications/resources/updated` for them on its listen stream, on whichever gateway copy it holds that stream.
// Every copy feeds its own streams from the events Hatch already writes: a plain subscription to their subjects (not a
// durable consumer: every copy sees every event as it is published; a client that was not listening then reads the
// state with the tools). A stream only gets changes of the account its user acts in (their own apps, or their
// organization's, which org_apps shows every member) or changes they made themselves, checked when each event arrives.

export const APP_URI = "hatch://apps/";
export const DOMAIN_URI = "hatch://domains/";

/** The events that become notifications, and the resource each one updates. */
const FEEDS: Record<string, (event: HatchEvent) => { uri: string; change: Record<string, unknown> } | null> = {
  "events.apps.app.published": (event) =>
    event.app
      ? { uri: APP_URI + event.app, change: { event: "app.published", app: event.app, version: event.details.version } }
      : null,
  "events.domains.hostname.live": (event) => {
    const hostname = event.details.hostname;
    return typeof hostname === "string"
      ? { uri: DOMAIN_URI + hostname, change: { event: "domain.live", hostname, app: event.app } }
      : null;
  },
  "events.domains.domain.live": (event) => {
    const domain = event.details.domain;
    return typeof domain === "string"
      ? { uri: DOMAIN_URI + domain, change: { event: "domain.live", hostname: domain, app: event.app } }
      : null;
  },
};

/** Where a change published through the SDK's notifier goes to every copy (list changes only, never a resource's). */
const SERVER_EVENT = "broadcast.gateway.mcp.changed";
/** The `_meta` key that says what changed. */
export const CHANGE_META = "hatch/change";

interface Listener {
  deliver: (event: ServerEvent) => void;
  /** Whose stream it is; null only for a stream opened outside `listening` (it gets list changes only). */
  caller: CallerInfo | null;
}

export interface ChangeFeed {
  /** The `bus` of createMcpHandler: its listen streams subscribe here. */
  readonly events: ServerEventBus;
  /** Serves a request (a `subscriptions/listen`) whose stream belongs to this caller. */
  listening<T>(caller: CallerInfo, serve: () => Promise<T>): Promise<T>;
  close(): void;
}

export function createChangeFeed(deps: ServiceClientDeps & { bus: Bus; logger: Logger }): ChangeFeed {
  const { bus, logger } = deps;
  const owner = new AsyncLocalStorage<CallerInfo>();
  const listeners = new Set<Listener>();

  /** The SDK's listen router subscribes synchronously while serving the listen request: the caller is in scope. */
  const events: ServerEventBus = {
    publish(event) {
      if (event.kind === "resource_updated") {
        logger.warn("a resource change without its audience was not sent", { uri: event.uri });
        return;
      }
      bus.publish(SERVER_EVENT, encodeJson(event));
    },
    subscribe(deliver) {
      const listener: Listener = { deliver, caller: owner.getStore() ?? null };
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };

  async function mayHear(listener: Listener, event: HatchEvent): Promise<boolean> {
    if (!listener.caller) return false;
    if (event.actor?.userId === listener.caller.identity.userId) return true;
    if (!event.account) return false;
    const session = await sessionOf(deps, listener.caller);
    return session.account === event.account;
  }

  async function feed(subject: string, data: Uint8Array): Promise<void> {
    const parsed = HatchEventSchema.safeParse(decodeJson(data));
    const topic = Object.keys(FEEDS).find((s) => subject.endsWith(s));
    if (!parsed.success || !topic) return;
    const made = FEEDS[topic]!(parsed.data);
    if (!made) return;
    const event: ServerEvent = {
      kind: "resource_updated",
      uri: made.uri,
      params: { _meta: { [CHANGE_META]: made.change } },
    };
    await Promise.all(
      [...listeners].map(async (listener) => {
        try {
          if (await mayHear(listener, parsed.data)) listener.deliver(event);
        } catch (error) {
          logger.warn("a change was not sent to a listener", { uri: made.uri, error });
        }
      }),
    );
  }

  const subscriptions: BusSubscription[] = [
    ...Object.keys(FEEDS).map((subject) =>
      bus.subscribe(subject, (msg) => {
        void feed(msg.subject, msg.data);
      }),
    ),
    bus.subscribe(SERVER_EVENT, (msg) => {
      const event = decodeJson(msg.data) as ServerEvent;
      if (event.kind === "resource_updated") return;
      for (const listener of listeners) listener.deliver(event);
    }),
  ];

  return {
    events,
    listening: (caller, serve) => owner.run(caller, serve),
    close() {
      for (const sub of subscriptions) sub.unsubscribe();
      listeners.clear();
    },
  };
}

/** The views a client that shows them may read (MCP Apps); none for other clients. */
export interface ViewResources {
  list(): Resource[];
  read(uri: string): Promise<ReadResourceResult | null>;
}

/**
 * The resources a 2026 client can follow: no fixed list, two templates, and a read of each (the app as list_tools
 * shows it; the domain's progress from the domains service), for the caller only.
 */
export function registerChangeResources(
  server: Server,
  deps: ServiceClientDeps,
  callerOf: (ctx: ServerContext) => CallerInfo | undefined,
  views: ViewResources,
): void {
  server.setRequestHandler("resources/list", async () => ({ resources: views.list() }));
  server.setRequestHandler("resources/templates/list", async () => ({
    resourceTemplates: [
      {
        uriTemplate: `${APP_URI}{address}`,
        name: "app",
        title: "An app",
        description: "One of the user's apps. Updated when a publish of it finishes.",
        mimeType: "application/json",
      },
      {
        uriTemplate: `${DOMAIN_URI}{hostname}`,
        name: "domain",
        title: "A domain of an app",
        description: "A custom domain or a domain bought through Hatch. Updated when it goes live.",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler("resources/read", async (request, ctx) => {
    const caller = callerOf(ctx);
    const uri = request.params.uri;
    const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource not found: ${uri}`);
    if (!caller) throw notFound();
    const view = await views.read(uri);
    if (view) return view;
    const json = (value: unknown) => ({
      contents: [{ uri, mimeType: "application/json", text: JSON.stringify(value) }],
    });
    if (uri.startsWith(APP_URI)) {
      const app = await appAsListed(deps, caller, uri.slice(APP_URI.length));
      if (!app) throw notFound();
      return json(app);
    }
    if (uri.startsWith(DOMAIN_URI)) {
      const name = uri.slice(DOMAIN_URI.length);
      for (const kind of ["custom", "bought"] as const) {
        try {
          const progress = await callServiceRpc(
            deps,
            "domains",
            rpcMethods.domains.progress,
            { kind, name },
            DomainProgressSchema,
            caller,
          );
          return json({ domain: progress.name, state: progress.state, stage: progress.stage, text: progress.text });
        } catch (error) {
          if (!isToolError(error) || error.code !== "not_found") throw error;
        }
      }
    }
    throw notFound();
  });
}
