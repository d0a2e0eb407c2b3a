import { z } from "zod";
import {
  AiKeyChoiceSchema,
  AiKeyScopeSchema,
  AppAddressSchema,
  EmailSchema,
  PersonSchema,
  UserActionSchema,
  VisibilitySchema,
} from "./common.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

// Tools owned by services/apps: publishing, sharing, versions, data, logs, stats, secrets, AI keys,
// and the organization's view of apps (org_apps, org_app_pause), because apps and pausing live here.

const PUBLISH_TIMEOUT_MS = 60_000;

/** A file path inside the published folder: relative, forward slashes, no `.`/`..` segments. */
const FilePathSchema = z
  .string()
  .min(1)
  .max(512)
  .regex(/^(?!\/)(?!.*\/\/)(?!(?:.*\/)?\.\.?(?:\/|$))[^\\\u0000]+$/, {
    error: "A file path is relative to the built folder, uses /, and has no . or .. parts, e.g. assets/app.js",
  })
  .describe("Path relative to the built folder, with forward slashes, e.g. index.html or assets/app.js");

const AppUrlSchema = z.string().describe("The address where the app opens in a browser");

export const publish = defineTool({
  name: "publish",
  title: "Publish an app",
  description:
    "Publishes a built folder (for example dist/ after the build), either as a new app (leave out address) or " +
    "as a new version of an existing app (give its address). When creating, the user must choose the app's " +
    "name and who can see it: ask the user and pass their answer as name and visibility; never choose for them. " +
    "Send small apps inline as files; for larger ones send a manifest of path, sha256 and size, then upload " +
    "each file listed in uploads with an HTTP PUT of its raw bytes to its url and call publish again with the " +
    "same manifest to finish. Returns the app's address, url and new version number.",
  service: "apps",
  class: "change",
  openWorld: true,
  timeoutMs: PUBLISH_TIMEOUT_MS,
  input: z
    .object({
      address: AppAddressSchema.optional().describe(
        "Address of an existing app to publish a new version of. Leave it out to create a new app.",
      ),
      name: z
        .string()
        .min(1)
        .max(80)
        .optional()
        .describe("Only when creating: the app's name as the user chose it"),
      visibility: VisibilitySchema.optional().describe(
        "Only when creating: who can see the app, as the user chose it. private = only me; org = my " +
          "organization; people = specific people (add them with share); public = anyone with the link",
      ),
      expectedVersion: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe(
          "The version you believe is current. If another publish came first the call is refused with a " +
            "conflict instead of overwriting it; leave it out to publish regardless",
        ),
      files: z
        .array(
          z
            .object({
              path: FilePathSchema,
              content: z.string().max(5_000_000).describe("The file's content, encoded as encoding says"),
              encoding: z
                .enum(["utf8", "base64"])
                .describe("utf8 for text files (HTML, CSS, JS, JSON); base64 for images, fonts and other binaries"),
            })
            .strict(),
        )
        .min(1)
        .max(500)
        .optional()
        .describe(
          "The whole built folder inline, for small apps (a few files, under about 1 MB in total). " +
            "Give exactly one of files or manifest.",
        ),
      manifest: z
        .array(
          z
            .object({
              path: FilePathSchema,
              sha256: z
                .string()
                .regex(/^[0-9a-f]{64}$/, { error: "sha256 is 64 lowercase hex characters" })
                .describe("SHA-256 of the file's bytes, 64 lowercase hex characters"),
              size: z.number().int().min(0).describe("The file's size in bytes"),
            })
            .strict(),
        )
        .min(1)
        .max(20_000)
        .optional()
        .describe(
          "Every file of the built folder by path, sha256 and size, for larger apps. Only files the service " +
            "does not have yet are uploaded. Give exactly one of files or manifest.",
        ),
    })
    .strict(),
  output: z.object({
    status: z
      .enum(["published", "needs_upload", "needs_user"])
      .describe(
        "published = the new version is live; needs_upload = upload the files in uploads, then call publish " +
          "again with the same manifest; needs_user = see userAction",
      ),
    address: AppAddressSchema.optional(),
    url: AppUrlSchema.optional(),
    version: z.number().int().optional().describe("The version this publish created (current when published)"),
    missing: z
      .array(z.string())
      .optional()
      .describe("Manifest paths whose content the service does not have yet"),
    uploads: z
      .array(
        z.object({
          path: z.string(),
          sha256: z.string(),
          url: z.string().describe("One-time URL: send the file's raw bytes to it with HTTP PUT"),
          method: z.literal("PUT"),
          expiresAt: z.string().describe("ISO 8601 time after which the URL no longer works"),
        }),
      )
      .optional()
      .describe("One upload per missing file"),
    userAction: UserActionSchema.optional(),
  }),
});

export const DOCS_TOPICS = ["all", "browser_library", "service_json", "server_code"] as const;

export const service_docs = defineTool({
  name: "service_docs",
  title: "Read the developer reference",
  description:
    "Returns Hatch's developer reference in Markdown: the browser library (/_hatch/client.js: data " +
    "collections, file buckets, calls to APIs, AI calls, server code calls), the service.json rules, and how " +
    "server code runs. Read it before writing an app that stores data, calls an API or runs server code, and " +
    "follow it exactly. Pass topic to read one part only.",
  service: "apps",
  class: "read",
  input: z
    .object({
      topic: z
        .enum(DOCS_TOPICS)
        .default("all")
        .describe("all = the whole reference; or one part: browser_library, service_json, server_code"),
    })
    .strict(),
  output: z.object({
    topic: z.enum(DOCS_TOPICS),
    content: z.string().describe("The reference in Markdown"),
    url: z.string().describe("The same reference on the web ({base_url}/mcp/docs)"),
  }),
});

export const list_tools = defineTool({
  name: "list_tools",
  title: "List my apps",
  description:
    "Lists the apps the user owns and the apps other people shared with the user, each with its address, " +
    "name, url, who can see it, how many times it was opened in the last 7 days, and its current version. " +
    "Use it to find an app's address before calling another tool on it.",
  service: "apps",
  class: "read",
  input: z
    .object({
      include: z
        .enum(["all", "mine", "shared"])
        .default("all")
        .describe("all = both; mine = apps the user owns; shared = apps shared with the user"),
    })
    .strict(),
  output: z.object({
    apps: z.array(
      z.object({
        address: AppAddressSchema,
        name: z.string(),
        url: AppUrlSchema,
        visibility: VisibilitySchema,
        aiDiscoverable: z.boolean(),
        opens7d: z.number().int().describe("Times the app was opened in the last 7 days"),
        currentVersion: z.number().int().nullable().describe("null when nothing has been published yet"),
        sharedWithMe: z.boolean().describe("true when someone else owns the app and shared it with the user"),
        owner: PersonSchema,
        paused: z.boolean().describe("true when the organization paused the app; it then answers 503"),
        updatedAt: z.string().describe("ISO 8601 time of the last publish or rollback"),
      }),
    ),
  }),
});

export const share = defineTool({
  name: "share",
  title: "Share an app",
  description:
    "Changes who can open an app: set visibility (private = only the owner, org = the owner's organization, " +
    "people = specific people, public = anyone with the link), add or remove people by email, and turn " +
    "aiDiscoverable on or off. aiDiscoverable can be on only for public apps. Making an app public needs the " +
    "user's own confirmation; if a link is returned, the user opens it in a browser and confirms there.",
  service: "apps",
  class: "change",
  idempotent: true,
  openWorld: true,
  input: z
    .object({
      address: AppAddressSchema,
      visibility: VisibilitySchema.optional().describe(
        "New visibility; leave out to keep it. private = only me; org = my organization; people = specific " +
          "people by email; public = anyone with the link",
      ),
      add: z
        .array(EmailSchema)
        .max(100)
        .optional()
        .describe("Emails of people who may open the app (with visibility people); they sign in with that email to open it"),
      remove: z.array(EmailSchema).max(100).optional().describe("Emails of people who may no longer open the app"),
      aiDiscoverable: z
        .boolean()
        .optional()
        .describe("Lets AI assistants find and recommend the app. Only for public apps"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["updated", "needs_user"]),
    address: AppAddressSchema,
    url: AppUrlSchema.optional(),
    visibility: VisibilitySchema.optional(),
    people: z.array(z.string()).optional().describe("Emails of the people the app is shared with"),
    aiDiscoverable: z.boolean().optional(),
    userAction: UserActionSchema.optional(),
  }),
});

const VersionSchema = z.object({
  version: z.number().int(),
  current: z.boolean(),
  publishedAt: z.string().describe("ISO 8601"),
  publishedBy: z.string().describe("Email of the person who published it"),
  fileCount: z.number().int(),
});

export const rollback = defineTool({
  name: "rollback",
  title: "Roll back an app",
  description:
    "Makes an older version of an app current again; the version that was current stops being current but " +
    "is kept. Call it without version to see the app's versions and choose one with the user, then call it " +
    "again with that version. Returns the current version afterwards.",
  service: "apps",
  class: "change",
  idempotent: true,
  input: z
    .object({
      address: AppAddressSchema,
      version: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe("The version to make current. Leave out to change nothing and list the versions"),
    })
    .strict(),
  output: z.object({
    status: z
      .enum(["rolled_back", "already_current", "choose_version"])
      .describe("choose_version = nothing changed; pick one of versions and call again"),
    address: AppAddressSchema,
    url: AppUrlSchema,
    currentVersion: z.number().int().nullable(),
    previousVersion: z.number().int().nullable().describe("The version that was current before this call"),
    versions: z.array(VersionSchema).describe("Newest first"),
  }),
});

export const delete_tool = defineTool({
  name: "delete_tool",
  title: "Delete an app",
  description:
    "Deletes an app with all its versions, data, files, logs and secrets. Its address can never be used " +
    "again. The user must confirm the delete themselves: their client shows a question, or the result holds " +
    "a link the user opens in a browser to confirm; only then is the app deleted. Do not call it unless the " +
    "user asked to delete this app.",
  service: "apps",
  class: "delete",
  idempotent: true,
  input: z.object({ address: AppAddressSchema }).strict(),
  output: z.object({
    status: z.enum(["deleted", "needs_user"]),
    address: AppAddressSchema,
    userAction: UserActionSchema.optional(),
  }),
});

export const tool_data = defineTool({
  name: "tool_data",
  title: "Show an app's data",
  description:
    "Shows what an app has stored: for each data collection its document count, its rules from service.json " +
    "and its most recent documents; for each file bucket its file count. Use it to check that an app saves " +
    "what it should or to answer questions about its data. Give collection to see one collection only.",
  service: "apps",
  class: "read",
  input: z
    .object({
      address: AppAddressSchema,
      collection: z.string().min(1).max(64).optional().describe("Show only this collection"),
      recent: z
        .number()
        .int()
        .min(0)
        .max(20)
        .default(5)
        .describe("How many of the newest documents to show per collection"),
    })
    .strict(),
  output: z.object({
    address: AppAddressSchema,
    collections: z.array(
      z.object({
        name: z.string(),
        count: z.number().int(),
        rules: z.record(z.string(), z.unknown()).describe("The collection's rules as written in service.json"),
        recent: z
          .array(
            z.object({
              id: z.string(),
              createdAt: z.string().describe("ISO 8601"),
              data: z.record(z.string(), z.unknown()),
            }),
          )
          .describe("Newest first"),
      }),
    ),
    buckets: z.array(z.object({ name: z.string(), count: z.number().int() })),
  }),
});

export const APP_LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export const TOOL_LOGS_MAX_LINES = 100;

export const tool_logs = defineTool({
  name: "tool_logs",
  title: "Show an app's server logs",
  description:
    "Shows the last lines (at most 100) that an app's server code logged, each with its time and level. " +
    "Only the app's owner may read them. Use it to debug server code: set level to see only that level and " +
    "more severe ones, e.g. error.",
  service: "apps",
  class: "read",
  input: z
    .object({
      address: AppAddressSchema,
      level: z
        .enum(APP_LOG_LEVELS)
        .optional()
        .describe("Only lines at this level or more severe (debug < info < warn < error); leave out for all"),
      limit: z
        .number()
        .int()
        .min(1)
        .max(TOOL_LOGS_MAX_LINES, { error: `At most ${TOOL_LOGS_MAX_LINES} log lines can be read at once` })
        .default(TOOL_LOGS_MAX_LINES)
        .describe("How many of the latest lines to return, at most 100"),
    })
    .strict(),
  output: z.object({
    address: AppAddressSchema,
    lines: z
      .array(
        z.object({
          time: z.string().describe("ISO 8601"),
          level: z.enum(APP_LOG_LEVELS),
          message: z.string(),
        }),
      )
      .describe("Oldest first, ending with the newest line"),
    truncated: z.boolean().describe("true when older lines exist beyond the ones returned"),
  }),
});

export const tool_stats = defineTool({
  name: "tool_stats",
  title: "Show an app's statistics",
  description:
    "Shows how often an app was opened and by how many unique viewers, per day over the last few days " +
    "(7 unless days says otherwise), with totals for the period. Use it when the user asks how an app is used.",
  service: "apps",
  class: "read",
  input: z
    .object({
      address: AppAddressSchema,
      days: z.number().int().min(1).max(30).default(7).describe("How many days back, today included"),
    })
    .strict(),
  output: z.object({
    address: AppAddressSchema,
    days: z
      .array(
        z.object({
          date: z.string().describe("YYYY-MM-DD (UTC)"),
          opens: z.number().int(),
          uniqueViewers: z.number().int(),
        }),
      )
      .describe("Oldest first"),
    totalOpens: z.number().int(),
    totalUniqueViewers: z.number().int().describe("Distinct viewers over the whole period"),
  }),
});

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
      address: AppAddressSchema,
      name: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "A secret name is letters, digits and _, e.g. WEATHER_KEY" })
        .describe("The secret's name as service.json's apis refers to it, e.g. WEATHER_KEY. Never its value"),
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
      address: AppAddressSchema.optional().describe("The app, when scope is tool"),
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
      address: AppAddressSchema,
      value: AiKeyChoiceSchema.describe(
        "company = the organization's key; mine = the user's own key; tool = the app's own key; none = no AI",
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

export const org_apps = defineTool({
  name: "org_apps",
  title: "List the organization's apps",
  description:
    "Lists every app in the user's organization, whoever owns it, with its owner, visibility, whether it is " +
    "paused, its current version and opens in the last 7 days. Use it to get an overview or to find an app " +
    "to pause; filter by owner email or paused state.",
  service: "apps",
  class: "read",
  input: z
    .object({
      owner: EmailSchema.optional().describe("Only apps owned by this member"),
      paused: z.boolean().optional().describe("true = only paused apps; false = only running apps"),
    })
    .strict(),
  output: z.object({
    apps: z.array(
      z.object({
        address: AppAddressSchema,
        name: z.string(),
        url: AppUrlSchema,
        owner: PersonSchema,
        visibility: VisibilitySchema,
        paused: z.boolean(),
        currentVersion: z.number().int().nullable(),
        opens7d: z.number().int(),
        updatedAt: z.string().describe("ISO 8601"),
      }),
    ),
  }),
});

export const org_app_pause = defineTool({
  name: "org_app_pause",
  title: "Pause or unpause an app",
  description:
    "Pauses an app of the organization (it stops answering visitors until unpaused; nothing is deleted) or " +
    "unpauses it. Only managers may do this. Give paused true to pause and false to unpause; calling again " +
    "with the same value changes nothing.",
  service: "apps",
  class: "change",
  idempotent: true,
  input: z
    .object({
      address: AppAddressSchema,
      paused: z.boolean().describe("true = pause the app; false = unpause it"),
      reason: z.string().max(500).optional().describe("Why, for the activity log and the app's owner"),
    })
    .strict(),
  output: z.object({
    address: AppAddressSchema,
    paused: z.boolean(),
    changed: z.boolean().describe("false when the app already was in that state"),
  }),
});

export type PublishInput = ToolInput<typeof publish>;
export type PublishOutput = ToolOutput<typeof publish>;
export type ServiceDocsInput = ToolInput<typeof service_docs>;
export type ServiceDocsOutput = ToolOutput<typeof service_docs>;
export type ListToolsInput = ToolInput<typeof list_tools>;
export type ListToolsOutput = ToolOutput<typeof list_tools>;
export type ShareInput = ToolInput<typeof share>;
export type ShareOutput = ToolOutput<typeof share>;
export type RollbackInput = ToolInput<typeof rollback>;
export type RollbackOutput = ToolOutput<typeof rollback>;
export type DeleteToolInput = ToolInput<typeof delete_tool>;
export type DeleteToolOutput = ToolOutput<typeof delete_tool>;
export type ToolDataInput = ToolInput<typeof tool_data>;
export type ToolDataOutput = ToolOutput<typeof tool_data>;
export type ToolLogsInput = ToolInput<typeof tool_logs>;
export type ToolLogsOutput = ToolOutput<typeof tool_logs>;
export type ToolStatsInput = ToolInput<typeof tool_stats>;
export type ToolStatsOutput = ToolOutput<typeof tool_stats>;
export type ToolSecretInput = ToolInput<typeof tool_secret>;
export type ToolSecretOutput = ToolOutput<typeof tool_secret>;
export type AiKeyInput = ToolInput<typeof ai_key>;
export type AiKeyOutput = ToolOutput<typeof ai_key>;
export type ToolAiInput = ToolInput<typeof tool_ai>;
export type ToolAiOutput = ToolOutput<typeof tool_ai>;
export type OrgAppsInput = ToolInput<typeof org_apps>;
export type OrgAppsOutput = ToolOutput<typeof org_apps>;
export type OrgAppPauseInput = ToolInput<typeof org_app_pause>;
export type OrgAppPauseOutput = ToolOutput<typeof org_app_pause>;
