import { z } from "zod";
import {
  AiKeyChoiceSchema,
  AiKeyScopeSchema,
  AppAddressSchema,
  AppRefSchema,
  isoDay,
  UserActionSchema,
  whenSet,
} from "./common.ts";
import { SecretNameSchema } from "../apps/secrets.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

// Tools owned by services/apps for secrets and AI keys. Values never pass through them: they return links.

export const tool_secret = defineTool({
  name: "tool_secret",
  title: "Set or delete an app's secret",
  description:
    "Manages a secret that an app's apis setting in service.json refers to by name, such as an API key for " +
    "another service. Never ask the user for the secret's value and never pass it: action link returns a " +
    "dashboard url that the user opens in a browser to type or replace the value there. action delete " +
    "removes the secret after the user confirms.",
  service: "apps",
  class: "delete",
  input: z
    .object({
      address: AppRefSchema,
      name: SecretNameSchema.describe(
        "The secret's name as service.json's apis refers to it, e.g. WEATHER_KEY. Never its value",
      ),
      action: z
        .enum(["link", "delete"])
        .default("link")
        .describe("link = get the dashboard page where the user sets or replaces the value; delete = remove it"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["link", "deleted", "needs_user"]),
    address: AppAddressSchema,
    name: z.string(),
    url: z
      .string()
      .nullable()
      .describe("Dashboard page where the user types the value; give it to the user to open in a browser"),
    isSet: z.boolean().describe("Whether a value is stored now (the value itself is never shown)"),
    referencedBy: z.array(z.string()).describe("Names of the apis in service.json that use this secret"),
    unconfirmed: z
      .array(
        z.object({
          api: z.string(),
          url: z.string().describe("The base url the current version declares for this api"),
          in: z.string().describe("Where the secret would go in the request"),
          was: z
            .object({ url: z.string(), in: z.string() })
            .nullable()
            .describe("Where the owner last confirmed it would go for this api; null when never"),
        }),
      )
      .optional()
      .describe(
        "Apis the secret is not sent to: their destination is not the one the owner saw when setting the value. " +
          "The owner confirms the new one on the page at url",
      ),
    userAction: UserActionSchema.optional(),
  }),
});

export const ai_key = defineTool({
  name: "ai_key",
  title: "Add or delete an AI provider key",
  description:
    "Manages AI provider keys: the user's own (mine), the company's (company) or one app's (tool). Never ask " +
    "for the key and never pass it: action link returns a dashboard url that the user opens in a browser to " +
    "add the key there. action delete removes the key of that scope and provider after the user confirms. " +
    "The result lists the keys that exist (provider and scope only).",
  service: "apps",
  class: "delete",
  input: z
    .object({
      action: z
        .enum(["link", "delete"])
        .default("link")
        .describe("link = get the dashboard page where the user adds a key; delete = remove one"),
      scope: AiKeyScopeSchema,
      address: AppRefSchema.optional().describe("The app, when scope is tool"),
      provider: z
        .string()
        .regex(/^[a-z0-9-]{1,40}$/)
        .optional()
        .describe("AI provider, e.g. openai or anthropic. Needed to delete; optional for link"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["link", "deleted", "needs_user"]),
    url: z
      .string()
      .nullable()
      .describe("Dashboard page where the user adds the key; give it to the user to open in a browser"),
    keys: z.array(
      z.object({
        scope: AiKeyScopeSchema,
        provider: z.string(),
        address: AppAddressSchema.nullable().describe("The app, for scope tool"),
        addedAt: z.string().describe("ISO 8601"),
        addedBy: z.string().describe("Email of the person who added it"),
      }),
    ),
    userAction: UserActionSchema.optional(),
  }),
  // The text gives the link (the gateway offers it from userAction before this form drops it) and, with a link, the
  // keys by day; after a delete it says only what was deleted.
  structured: (d) => ({
    status: d.status,
    ...whenSet("url", d.url),
    ...(d.status === "link"
      ? {
          keys: d.keys.map((k) => ({
            provider: k.provider,
            scope: k.scope,
            ...whenSet("address", k.address),
            addedAt: isoDay(k.addedAt),
            addedBy: k.addedBy,
          })),
        }
      : {}),
  }),
});

export const tool_ai = defineTool({
  name: "tool_ai",
  title: "Choose which AI key an app uses",
  description:
    "Chooses whose AI provider key pays for an app's AI calls: company (the organization's key), mine (the " +
    "user's own key), tool (the app's own key) or none (AI calls are refused). If the choice can cost money " +
    "the user must confirm it, and the result carries a cost warning to tell the user. Add a missing key " +
    "with ai_key.",
  service: "apps",
  class: "change",
  idempotent: true,
  input: z
    .object({
      address: AppRefSchema,
      value: AiKeyChoiceSchema.describe(
        "company = the organization's key; mine = the user's own key; tool = the app's own key; none = no AI",
      ),
      acceptCost: z
        .boolean()
        .optional()
        .describe(
          "Only when a previous call returned a cost warning and asked the user: true if the user said they accept " +
            "paying for other people's AI calls on this app. Never set it without asking the user",
        ),
    })
    .strict(),
  output: z.object({
    status: z.enum(["updated", "needs_user"]),
    address: AppAddressSchema,
    value: AiKeyChoiceSchema,
    keyAvailable: z.boolean().describe("Whether a key exists for this choice; if not, add one with ai_key"),
    costWarning: z.string().nullable().describe("Tell the user this when it is not null"),
    userAction: UserActionSchema.optional(),
  }),
});

export type ToolSecretInput = ToolInput<typeof tool_secret>;
export type ToolSecretOutput = ToolOutput<typeof tool_secret>;
export type AiKeyInput = ToolInput<typeof ai_key>;
export type AiKeyOutput = ToolOutput<typeof ai_key>;
export type ToolAiInput = ToolInput<typeof tool_ai>;
export type ToolAiOutput = ToolOutput<typeof tool_ai>;
