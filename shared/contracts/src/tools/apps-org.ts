import { z } from "zod";
import { plainText } from "../text.ts";
import { AppAddressSchema, AppRefSchema, EmailSchema, PersonSchema, VisibilitySchema, whenSet } from "./common.ts";
import { AppUrlSchema } from "./apps.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

// The organization's view of apps, owned by services/apps because apps and pausing live there.

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
  // The text gives each app's name, url and the day of its version.
  structured: ({ apps }) => ({
    apps: apps.map((a) => ({
      address: a.address,
      owner: a.owner.email,
      visibility: a.visibility,
      ...whenSet("paused", a.paused),
      currentVersion: a.currentVersion,
      opens7d: a.opens7d,
    })),
  }),
});

export const org_app_pause = defineTool({
  name: "org_app_pause",
  title: "Pause or unpause an app",
  description:
    "Pauses an app of the organization (it stops answering visitors until unpaused; nothing is deleted) or " +
    "unpauses it. Only managers (the owner, admins and managers of the organization) may do this. Give paused true to pause and false to unpause; calling again " +
    "with the same value changes nothing.",
  service: "apps",
  class: "change",
  idempotent: true,
  input: z
    .object({
      address: AppRefSchema,
      paused: z.boolean().describe("true = pause the app; false = unpause it"),
      reason: plainText(500).optional().describe("Why, for the activity log and the app's owner"),
    })
    .strict(),
  output: z.object({
    address: AppAddressSchema,
    paused: z.boolean(),
    changed: z.boolean().describe("false when the app already was in that state"),
  }),
});

export type OrgAppsInput = ToolInput<typeof org_apps>;
export type OrgAppsOutput = ToolOutput<typeof org_apps>;
export type OrgAppPauseInput = ToolInput<typeof org_app_pause>;
export type OrgAppPauseOutput = ToolOutput<typeof org_app_pause>;
