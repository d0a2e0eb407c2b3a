import { z } from "zod";
import { BucketsSchema, CollectionsSchema } from "./data-rules.ts";
import { ApisSchema, ServerModuleSchema } from "./server-code.ts";

/**
 * `service.json` at the root of a published folder: how the app host serves the app. Optional; unknown keys
 * are refused so a typo does not silently do nothing. Later features add keys here (additively).
 */
export const ServiceJsonSchema = z
  .object({
    $schema: z.string().optional().describe("Ignored; lets editors validate the file"),
    spa: z
      .boolean()
      .default(false)
      .describe(
        "true for single-page apps with client-side routing: a path that matches no file and has no file " +
          "extension is answered with /index.html (status 200) instead of the 404 page",
      ),
    notFound: z
      .string()
      .regex(/^[^/\\].*\.html$/, { error: "notFound is the path of an .html file in the folder, e.g. 404.html" })
      .optional()
      .describe(
        "The page shown (with status 404) for a path that matches no file; default 404.html when the folder has it",
      ),
    collections: CollectionsSchema.optional().describe(
      "The app's data collections (hatch.db(name)) and who may read, create, update and delete their documents",
    ),
    buckets: BucketsSchema.optional().describe(
      "The app's file buckets (hatch.files(name)), who may read, upload and delete, and maxFileSize",
    ),
    server: ServerModuleSchema.optional().describe(
      "The app's server code: one ES module whose default export has fetch(request, env); it answers every request under /api/",
    ),
    apis: ApisSchema.optional().describe(
      "Outside APIs the app calls (env.api in server code, hatch.api in pages), each with its base url and the secret the host injects",
    ),
  })
  .strict();
export type ServiceJson = z.infer<typeof ServiceJsonSchema>;

/** The keys, for error messages and the developer reference. */
export const SERVICE_JSON_KEYS = Object.keys(ServiceJsonSchema.shape).filter((k) => k !== "$schema");
