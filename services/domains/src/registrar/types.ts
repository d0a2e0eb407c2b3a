import type { Registrant } from "../db/schema.ts";

// The registrar adapter: what the domains service needs from whoever registers domains. Two implementations:
// simulated.ts (the default: deterministic availability and prices, stages on a clock) and namecom.ts (Name.com's
// JSON HTTP API v4, tested against test/support/fake-namecom.ts). Prices are in minor units (cents) of USD.

export interface DomainOffer {
  domain: string;
  available: boolean;
  premium: boolean;
  /** Null when not available. */
  firstYearMinor: number | null;
  renewalMinor: number | null;
}

export interface RegisterRequest {
  domain: string;
  /** The exact first-year price the person confirmed; the registrar refuses if its price is now different. */
  priceMinor: number;
  registrant: Registrant;
  /** DNS records to put in the domain's zone once it is registered (point it at Hatch's edge). */
  records: ZoneRecord[];
}

export interface ZoneRecord {
  type: "A" | "AAAA" | "CNAME" | "TXT";
  /** Relative to the domain: "" for the apex, "www" for www.<domain>. */
  host: string;
  value: string;
}

export type RegistrationState =
  /** Registered at the registrar; renewsAt is the expiry date. */
  | { state: "registered"; ref: string; renewsAt: Date }
  /** Accepted, not finished yet: ask again with status(). */
  | { state: "pending"; ref: string }
  /** Not registered and never will be from this request (taken meanwhile, price changed, refused). */
  | { state: "failed"; reason: "unavailable" | "price_changed" | "refused"; message: string };

export interface Registrar {
  readonly name: "simulated" | "namecom";
  /** Availability and prices of each name (at most 50 per call). */
  check(domains: string[]): Promise<DomainOffer[]>;
  /**
   * Registers a domain for one year. Safe to repeat: a domain this account already registered answers its state
   * rather than registering again (a job retried after a crash calls it twice).
   */
  register(request: RegisterRequest): Promise<RegistrationState>;
  /** Where a registration stands (after `pending`); `failed` when the registrar gave up on it. */
  status(domain: string): Promise<RegistrationState>;
  /** Whether the registrar's nameservers serve the records asked for at registration (the bought domain's DNS stage). */
  recordsLive(domain: string, records: ZoneRecord[]): Promise<boolean>;
  /** Renews for one more year; safe to repeat for the same `renewsAt` (answers the new expiry). */
  renew(domain: string, currentRenewsAt: Date): Promise<{ renewsAt: Date }>;
}

/** A registrar that could not be reached or answered nonsense: the job retries later, the tool says try again. */
export class RegistrarUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RegistrarUnavailable";
  }
}
