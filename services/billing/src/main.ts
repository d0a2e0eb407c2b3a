import { runServiceMain } from "@hatch/platform";
import { BILLING_MIGRATIONS, startBillingService } from "./service.ts";

await runServiceMain({ name: "billing", migrationsFolder: BILLING_MIGRATIONS, start: startBillingService });
