import { z } from "zod";
import { formatBytes, plainText } from "../text.ts";
import { inlineFilesProblem, inlineLimitProblem, PUBLISH_INPUT_LIMITS } from "../apps/limits.ts";
import {
  AppAddressSchema,
  AppRefSchema,
  EmailSchema,
  PersonSchema,
  UserActionSchema,
  VisibilitySchema,
  whenSet,
} from "./common.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

// Tools owned by services/apps: publishing, sharing, versions, delete, the reference. The apps service also
// owns apps-insight.ts (data, logs, stats), apps-keys.ts (secrets, AI keys) and apps-org.ts (org_apps, pausing).

const PUBLISH_TIMEOUT_MS = 60_000;

/** A file path inside the published folder. A leading / or ./ and backslashes are normalised by the service. */
const FilePathSchema = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^\u0000]+$/, { error: "A file path has no NUL characters" })
  .describe("Path in the built folder, e.g. index.html or assets/app.js");

export const AppUrlSchema = z.string().describe("The address where the app opens in a browser");

export const publish = defineTool({
  name: "publish",
  title: "Publish an app",
  description:
    "Publishes a built folder (e.g. dist/) as a new app (leave out address) or a new version (give address). " +
    "When creating, ask the user for the name and who can see it and pass their answer; never choose for them. " +
    "Best: upload: true answers with a shell command (tar + curl) that uploads the folder and publishes it. " +
    `Small apps: files inline, at most ${formatBytes(PUBLISH_INPUT_LIMITS.maxInlineBytes)} in all. ` +
    "SDKs/CI: a manifest, PUT the missing files, then call again with uploadId.",
  service: "apps",
  class: "change",
  openWorld: true,
  timeoutMs: PUBLISH_TIMEOUT_MS,
  input: z
    .object({
      address: AppRefSchema.optional().describe(
        "Address of an existing app to publish a new version of. Leave it out to create a new app.",
      ),
      name: plainText(PUBLISH_INPUT_LIMITS.maxNameLength)
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
              content: z.string().describe("The file's content, encoded as encoding says"),
              encoding: z
                .enum(["utf8", "base64"])
                .default("utf8")
                .describe("utf8 (default) for text; base64 for images, fonts, binaries"),
            })
            .strict(),
        )
        .min(1)
        .max(PUBLISH_INPUT_LIMITS.maxInlineFiles, { error: (issue) => inlineFilesProblem(issue.input) })
        .optional()
        .describe(`The whole built folder inline, at most ${formatBytes(PUBLISH_INPUT_LIMITS.maxInlineBytes)} in all`),
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
        .describe("Every file by path, sha256 and size (SDKs, CI); only files Hatch lacks are uploaded"),
      upload: z
        .boolean()
        .optional()
        .describe("Get a one-time URL and a tar | curl command that uploads and publishes the folder"),
      uploadId: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "An uploadId is letters, digits, _ and -, as publish gave it" })
        .optional()
        .describe("Finish a manifest publish once its files are uploaded"),
    })
    .strict(),
  limitProblem: (input) => (input.files ? inlineLimitProblem(input.files) : null),
  output: z.object({
    status: z
      .enum(["published", "needs_upload", "needs_user"])
      .describe("needs_upload: upload as the text says (uploadUrl); needs_user: see userAction"),
    address: AppAddressSchema.optional(),
    url: AppUrlSchema.optional(),
    version: z.number().int().optional().describe("The version this publish created"),
    account: z.string().optional().describe("The account the app belongs to: personal, or the organization"),
    uploadUrl: z.string().optional().describe("One-time upload URL (manifest: the base; add each missing path)"),
    uploadId: z.string().optional().describe("Manifest: pass it to publish once the missing files are uploaded"),
    missing: z.array(z.string()).optional().describe("Manifest paths Hatch does not have yet"),
    userAction: UserActionSchema.optional(),
  }),
});

export const DOCS_TOPICS = ["all", "browser_library", "service_json", "server_code", "plans"] as const;

export const service_docs = defineTool({
  name: "service_docs",
  title: "Read the developer reference",
  description:
    "Hatch's developer reference in Markdown: the browser library (/_hatch/client.js: data, files, API calls, AI " +
    "calls, server code), the service.json rules and how server code runs. Read it before writing an app that " +
    "stores data, calls an API or runs server code, and follow it exactly.",
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
    /** Deprecated: no longer sent; the reference is the tool's text (sending it twice cost the model twice). */
    content: z.string().optional(),
    url: z.string().describe("The same reference on the web ({base_url}/mcp/docs)"),
  }),
});

export const list_tools = defineTool({
  name: "list_tools",
  title: "List my apps",
  description:
    "Lists the apps the user owns and the apps shared with them: address, name, url, who can see it, opens in the " +
    "last 7 days, current version. Use it to find an app's address.",
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
        inAccount: z
          .boolean()
          .optional()
          .describe("true when the app belongs to the account the user acts as (personal or organization)"),
        owner: PersonSchema,
        paused: z.boolean().describe("true when the organization paused the app; it then answers 503"),
        updatedAt: z.string().describe("ISO 8601 time of the last publish or rollback"),
      }),
    ),
  }),
  // The text gives each app's name, url and the day of its version; flags only when set, the owner only when shared.
  structured: ({ apps }) => ({
    apps: apps.map((a) => ({
      address: a.address,
      visibility: a.visibility,
      ...whenSet("aiDiscoverable", a.aiDiscoverable),
      currentVersion: a.currentVersion,
      opens7d: a.opens7d,
      ...whenSet("sharedBy", a.sharedWithMe ? a.owner.email : null),
      ...whenSet("paused", a.paused),
    })),
  }),
});

export const share = defineTool({
  name: "share",
  title: "Share an app",
  description:
    "Changes who can open an app (visibility), adds or removes people by email, and turns aiDiscoverable on or off " +
    "(public apps only). Making an app public needs the user's own confirmation: in their client, or through a " +
    "returned link they open in a browser.",
  service: "apps",
  class: "change",
  idempotent: true,
  openWorld: true,
  input: z
    .object({
      address: AppRefSchema,
      visibility: VisibilitySchema.optional().describe(
        "New visibility; leave out to keep it. private = only me; org = my organization; people = specific " +
          "people by email; public = anyone with the link",
      ),
      add: z
        .array(EmailSchema)
        .max(100)
        .optional()
        .describe(
          "Emails of people who may open the app (with visibility people); they sign in with that email to open it",
        ),
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
  // The address is the caller's own; the text names the people only while visibility is people (else it counts
  // them), and visibility only with the url.
  structured: (d) => ({
    status: d.status,
    ...whenSet("visibility", d.url ? d.visibility : null),
    ...whenSet("people", d.visibility === "people" ? d.people : null),
    ...whenSet("aiDiscoverable", d.aiDiscoverable),
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
    "Makes an older version of an app current again; the others are kept. Call it without version to list the " +
    "versions and let the user choose, then again with that version.",
  service: "apps",
  class: "change",
  idempotent: true,
  input: z
    .object({
      address: AppRefSchema,
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
  // The text lists the versions (date, publisher, files) only when asked to choose; their numbers are enough here.
  structured: (d) => ({
    status: d.status,
    address: d.address,
    currentVersion: d.currentVersion,
    ...(d.status === "choose_version"
      ? { versions: d.versions.map((v) => v.version) }
      : whenSet("previousVersion", d.status === "rolled_back" ? d.previousVersion : null)),
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
  input: z.object({ address: AppRefSchema }).strict(),
  output: z.object({
    status: z.enum(["deleted", "needs_user"]),
    address: AppAddressSchema,
    userAction: UserActionSchema.optional(),
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
