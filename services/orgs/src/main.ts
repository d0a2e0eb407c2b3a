import { runServiceMain } from "@hatch/platform";
import { ORGS_MIGRATIONS, startOrgsService } from "./service.ts";

await runServiceMain({ name: "orgs", migrationsFolder: ORGS_MIGRATIONS, start: startOrgsService });
