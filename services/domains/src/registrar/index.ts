import type { DomainsConfig } from "../config.ts";
import { RegistrarUnavailable, type Registrar } from "./types.ts";

/** The registrar REGISTRAR names: the simulated one (default) or Name.com's API. */
export function createRegistrar(config: DomainsConfig): Registrar {
  // Replaced by simulated.ts and namecom.ts.
  const down = async (): Promise<never> => {
    throw new RegistrarUnavailable(`the ${config.registrar.kind} registrar is not built yet`);
  };
  return { name: config.registrar.kind, check: down, register: down, status: down, recordsLive: down, renew: down };
}
