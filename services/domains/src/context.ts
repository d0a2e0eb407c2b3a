import { deriveKey } from "@hatch/contracts";
import { type Bus, type Database, type EntitlementsCache, type Logger } from "@hatch/platform";
import type { DomainsConfig } from "./config.ts";
import type { DnsLookup } from "./dns/lookup.ts";
import type { JobQueue } from "./jobs/queue.ts";
import type { Registrar } from "./registrar/types.ts";

/** What the domains service's tools, rpc methods, jobs and HTTP listener share. */
export interface DomainsContext {
  db: Database;
  config: DomainsConfig;
  logger: Logger;
  bus: Bus;
  /** Signs confirm tokens of this service's questions (disconnect, remove, buy). */
  confirmKey: Buffer;
  /** The signed ctx key: domains signs a person's ctx again to ask apps about an app (`app.lookup`). */
  contextKey: Buffer;
  registrar: Registrar;
  /** The resolver the DNS checks ask (DNS_SERVERS). */
  dns: DnsLookup;
  /** What billing allows each account (customDomains). */
  entitlements: EntitlementsCache;
  /** This copy's job queue: a change that queued a job wakes it. */
  jobs: JobQueue;
}

export function domainsConfirmKey(secret: string): Buffer {
  return deriveKey(secret, "domains:confirm");
}
