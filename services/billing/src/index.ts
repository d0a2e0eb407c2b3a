export { BILLING_MIGRATIONS, BILLING_VERSION, startBillingService } from "./service.ts";
export type { BillingService } from "./service.ts";
