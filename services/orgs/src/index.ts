export { ORGS_MIGRATIONS, ORGS_VERSION, startOrgsService } from "./service.ts";
