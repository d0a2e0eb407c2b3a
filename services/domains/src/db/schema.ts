import { pgSchema } from "drizzle-orm/pg-core";

/** The domains service's own schema. Its tables arrive with the issue that builds the domains tools. */
export const domains = pgSchema("domains");
