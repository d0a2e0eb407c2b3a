export { createGateway, GATEWAY_MIGRATIONS, GATEWAY_VERSION } from "./app.ts";
export { AuthInputError, createAuth } from "./auth/index.ts";
export type { AccessIdentity, Auth, AuthDeps } from "./auth/index.ts";
export type { Gateway, GatewayOptions } from "./app.ts";
export type { Confirmations, ConfirmationOpener, OpenConfirmation } from "./confirm/index.ts";
export { gatewayConfig, loadGatewayConfig } from "./config.ts";
export type { GatewayConfig, GatewayConfigOverrides } from "./config.ts";
export { checkHealth } from "./health.ts";
export type { HealthReport } from "./health.ts";
