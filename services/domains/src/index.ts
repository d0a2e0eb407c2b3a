export { DOMAINS_MIGRATIONS, DOMAINS_VERSION, startDomainsService } from "./service.ts";
export type { DomainsService } from "./service.ts";
