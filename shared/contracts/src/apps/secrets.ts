import { z } from "zod";

// What crosses the bus about an app's secrets and AI keys: the names `tool_secret`, `ai_key` and the dashboard's
// secret and AI key pages take, and where a declared API's secret goes (the secret page names it). What service.json
// may declare (apis, server code) and its limits are the apps service's (services/apps/src/spec/server-code.ts).

/** A secret's name as `apis` refers to it (the same words `tool_secret` takes). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const SecretNameSchema = z
  .string()
  .regex(SECRET_NAME, { error: "A secret name is letters, digits and _ (at most 64), e.g. WEATHER_KEY" });

/** An AI provider's name: `ai_key` and the dashboard take it; the provider list in config maps it to a base URL. */
export const AI_PROVIDER_NAME = /^[a-z0-9-]{1,40}$/;

const HEADER_NAME = /^[A-Za-z0-9-]{1,64}$/;
const QUERY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Where the host puts the secret: a header (with an optional prefix such as "Bearer ") or a query parameter. */
export const ApiPlacementSchema = z.union([
  z
    .object({
      header: z.string().regex(HEADER_NAME, { error: "header is a header name, e.g. Authorization or X-Api-Key" }),
      prefix: z
        .string()
        .max(32)
        .regex(/^[\x20-\x7e]*$/, { error: 'prefix is plain text, e.g. "Bearer "' })
        .optional(),
    })
    .strict(),
  z.object({ query: z.string().regex(QUERY_NAME, { error: "query is a query parameter name, e.g. appid" }) }).strict(),
]);
export type ApiPlacement = z.infer<typeof ApiPlacementSchema>;

/** Where a secret goes, in words: `the header Authorization (prefix "Bearer ")` or `the query parameter appid`. */
export function placementText(placement: ApiPlacement): string {
  if ("query" in placement) return `the query parameter ${placement.query}`;
  return placement.prefix
    ? `the header ${placement.header} (prefix ${JSON.stringify(placement.prefix)})`
    : `the header ${placement.header}`;
}

/**
 * The shortest secret value the page takes: a shorter one is guessable, and its encoded forms are too short to scrub
 * from an answer without mangling unrelated text.
 */
export const SECRET_VALUE_MIN_CHARS = 8;
export const SECRET_VALUE_MAX_CHARS = 8192;
