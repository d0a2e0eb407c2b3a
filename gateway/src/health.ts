import { BusError, decodeJson, encodeJson, type Bus } from "@hatch/platform";
import { SERVICE_NAMES } from "@hatch/contracts";

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
