import type { Database } from "@hatch/platform";
import type { DomainsConfig } from "../config.ts";
import { createNamecomRegistrar } from "./namecom.ts";
import { createSimulatedRegistrar } from "./simulated.ts";
import type { Registrar } from "./types.ts";

/** The registrar REGISTRAR names: the simulated one (default; its state in the domains database) or Name.com's API. */
export function createRegistrar(config: DomainsConfig, db: Database): Registrar {
  const settings = config.registrar;
  if (settings.kind === "namecom")
    return createNamecomRegistrar({ apiUrl: settings.apiUrl, username: settings.username, token: settings.token });
  return createSimulatedRegistrar(db, settings.stepMs);
}
