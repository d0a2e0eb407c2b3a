import { sql } from "drizzle-orm";
import { busReachable } from "./bus/nats.ts";
import type { Bus } from "./bus/types.ts";
import type { Database } from "./db.ts";
import { withDeadline } from "./deadline.ts";

// Probes every process answers the same way: the gateway on its own port, a service started alone on METRICS_PORT.

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

function databaseReachable(db: Database): Promise<boolean> {
  return withDeadline(
    db.execute(sql`select 1`).then(() => true),
    READY_CHECK_MS,
    () => new Error("the database did not answer"),
  ).catch(() => false);
}

/** `/livez` and `/readyz` as Responses, for a listener that is not Elysia (a service's METRICS_PORT). */
export async function probeResponse(path: string, readiness: () => Promise<Readiness>): Promise<Response | null> {
  if (path === "/livez") return new Response("ok\n", { headers: { "content-type": "text/plain; charset=utf-8" } });
  if (path !== "/readyz") return null;
  const now = await readiness();
  return Response.json(now, { status: now.ready ? 200 : 503 });
}
