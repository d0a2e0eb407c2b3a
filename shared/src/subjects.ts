import type { ServiceName } from "./contracts/define.ts";

/** Bus subjects, before the deployment prefix (architecture, "Bus conventions"). */
export const subjects = {
  tool: (service: ServiceName, tool: string) => `tools.${service}.${tool}`,
  rpc: (service: ServiceName, method: string) => `rpc.${service}.${method}`,
  /** Published by a gateway that revoked a grant, so every gateway instance drops its cached copy. */
  grantRevoked: "events.gateway.grant.revoked",
} as const;

/** Internal methods, per service. */
export const rpcMethods = {
  orgs: {
    /** Resolves (and on first contact creates) the account a user acts as. */
    resolveSession: "session.resolve",
  },
} as const;
