import { runServiceMain } from "@hatch/platform";
import { DOMAINS_MIGRATIONS, startDomainsService } from "./service.ts";

await runServiceMain({ name: "domains", migrationsFolder: DOMAINS_MIGRATIONS, start: startDomainsService });
