import { z } from "zod";
import { plainText } from "../text.ts";
import {
  AppAddressSchema,
  AppRefSchema,
  DnsRecordSchema,
  DomainNameSchema,
  MoneySchema,
  UserActionSchema,
  whenSet,
} from "./common.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

// Tools owned by services/domains: the company's address for apps, apps' custom domains, and bought domains.

const BUY_DOMAIN_TIMEOUT_MS = 60_000;

/** Stages of a bought domain (interface spec, States). */
export const DOMAIN_STAGES = ["registering", "dns", "certificate", "live"] as const;
export const DomainStageSchema = z
  .enum(DOMAIN_STAGES)
  .describe(
    "registering = the registrar is registering it; dns = waiting for DNS to point at Hatch; certificate = " +
      "the HTTPS certificate is being issued; live = it works",
  );

/** Progress of a company domain or an app's custom domain. */
export const CONNECTION_STAGES = ["dns", "certificate", "live"] as const;
export const ConnectionStageSchema = z
  .enum(CONNECTION_STAGES)
  .describe(
    "dns = waiting for the DNS records in records; certificate = DNS is right, the HTTPS certificate is being " +
      "issued; live = it works",
  );

export const company_domain = defineTool({
  name: "company_domain",
  title: "Show the company's address for apps",
  description:
    "Shows the company's own address for its apps (for example apps.acme.com, so apps open at " +
    "<address>.apps.acme.com), how far its setup is, and the DNS records that still need to be added at the " +
    "company's DNS provider. Returns domain null when none is set up; a company admin can set one with " +
    "company_domain_set.",
  service: "domains",
  class: "read",
  input: z.object({}).strict(),
  output: z.object({
    domain: z.string().nullable().describe("The company's domain for apps, or null when none is set up"),
    stage: ConnectionStageSchema.nullable(),
    appUrlPattern: z.string().nullable().describe("How app addresses look on it, e.g. https://<address>.apps.acme.com"),
    records: z.array(DnsRecordSchema).describe("DNS records still needed; empty when all are in place"),
    problem: z.string().nullable().describe("What is wrong, in plain words, when setup is stuck"),
  }),
});

export const company_domain_set = defineTool({
  name: "company_domain_set",
  title: "Set up or remove the company's address for apps",
  description:
    "Sets up the company's own domain for its apps (action set, with domain such as apps.acme.com) or " +
    "removes it (action remove, after the user confirms; apps fall back to the default address). Only company " +
    "admins may do this. After set, tell the user to add the returned DNS records at their DNS provider; " +
    "check progress with company_domain.",
  service: "domains",
  class: "delete",
  openWorld: true,
  input: z
    .object({
      action: z.enum(["set", "remove"]).describe("set = set up or replace the domain; remove = stop using it"),
      domain: DomainNameSchema.optional().describe("For set: the domain to use, e.g. apps.acme.com"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["set", "removed", "needs_user"]),
    domain: z.string().nullable(),
    stage: ConnectionStageSchema.nullable(),
    records: z.array(DnsRecordSchema).describe("DNS records to add at the company's DNS provider"),
    userAction: UserActionSchema.optional(),
  }),
});

const CustomDomainSchema = z.object({
  hostname: z.string(),
  stage: ConnectionStageSchema,
  records: z.array(DnsRecordSchema).describe("DNS records to add; each says whether it is seen yet"),
  problem: z.string().nullable().describe("What is wrong, in plain words, when progress is stuck"),
  checkedAt: z.string().nullable().describe("ISO 8601 time of the last DNS check"),
});

export const custom_domains = defineTool({
  name: "custom_domains",
  title: "List an app's custom domains",
  description:
    "Lists the user's own domains an app is on (for example todo.example.com), with the progress of each: " +
    "waiting for DNS, issuing the certificate, or live, and the DNS records still to add. Use it to follow up " +
    "after custom_domain.",
  service: "domains",
  class: "read",
  input: z.object({ address: AppRefSchema }).strict(),
  output: z.object({
    address: AppAddressSchema,
    domains: z.array(CustomDomainSchema),
  }),
});

export const custom_domain = defineTool({
  name: "custom_domain",
  title: "Connect or disconnect a custom domain",
  description:
    "Puts an app on one of the user's own domains or subdomains, e.g. todo.example.com (action connect), or " +
    "disconnects it (action disconnect, after the user confirms). After connect, tell the user to add the " +
    "returned DNS records at their DNS provider; the certificate follows by itself, and custom_domains shows " +
    "the progress.",
  service: "domains",
  class: "delete",
  openWorld: true,
  input: z
    .object({
      address: AppRefSchema,
      hostname: DomainNameSchema.describe("The user's domain or subdomain for the app, e.g. todo.example.com"),
      action: z
        .enum(["connect", "disconnect"])
        .default("connect")
        .describe("connect = put the app on hostname; disconnect = take it off"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["connected", "disconnected", "needs_user"]),
    address: AppAddressSchema,
    hostname: z.string(),
    domain: CustomDomainSchema.nullable().describe("The domain's progress after connect; null after disconnect"),
    userAction: UserActionSchema.optional(),
  }),
});

const DomainOfferSchema = z.object({
  domain: z.string(),
  available: z.boolean(),
  premium: z.boolean().describe("Priced higher than usual by the registry"),
  firstYearPrice: MoneySchema.nullable().describe("Price of the first year; null when not available"),
  renewalPrice: MoneySchema.nullable().describe("Price of each later year; null when not available"),
});

export const find_domain = defineTool({
  name: "find_domain",
  title: "Find a domain to buy",
  description:
    "Searches for domain names the user could buy, from a word or a full name (e.g. acme or acme.com), and " +
    "says for each whether it is available, its first-year price and its renewal price. Show both prices to " +
    "the user; renewal is often higher than the first year. Buy one with buy_domain.",
  service: "domains",
  class: "read",
  openWorld: true,
  hiddenFor: ["chatgpt"],
  input: z
    .object({
      query: plainText(253).describe("A word or a domain name to look for, e.g. acme or acme.com"),
      tlds: z
        .array(z.string().regex(/^[a-z0-9-]{2,63}$/))
        .max(10)
        .optional()
        .describe('Endings to try, without the dot, e.g. ["com", "dev"]; leave out for the usual ones'),
      limit: z.number().int().min(1).max(20).default(10).describe("How many results at most"),
    })
    .strict(),
  output: z.object({
    results: z.array(DomainOfferSchema),
  }),
  // The prices as the text shows them (the amount and currency are in the formatted price), by domain.
  structured: ({ results }) => ({
    available: Object.fromEntries(
      results
        .filter((r) => r.available)
        .map((r) => [
          r.domain,
          {
            ...whenSet("premium", r.premium),
            firstYearPrice: r.firstYearPrice?.formatted ?? null,
            renewalPrice: r.renewalPrice?.formatted ?? null,
          },
        ]),
    ),
    unavailable: results.filter((r) => !r.available).map((r) => r.domain),
  }),
});

export const buy_domain = defineTool({
  name: "buy_domain",
  title: "Buy a domain",
  description:
    "Buys a domain found with find_domain. The user must confirm the price and the owner's details " +
    "themselves: their client shows a form, or the result holds a link the user opens in a browser to " +
    "confirm and pay; nothing is bought before that. Never fill in owner details or payment for the user. " +
    "After buying, follow progress with domain_status.",
  service: "domains",
  class: "change",
  openWorld: true,
  hiddenFor: ["chatgpt"],
  timeoutMs: BUY_DOMAIN_TIMEOUT_MS,
  input: z
    .object({
      domain: DomainNameSchema.describe("The domain to buy, exactly as find_domain returned it"),
      address: AppRefSchema.optional().describe("An app to put on the domain once it is live"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["bought", "needs_user"]),
    domain: z.string(),
    stage: DomainStageSchema.nullable(),
    firstYearPrice: MoneySchema.nullable(),
    renewalPrice: MoneySchema.nullable(),
    renewsAt: z.string().nullable().describe("ISO 8601 date of the next renewal"),
    userAction: UserActionSchema.optional(),
  }),
});

export const domain_status = defineTool({
  name: "domain_status",
  title: "Where is a bought domain",
  description:
    "Reports where each domain the user bought is: registering, dns, certificate or live, with its renewal " +
    "date. Give domain for one domain; leave it out to see all of them. Tell the user in plain words, e.g. " +
    "'the certificate is being issued; it usually takes a few minutes'.",
  service: "domains",
  class: "read",
  input: z
    .object({
      domain: DomainNameSchema.optional().describe("A bought domain; leave out for all bought domains"),
    })
    .strict(),
  output: z.object({
    domains: z.array(
      z.object({
        domain: z.string(),
        stage: DomainStageSchema,
        renewsAt: z.string().nullable().describe("ISO 8601 date of the next renewal"),
        autoRenew: z.boolean(),
        renewalPrice: MoneySchema.nullable(),
        address: AppAddressSchema.nullable().describe("The app on this domain, if any"),
        problem: z.string().nullable().describe("What is wrong, in plain words, when progress is stuck"),
        updatedAt: z.string().describe("ISO 8601"),
      }),
    ),
  }),
});

export type CompanyDomainInput = ToolInput<typeof company_domain>;
export type CompanyDomainOutput = ToolOutput<typeof company_domain>;
export type CompanyDomainSetInput = ToolInput<typeof company_domain_set>;
export type CompanyDomainSetOutput = ToolOutput<typeof company_domain_set>;
export type CustomDomainsInput = ToolInput<typeof custom_domains>;
export type CustomDomainsOutput = ToolOutput<typeof custom_domains>;
export type CustomDomainInput = ToolInput<typeof custom_domain>;
export type CustomDomainOutput = ToolOutput<typeof custom_domain>;
export type FindDomainInput = ToolInput<typeof find_domain>;
export type FindDomainOutput = ToolOutput<typeof find_domain>;
export type BuyDomainInput = ToolInput<typeof buy_domain>;
export type BuyDomainOutput = ToolOutput<typeof buy_domain>;
export type DomainStatusInput = ToolInput<typeof domain_status>;
export type DomainStatusOutput = ToolOutput<typeof domain_status>;
