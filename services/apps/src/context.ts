import { deriveKey } from "@hatch/contracts";
import {
  createRateCounter,
  type Bus,
  type Database,
  type EntitlementsCache,
  type Logger,
  type OutboxRelay,
  type RateCounter,
} from "@hatch/platform";
import type { BlobStore } from "./blobs/types.ts";
import type { AppsConfig } from "./config.ts";
import type { AppLogWriter } from "./app-logs.ts";
import { Sealer } from "./secrets/sealed.ts";

/** What the apps service's tools, rpc methods and app host share. */
export interface AppsContext {
  db: Database;
  config: AppsConfig;
  blobs: BlobStore;
  keys: AppsKeys;
  /** Seals and opens secret values and AI keys (AES-256-GCM; see secrets/sealed.ts). */
  sealer: Sealer;
  logger: Logger;
  /** The service's bus: the app host listens there for cache invalidations (the apps events, see host/app-changes.ts). */
  bus: Bus;
  /**
   * The relay of the outbox: the runtime flushes it after every tool call; a change made outside one (a folder's
   * tar PUT) flushes it itself, so its event (and the app hosts' cache drop) is out before the answer.
   */
  outbox?: Pick<OutboxRelay, "flush">;
  /** What billing allows each account (plan limits); absent in unit tests, where nothing is limited. */
  entitlements?: EntitlementsCache;
  /**
   * The app host's rate counter: data requests and AI calls per viewer, each viewer's minute from their first request
   * (appsRateCounter: the `apps` JetStream key-value bucket on NATS, shared by every copy; memory in dev).
   */
  rate: RateCounter;
  /** Server code's log lines, buffered and written in batches; tool_logs flushes them before it reads. */
  appLogs: Pick<AppLogWriter, "request" | "add" | "flush" | "stop">;
}

export interface AppsKeys {
  /** Signs confirm tokens of this service's questions. */
  confirm: Buffer;
  /** Checks the gateway's viewer tickets and signs the app host's own viewer cookies. */
  viewer: Buffer;
  /** Keys the per-app viewer hashes of the statistics (no raw IP address is stored). */
  stats: Buffer;
}

export function appsKeys(secret: string): AppsKeys {
  return {
    confirm: deriveKey(secret, "apps:confirm"),
    viewer: deriveKey(secret, "viewer-ticket"),
    stats: deriveKey(secret, "apps:stats"),
  };
}

/** Longer than any window the app host counts (a minute); the bucket keeps an entry twice this after its last write. */
const RATE_MAX_WINDOW_MS = 2 * 60_000;

/** The apps rate counter of a bus (AppsContext.rate): windows from each key's first event. */
export function appsRateCounter(bus: Bus, logger?: Logger): RateCounter {
  return createRateCounter(bus, RATE_MAX_WINDOW_MS, "apps", logger, "first");
}

/** The sealer of secret values and AI keys: SECRETS_KEYS when set, else one key derived from the deployment secret. */
export function createSealer(config: Pick<AppsConfig, "secretsKeys">, secret: string): Sealer {
  return new Sealer(config.secretsKeys ?? [{ id: "derived", key: deriveKey(secret, "apps:secrets") }]);
}
