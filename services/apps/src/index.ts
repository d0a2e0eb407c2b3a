export { APPS_MIGRATIONS, APPS_VERSION, startAppsService } from "./service.ts";
