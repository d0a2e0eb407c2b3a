import { z } from "zod";
import { MoneySchema } from "./common.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

// Tools owned by services/billing. The spec leaves the value sets of plan and billing state open; these are ours.

export const PLANS = ["free", "pro", "team", "enterprise"] as const;
export const PlanSchema = z.enum(PLANS);
export type Plan = z.infer<typeof PlanSchema>;

export const BILLING_STATES = ["active", "trialing", "past_due", "suspended", "canceled"] as const;
export const BillingStateSchema = z
  .enum(BILLING_STATES)
  .describe(
    "active = paid up; trialing = in a free trial; past_due = a payment failed and must be fixed; " +
      "suspended = paid features are stopped until payment; canceled = the paid plan has ended",
  );
export type BillingState = z.infer<typeof BillingStateSchema>;

export const billing = defineTool({
  name: "billing",
  title: "Show billing",
  description:
    "Reports the billing of the user's account or organization: the plan, its state, whether a card is on " +
    "file, and this month's usage and amount so far. When the user must act (add a card, fix a failed " +
    "payment, change the plan) the result holds a url: give it to the user to open in a browser and do it " +
    "there. Never ask for card details in the chat. manage = also the links to add a card and to change the plan; " +
    "seats = the link where the user pays for that many seats (organizations; a seat is a member or an open invitation).",
  service: "billing",
  class: "read",
  openWorld: true,
  input: z
    .object({
      manage: z.boolean().default(false).describe("true = also return links to add a card and to change the plan"),
      seats: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .optional()
        .describe("An organization's seats to pay for (Team); returns the link where the user confirms"),
    })
    .strict(),
  output: z.object({
    plan: PlanSchema,
    state: BillingStateSchema,
    cardOnFile: z.boolean(),
    usage: z
      .object({
        periodStart: z.string().describe("ISO 8601 date the billing month started"),
        periodEnd: z.string().describe("ISO 8601 date it ends"),
        opens: z.number().int().describe("App opens this month"),
        storageBytes: z.number().int().describe("Data and files stored"),
        aiTokens: z.number().int().describe("AI tokens paid through Hatch this month"),
        domains: z.number().int().describe("Bought domains"),
        amountSoFar: MoneySchema.describe("What this month costs so far"),
      })
      .describe("This month's usage"),
    actionNeeded: z
      .string()
      .nullable()
      .describe("What the user must do, in plain words, e.g. 'add a card'; null when nothing"),
    url: z
      .string()
      .nullable()
      .describe("Page where the user acts: the payment provider's page, or the billing settings page"),
    links: z
      .object({
        addCard: z.string().nullable().describe("Add or change the card; never changes the plan"),
        plan: z.string().nullable().describe("Change the plan (from Free: start Pro or Team)"),
        seats: z.string().nullable().describe("Change an organization's seats; null for a personal account"),
      })
      .optional()
      .describe("With manage or seats: one page per action"),
  }),
});

export type BillingInput = ToolInput<typeof billing>;
export type BillingOutput = ToolOutput<typeof billing>;
