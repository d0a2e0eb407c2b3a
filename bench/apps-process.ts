// The apps service as a benchmark child process starts it: `bun run dev`'s wiring (in-process bus) on the given
// database, stopped cleanly on SIGTERM or SIGINT. Shared by the app host and data bench servers.
import { createLogger, createMemoryBus, decodeJson, encodeJson, type Bus, type DatabaseHandle } from "@hatch/platform";
import { deriveKey, PLAN_TABLE, rpcMethods, type Entitlements, type Plan } from "@hatch/contracts";
import { startAppsService, type AppsService } from "@hatch/apps";
import { randomBytes } from "node:crypto";

export async function startBenchApps(
  database: DatabaseHandle,
  env: Record<string, string>,
  options: {
    secret?: string;
    onStop?: () => Promise<void>;
    /** The plan billing answers for every account (its limits apply, as in production); none: billing is away. */
    plan?: Plan;
  } = {},
): Promise<AppsService> {
  const logger = createLogger({ level: "warn" });
  const secret = options.secret ?? randomBytes(32).toString("hex");
  const bus = createMemoryBus({ logger });
  if (options.plan) answerEntitlements(bus, options.plan);
  const apps = await startAppsService({
    bus,
    db: database.db,
    contextKey: deriveKey(secret, "ctx"),
    secret,
    env,
    logger,
  });
  const stop = async () => {
    await apps.stop();
    await bus.drain();
    await database.close();
    await options.onStop?.();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
  return apps;
}

/** Billing's `entitlements` rpc on the bench's bus: every account on `plan`, paid up. */
function answerEntitlements(bus: Bus, plan: Plan): void {
  bus.subscribe(`rpc.billing.${rpcMethods.billing.entitlements}`, (msg) => {
    const { input } = decodeJson(msg.data) as { input: { accountId: string } };
    const info = PLAN_TABLE[plan];
    const result: Entitlements = {
      accountId: input.accountId,
      plan,
      state: "active",
      seats: 1,
      limits: info.limits,
      settingsUrl: "http://bench.invalid/dashboard/billing",
    };
    return { data: encodeJson({ ok: true, result }) };
  });
}
