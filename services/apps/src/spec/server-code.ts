import { AI_PROVIDER_NAME, ApiPlacementSchema, SecretNameSchema, type ApiPlacement } from "@hatch/contracts";
import { z } from "zod";
import { DATA_NAME, DataRuleSchema } from "./data-rules.ts";

// Server code, declared APIs with their secrets, and AI calls: what service.json may say about them and the limits
// the apps service enforces. The sandbox, the app host's routes and the developer reference all read this file; the
// secret names and placements the gateway's pages show too are in @hatch/contracts (apps/secrets.ts).

/** Limits of server code (sizes in bytes). The apps service enforces them and the reference prints them. */
export const SERVER_LIMITS = {
  /** CPU time one request may spend running the app's code (time spent waiting for env calls does not count). */
  cpuMsPerRequest: 200,
  /**
   * CPU time one app's server code may use per second on average, and at once beyond it (per app host copy); past
   * it, requests are refused with 429 and Retry-After until the app is back under.
   */
  cpuMsPerSecond: 500,
  cpuBurstMs: 2000,
  /** Wall time of one request, waiting included; after it the request ends with 504 and its timers never fire. */
  requestSeconds: 30,
  /** Memory of one running copy of the app's server code. */
  memoryBytes: 32 * 1024 * 1024,
  /** The server module's source. */
  maxModuleBytes: 1024 * 1024,
  /** A request body the app host passes to server code, and a response body it takes back. */
  maxRequestBytes: 1024 * 1024,
  maxResponseBytes: 5 * 1024 * 1024,
  /** Log lines kept per app (older ones are dropped), characters kept of one line, lines kept of one request. */
  logLinesKept: 1000,
  logLineChars: 2000,
  logLinesPerRequest: 100,
  /** env.api / hatch.api: a declared API's answer, and how long Hatch waits for it. */
  maxApiResponseBytes: 5 * 1024 * 1024,
  apiTimeoutSeconds: 20,
  /** env.api / env.ai / env.db / env.files calls one request may make. */
  hostCallsPerRequest: 50,
} as const;

/** Limits of `hatch.ai.chat` / `env.ai.chat`. */
export const AI_LIMITS = {
  maxMessages: 100,
  maxRequestBytes: 256 * 1024,
  timeoutSeconds: 60,
  /** AI calls one viewer may make to one app per minute (on top of the data request limit). */
  callsPerViewerPerMinute: 30,
} as const;

/** `server`: the one ES module whose default export has `fetch(request, env)`; relative to the folder's root. */
export const ServerModuleSchema = z.string().regex(/^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9_./-]+\.(?:js|mjs)$/, {
  error: 'server is the path of one .js or .mjs file in the folder, e.g. "api/index.js"',
});

/** Where a secret goes when `in` is left out. */
export const DEFAULT_API_PLACEMENT: ApiPlacement = { header: "Authorization", prefix: "Bearer " };

export const ApiSchema = z
  .object({
    url: z
      .url({ protocol: /^https?$/, error: "url is the API's base address, e.g. https://api.example.com/v1" })
      .refine((url) => !url.includes("?") && !url.includes("#"), { error: "url is a base address without ? or #" }),
    secret: SecretNameSchema.describe("The secret's name; the owner sets its value on the page tool_secret gives"),
    in: ApiPlacementSchema.optional().describe(
      'Where the secret goes; default { "header": "Authorization", "prefix": "Bearer " }',
    ),
    browser: DataRuleSchema.optional().describe(
      "Who may call this API from the app's pages (hatch.api); default anyone. Server code always may",
    ),
  })
  .strict();
export type ApiDeclaration = z.infer<typeof ApiSchema>;

export const MAX_APIS = 20;
export const ApisSchema = z
  .record(
    z.string().regex(DATA_NAME, { error: "API names start with a letter and hold at most 64 letters, digits, _ or -" }),
    ApiSchema,
  )
  .refine((map) => Object.keys(map).length <= MAX_APIS, { error: `at most ${MAX_APIS} apis` });

/** An API as the app host uses it: every default filled in. */
export interface ApiRule {
  url: string;
  secret: string;
  in: ApiPlacement;
  browser: z.infer<typeof DataRuleSchema>;
}

export function apiRule(written: ApiDeclaration): ApiRule {
  return {
    url: written.url.replace(/\/+$/, ""),
    secret: written.secret,
    in: written.in ?? DEFAULT_API_PLACEMENT,
    browser: written.browser ?? "anyone",
  };
}

/** `hatch.ai.chat` / `env.ai.chat` input: OpenAI-style chat messages; the host adds the key. */
export const AiChatRequestSchema = z
  .object({
    messages: z
      .array(
        z
          .object({
            role: z.enum(["system", "user", "assistant"]),
            content: z.string().max(AI_LIMITS.maxRequestBytes),
          })
          .strict(),
      )
      .min(1, { error: "messages needs at least one message" })
      .max(AI_LIMITS.maxMessages, { error: `at most ${AI_LIMITS.maxMessages} messages` }),
    model: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[A-Za-z0-9._:/@-]+$/, { error: "model is a model name such as gpt-4o-mini" }),
    provider: z.string().regex(AI_PROVIDER_NAME).optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().min(1).max(32_000).optional(),
  })
  .strict();
export type AiChatRequest = z.infer<typeof AiChatRequestSchema>;

/** What `hatch.ai.chat` resolves to. */
export interface AiChatReply {
  content: string;
  model: string;
  usage: { inputTokens: number; outputTokens: number };
}
