import { BusError, decodeJson, encodeJson, type Bus, type Logger } from "@hatch/platform";
import { HostResolvedSchema, RpcReplySchema, rpcMethods, subjects, type HostResolved } from "@hatch/contracts";
import { isIP } from "node:net";

// Hostnames outside the apps domain (a custom domain, `<address>.<company domain>`): the domains service says which
// app each serves. Answers are kept briefly per hostname (bounded), dropped when domains broadcasts a change of that
// hostname (or of a company domain above it); a failed question is not kept.

/** Events of the domains service (hostnames, company domains, bought domains). */
const DOMAIN_EVENTS = "events.domains.>";

const NOTHING: HostResolved = { address: null, accountId: null };

const NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

/** The hostname a Host header names (lower case, no port, no trailing dot), or null for IP literals and non-names. */
export function hostnameOfHost(host: string | null): string | null {
  if (!host || host.length > 261 || host.startsWith("[")) return null;
  const name = host
    .toLowerCase()
    .replace(/:\d{1,5}$/, "")
    .replace(/\.$/, "");
  if (!NAME.test(name) || isIP(name) !== 0 || /^[\d.]+$/.test(name)) return null;
  return name;
}

export interface CustomHostsOptions {
  /** How long an answer is kept without a broadcast (default 10 s). */
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

export class CustomHosts {
  private readonly entries = new Map<string, { value: HostResolved; expires: number }>();
  private readonly pending = new Map<string, Promise<HostResolved>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly ask: (hostname: string) => Promise<HostResolved>,
    options: CustomHostsOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Asks the domains service over the bus (`rpc.domains.host.resolve`). A deployment without a domains service (no
   * responders) serves no custom hostnames; one that is slow or failing makes the request fail (503, not kept).
   */
  static overBus(bus: Bus, options: CustomHostsOptions = {}): CustomHosts {
    const subject = subjects.rpc("domains", rpcMethods.domains.resolveHost);
    return new CustomHosts(async (hostname) => {
      let raw: unknown;
      try {
        raw = decodeJson((await bus.request(subject, encodeJson({ input: { hostname } }), { timeoutMs: 3_000 })).data);
      } catch (error) {
        if (error instanceof BusError && error.code === "no_responders") return NOTHING;
        throw error;
      }
      const reply = RpcReplySchema.safeParse(raw);
      const resolved = reply.success && reply.data.ok ? HostResolvedSchema.safeParse(reply.data.result) : null;
      if (!resolved?.success) throw new Error("the domains service could not say which app this hostname serves");
      return resolved.data;
    }, options);
  }

  get(hostname: string): HostResolved | Promise<HostResolved> {
    const hit = this.entries.get(hostname);
    if (hit && hit.expires > this.now()) return hit.value;
    const waiting = this.pending.get(hostname);
    if (waiting) return waiting;
    const asking = this.ask(hostname).then(
      (value) => {
        if (this.pending.get(hostname) === asking) {
          this.pending.delete(hostname);
          this.entries.delete(hostname);
          if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
          this.entries.set(hostname, { value, expires: this.now() + this.ttlMs });
        }
        return value;
      },
      (error: unknown) => {
        if (this.pending.get(hostname) === asking) this.pending.delete(hostname);
        throw error;
      },
    );
    this.pending.set(hostname, asking);
    return asking;
  }

  /** Drops `hostname` and every hostname under it (a company domain's app addresses). */
  invalidate(hostname: string): void {
    const suffix = `.${hostname}`;
    for (const map of [this.entries, this.pending] as Map<string, unknown>[]) {
      for (const key of [...map.keys()]) if (key === hostname || key.endsWith(suffix)) map.delete(key);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Every app host hears every change (no queue group): the domains events (a hostname's or a domain's, each naming
   * it in its details) as the outbox relay publishes them, and domains' own broadcast of a change (some changes, a
   * bought domain's DNS stage, have no event). A missed one leaves an answer at most the TTL (10 s).
   */
  listen(bus: Bus, log: Logger): { unsubscribe(): void } {
    const drop = (hostname: unknown, what: string) => {
      if (typeof hostname === "string") this.invalidate(hostname.toLowerCase());
      else log.warn(`ignored a malformed ${what}`);
    };
    const read = (data: Uint8Array): Record<string, unknown> | null => {
      try {
        const value = decodeJson(data);
        return value && typeof value === "object" ? (value as Record<string, unknown>) : null;
      } catch {
        return null;
      }
    };
    const broadcasts = bus.subscribe(subjects.domainsHostChanged, (msg) =>
      drop(read(msg.data)?.hostname, "host change broadcast"),
    );
    const events = bus.subscribe(DOMAIN_EVENTS, (msg) => {
      const details = read(msg.data)?.details as Record<string, unknown> | undefined;
      const hostname = details?.hostname ?? details?.domain;
      // Events about other things (a bought domain's renewal without a hostname) carry nothing to drop.
      if (hostname !== undefined) drop(hostname, "domains event");
    });
    return {
      unsubscribe() {
        broadcasts.unsubscribe();
        events.unsubscribe();
      },
    };
  }
}
