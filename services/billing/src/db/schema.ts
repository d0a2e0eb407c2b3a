import { pgSchema } from "drizzle-orm/pg-core";

/** The billing service's own schema. Its tables arrive with the issue that builds the billing tools. */
export const billing = pgSchema("billing");
