import { randomId } from "@hatch/contracts";
import { type Database } from "@hatch/platform";
import { createHash } from "node:crypto";
import { eq, inArray, sql } from "drizzle-orm";
import { simulatedOffers, simulatedRegistrations } from "../db/schema.ts";
import type { DomainOffer, Registrar, RegisterRequest, RegistrationState, ZoneRecord } from "./types.ts";

// The default registrar: nothing leaves Hatch. Offers are computed from the name (a per-TLD price table, a hash of the
// name), registrations live in the domains database (every copy of the service agrees) and advance on the clock:
// `pending` for one step after the request, then `registered`; the zone's records are live one step later.
//
// A stable set for tests and demos, by the first label:
//   free-…     always available at the TLD's price
//   taken-…    never available
//   premium-…  available, premium (first year and renewal x25)
//   fail-…     available, but the registry refuses the registration (a definitive failure)
//   1-3 chars  premium; any other name: a hash of it makes 1 in 8 taken.
// A row in `simulated_offers` overrides the computed offer of one name (a price that changed, a name taken meanwhile).

/** Prices in USD cents: first year, renewal. A TLD not listed is not sold. */
export const SIMULATED_PRICES: Record<string, { firstYear: number; renewal: number }> = {
  com: { firstYear: 1299, renewal: 1599 },
  net: { firstYear: 1399, renewal: 1699 },
  org: { firstYear: 1199, renewal: 1499 },
  dev: { firstYear: 1499, renewal: 1699 },
  app: { firstYear: 1599, renewal: 1999 },
  io: { firstYear: 3999, renewal: 4599 },
  co: { firstYear: 2499, renewal: 2999 },
  xyz: { firstYear: 299, renewal: 1399 },
  site: { firstYear: 299, renewal: 2999 },
  ai: { firstYear: 6999, renewal: 8999 },
};

const PREMIUM_FACTOR = 25;

function hashOf(name: string): number {
  return createHash("sha256").update(name).digest().readUInt32BE(0);
}

/** The offer the simulated registrar makes for a name, before any override or registration. */
export function simulatedOffer(domain: string): DomainOffer {
  const dot = domain.indexOf(".");
  const label = domain.slice(0, dot);
  const tld = domain.slice(domain.lastIndexOf(".") + 1);
  const price = SIMULATED_PRICES[tld];
  const none: DomainOffer = { domain, available: false, premium: false, firstYearMinor: null, renewalMinor: null };
  // Only second-level names under a TLD it sells.
  if (!price || domain.split(".").length !== 2) return none;
  if (label.startsWith("taken-")) return none;
  const premium = label.startsWith("premium-") || label.length <= 3;
  if (!label.startsWith("free-") && !label.startsWith("fail-") && !premium && hashOf(domain) % 8 === 0) return none;
  const factor = premium ? PREMIUM_FACTOR : 1;
  return {
    domain,
    available: true,
    premium,
    firstYearMinor: price.firstYear * factor,
    renewalMinor: price.renewal * factor,
  };
}

const YEAR_MS = 365 * 24 * 3600_000;

export function createSimulatedRegistrar(db: Database, stepMs: number): Registrar {
  /** A registration with its age by the database's clock (the copies share it). */
  async function registration(domain: string) {
    const [row] = await db
      .select({
        row: simulatedRegistrations,
        ageMs: sql<number>`(extract(epoch from now() - ${simulatedRegistrations.requestedAt}) * 1000)::float8`,
      })
      .from(simulatedRegistrations)
      .where(eq(simulatedRegistrations.domain, domain));
    return row ? { ...row.row, ageMs: Number(row.ageMs) } : null;
  }

  function stateOf(row: { ref: string; expiresAt: Date; ageMs: number }): RegistrationState {
    return row.ageMs >= stepMs
      ? { state: "registered", ref: row.ref, renewsAt: row.expiresAt }
      : { state: "pending", ref: row.ref };
  }

  async function offers(domains: string[]): Promise<DomainOffer[]> {
    if (domains.length === 0) return [];
    const overrides = new Map(
      (await db.select().from(simulatedOffers).where(inArray(simulatedOffers.domain, domains))).map((o) => [
        o.domain,
        o,
      ]),
    );
    const registered = new Set(
      (
        await db
          .select({ domain: simulatedRegistrations.domain })
          .from(simulatedRegistrations)
          .where(inArray(simulatedRegistrations.domain, domains))
      ).map((r) => r.domain),
    );
    return domains.map((domain) => {
      if (registered.has(domain))
        return { domain, available: false, premium: false, firstYearMinor: null, renewalMinor: null };
      const o = overrides.get(domain);
      if (o)
        return o.available
          ? {
              domain,
              available: true,
              premium: o.premium,
              firstYearMinor: o.firstYearMinor,
              renewalMinor: o.renewalMinor,
            }
          : { domain, available: false, premium: false, firstYearMinor: null, renewalMinor: null };
      return simulatedOffer(domain);
    });
  }

  return {
    name: "simulated",
    check: offers,

    async register(request: RegisterRequest): Promise<RegistrationState> {
      const known = await registration(request.domain);
      if (known) return stateOf(known);
      if (request.domain.startsWith("fail-"))
        return { state: "failed", reason: "refused", message: "the registry refused the registration of this name" };
      const [offer] = await offers([request.domain]);
      if (!offer?.available)
        return { state: "failed", reason: "unavailable", message: "the name was registered by someone else meanwhile" };
      if (offer.firstYearMinor !== request.priceMinor)
        return {
          state: "failed",
          reason: "price_changed",
          message: "the registry's price changed since it was confirmed",
        };
      // Two copies racing on the same request: the primary key lets one in; both then answer the stored row.
      await db
        .insert(simulatedRegistrations)
        .values({
          domain: request.domain,
          ref: `sim_${randomId(10)}`,
          priceMinor: request.priceMinor,
          registrant: request.registrant,
          records: request.records,
          expiresAt: new Date(Date.now() + YEAR_MS),
        })
        .onConflictDoNothing();
      const row = await registration(request.domain);
      if (!row) throw new Error("simulated registration vanished");
      return stateOf(row);
    },

    async status(domain: string): Promise<RegistrationState> {
      const row = await registration(domain);
      if (!row)
        return { state: "failed", reason: "refused", message: "the registrar holds no registration of this name" };
      return stateOf(row);
    },

    async recordsLive(domain: string, records: ZoneRecord[]): Promise<boolean> {
      const row = await registration(domain);
      if (!row || row.ageMs < 2 * stepMs) return false;
      const have = new Set(row.records.map((r) => `${r.type} ${r.host} ${r.value}`));
      return records.every((r) => have.has(`${r.type} ${r.host} ${r.value}`));
    },

    async renew(domain: string, currentRenewsAt: Date): Promise<{ renewsAt: Date }> {
      // Renews only when the expiry is still the one the caller saw: a repeated call answers the new expiry.
      await db
        .update(simulatedRegistrations)
        .set({
          expiresAt: new Date(currentRenewsAt.getTime() + YEAR_MS),
          renewals: sql`${simulatedRegistrations.renewals} + 1`,
        })
        .where(
          sql`${simulatedRegistrations.domain} = ${domain} AND ${simulatedRegistrations.expiresAt} = ${currentRenewsAt.toISOString()}::timestamptz`,
        );
      const row = await registration(domain);
      if (!row) throw new Error(`the simulated registrar holds no registration of ${domain}`);
      return { renewsAt: row.expiresAt };
    },
  };
}
