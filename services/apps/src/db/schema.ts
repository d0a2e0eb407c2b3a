import { pgSchema } from "drizzle-orm/pg-core";

/** The apps service's own schema. Its tables arrive with the issue that builds the apps tools. */
export const apps = pgSchema("apps");
