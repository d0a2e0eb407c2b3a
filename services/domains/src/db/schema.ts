import { confirmUsesTable, jobsTable, outboxTable } from "@hatch/platform";
import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, pgSchema, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/** The domains service's own schema. Rows stay inside the service; tools map them to contract types. */
export const domains = pgSchema("domains");

export type HostnameKind = "custom" | "company" | "bought";
export type ConnectionStage = "dns" | "certificate" | "live";

/** What a DNS check saw for one record Hatch asked for (shown with `records`, and the basis of `problem`). */
export interface RecordSeen {
  type: "TXT" | "CNAME" | "A" | "AAAA";
  name: string;
  value: string;
  seen: boolean;
  /** What the resolver answered instead, when not seen (e.g. the CNAME's actual target). */
  found?: string[];
}

/**
 * A hostname pointed at Hatch: an app's custom domain (`custom`), a company's address for its apps (`company`: its
 * subdomains serve the company's apps), or a domain bought through Hatch and put on an app (`bought`). The hostname
 * is the key: one app (or one company) holds it. A `custom` or `company` row is proven by the TXT record
 * `_hatch-challenge.<hostname>` = `token`; `verified_at` is set once and only the proven holder keeps it. A `bought`
 * row is proven by the purchase.
 */
export const hostnames = domains.table(
  "hostnames",
  {
    hostname: text("hostname").primaryKey(),
    kind: text("kind").$type<HostnameKind>().notNull(),
    accountId: text("account_id").notNull(),
    /** The app served there (`custom`, `bought` with an app); null for `company`. */
    appId: text("app_id"),
    address: text("address"),
    createdBy: text("created_by").notNull(),
    /** The value the TXT record `_hatch-challenge.<hostname>` must hold. */
    token: text("token").notNull(),
    stage: text("stage").$type<ConnectionStage>().notNull().default("dns"),
    verifiedAt: timestamp("verified_at", { withTimezone: true }),
    /** The last DNS check's view of each record asked for. */
    records: jsonb("records").$type<RecordSeen[]>().notNull().default([]),
    problem: text("problem"),
    checkedAt: timestamp("checked_at", { withTimezone: true }),
    liveAt: timestamp("live_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("hostnames_app").on(t.appId),
    uniqueIndex("hostnames_company_account").on(t.accountId).where(sql`${t.kind} = 'company'`),
  ],
);

export type DomainStage = "registering" | "dns" | "certificate" | "live";

/** The registrant's details the person confirmed (sent to the registrar; never returned by a tool). */
export interface Registrant {
  name: string;
  email: string;
  organization?: string;
  address: string;
  city: string;
  postalCode: string;
  country: string;
  phone: string;
}

/**
 * A domain bought through Hatch. `charge_key` is the idempotency key of its billing charge (one per confirmation),
 * so the same confirmation never charges twice; `charge_status` follows the charge and its refund.
 */
export const boughtDomains = domains.table(
  "bought_domains",
  {
    domain: text("domain").primaryKey(),
    accountId: text("account_id").notNull(),
    boughtBy: text("bought_by").notNull(),
    stage: text("stage").$type<DomainStage>().notNull().default("registering"),
    /** Which registrar adapter holds it (`simulated`, `namecom`) and its id there. */
    registrar: text("registrar").notNull(),
    registrarRef: text("registrar_ref"),
    currency: text("currency").notNull().default("USD"),
    firstYearMinor: bigint("first_year_minor", { mode: "number" }).notNull(),
    renewalMinor: bigint("renewal_minor", { mode: "number" }).notNull(),
    renewsAt: timestamp("renews_at", { withTimezone: true }),
    autoRenew: boolean("auto_renew").notNull().default(true),
    /** The app to put on the domain once it is live. */
    appId: text("app_id"),
    address: text("address"),
    registrant: jsonb("registrant").$type<Registrant>(),
    chargeKey: text("charge_key").notNull().unique(),
    chargeId: text("charge_id"),
    chargeStatus: text("charge_status").$type<"charged" | "refunded">().notNull(),
    problem: text("problem"),
    /** Who bought it, as the renewal charge's context needs them (migration 0002_buy). */
    buyerEmail: text("buyer_email"),
    buyerName: text("buyer_name"),
    accountKind: text("account_kind").$type<"personal" | "company">(),
    /** The DNS records put in its zone at the registrar (pointing at the edge). */
    zoneRecords: jsonb("zone_records").$type<{ type: "A" | "AAAA" | "CNAME" | "TXT"; host: string; value: string }[]>(),
    registeredAt: timestamp("registered_at", { withTimezone: true }),
    liveAt: timestamp("live_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("bought_domains_account").on(t.accountId)],
);

/** Stage work (DNS, certificate, registrar): the platform's job table (jobsTable; domains/src/jobs/queue.ts). */
export const jobs = jobsTable(domains);

export const outbox = outboxTable(domains);
export const confirmUses = confirmUsesTable(domains);

/**
 * The price a buy_domain question showed, by its confirm token's id (migration 0002_buy): the answer buys only at
 * this exact price for this domain; a different price now asks again.
 */
export const domainQuotes = domains.table("domain_quotes", {
  confirmId: text("confirm_id").primaryKey(),
  domain: text("domain").notNull(),
  accountId: text("account_id").notNull(),
  currency: text("currency").notNull(),
  firstYearMinor: bigint("first_year_minor", { mode: "number" }).notNull(),
  renewalMinor: bigint("renewal_minor", { mode: "number" }).notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * The simulated registrar's registrations (REGISTRAR=simulated, migration 0002_buy): in the database so that every
 * copy of the service sees the same registrar. Stages follow the clock: registered `step` after `requested_at`,
 * records live another `step` later.
 */
export const simulatedRegistrations = domains.table("simulated_registrations", {
  domain: text("domain").primaryKey(),
  ref: text("ref").notNull(),
  priceMinor: bigint("price_minor", { mode: "number" }).notNull(),
  registrant: jsonb("registrant").$type<Registrant>().notNull(),
  records: jsonb("records").$type<{ type: string; host: string; value: string }[]>().notNull().default([]),
  requestedAt: timestamp("requested_at", { withTimezone: true }).notNull().defaultNow(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  renewals: integer("renewals").notNull().default(0),
});

/**
 * Overrides of the simulated registrar's computed offer for one name (tests and demos: a price that changes, a name
 * taken meanwhile). Absent, the offer comes from the name (simulated.ts).
 */
export const simulatedOffers = domains.table("simulated_offers", {
  domain: text("domain").primaryKey(),
  available: boolean("available").notNull().default(true),
  premium: boolean("premium").notNull().default(false),
  firstYearMinor: bigint("first_year_minor", { mode: "number" }).notNull(),
  renewalMinor: bigint("renewal_minor", { mode: "number" }).notNull(),
});
