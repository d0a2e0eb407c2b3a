import { runServiceMain } from "@hatch/shared";
import { BILLING_MIGRATIONS, startBillingService } from "./service.ts";

await runServiceMain({ name: "billing", migrationsFolder: BILLING_MIGRATIONS, start: startBillingService });
