export { APPS_MIGRATIONS, APPS_VERSION, startAppsService } from "./service.ts";
export type { AppsService } from "./service.ts";
export type { AppHost, AppHostOptions } from "./host/server.ts";
