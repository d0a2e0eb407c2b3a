import { runServiceMain } from "@hatch/platform";
import { APPS_MIGRATIONS, startAppsService } from "./service.ts";

await runServiceMain({ name: "apps", migrationsFolder: APPS_MIGRATIONS, start: startAppsService });
