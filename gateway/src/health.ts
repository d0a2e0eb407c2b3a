import { BusError, busReachable, decodeJson, encodeJson, SERVICE_NAMES, type Bus, type Database } from "@hatch/shared";
import { sql } from "drizzle-orm";

export interface HealthReport {
  status: "ok" | "degraded";
  gateway: { version: string };
  services: Record<string, { ok: boolean; version?: string; error?: string }>;
}

/** Asks every service for `rpc.<service>.health` at once; a service that does not answer in time is down. */
export async function checkHealth(bus: Bus, version: string, timeoutMs = 1_500): Promise<HealthReport> {
  const entries = await Promise.all(
    SERVICE_NAMES.map(async (service) => {
      try {
        const reply = decodeJson(
          (await bus.request(`rpc.${service}.health`, encodeJson({ input: {} }), { timeoutMs })).data,
        ) as {
          ok?: boolean;
          result?: { version?: string };
        };
        return [service, { ok: reply.ok === true, version: reply.result?.version }] as const;
      } catch (error) {
        const reason =
          error instanceof BusError
            ? error.code === "no_responders"
              ? "not running"
              : error.code
            : "unreadable reply";
        return [service, { ok: false, error: reason }] as const;
      }
    }),
  );
  const services = Object.fromEntries(entries);
  return { status: entries.every(([, s]) => s.ok) ? "ok" : "degraded", gateway: { version }, services };
}

export interface Readiness {
  ready: boolean;
  draining: boolean;
  bus: boolean;
  database: boolean;
}

/** How long /readyz waits on NATS and on Postgres before it counts one as away. */
const READY_CHECK_MS = 1_000;

/**
 * `/readyz`: whether a load balancer should send this copy requests. Not while it drains (a SIGTERM came), nor while
 * its NATS or its database does not answer a round trip. `/livez` is apart: it only says the process answers, so an
 * outage of NATS or Postgres makes copies unready, never restarted.
 */
export async function checkReadiness(bus: Bus, db: Database, draining: boolean): Promise<Readiness> {
  if (draining) return { ready: false, draining, bus: false, database: false };
  const [busOk, databaseOk] = await Promise.all([busReachable(bus, READY_CHECK_MS), databaseReachable(db)]);
  return { ready: busOk && databaseOk, draining, bus: busOk, database: databaseOk };
}

async function databaseReachable(db: Database): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), READY_CHECK_MS)));
  const query = db.execute(sql`select 1`).then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([query, late]);
  } finally {
    clearTimeout(timer);
  }
}
