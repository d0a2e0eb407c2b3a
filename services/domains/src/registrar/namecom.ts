import type { Registrant } from "../db/schema.ts";
import {
  RegistrarUnavailable,
  type DomainOffer,
  type Registrar,
  type RegisterRequest,
  type RegistrationState,
  type ZoneRecord,
} from "./types.ts";

// Name.com's JSON HTTP API v4 (Basic auth `username:token`). Chosen because it publishes availability together with
// the first-year and renewal price and a premium flag (POST /v4/domains:checkAvailability), registers with the exact
// price confirmed (POST /v4/domains refuses a purchasePrice that does not match), reports a domain's state and expiry
// (GET /v4/domains/{domain}), manages the zone's records (/v4/domains/{domain}/records) and renews
// (POST /v4/domains/{domain}:renew), all in plain JSON, and has a test environment (its own base URL) for trying it
// without buying. Prices on the wire are USD decimals; here they are cents.
//
// Errors: a network failure, a timeout, 401/403 (credentials), 402 (the reseller account's balance), 429 and 5xx are
// RegistrarUnavailable (retried later); other 4xx answers to a registration are definitive failures.

export interface NamecomOptions {
  apiUrl: string;
  username: string;
  token: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

interface NamecomSearchResult {
  domainName: string;
  purchasable?: boolean;
  premium?: boolean;
  purchasePrice?: number;
  purchaseType?: string;
  renewalPrice?: number;
}

interface NamecomDomain {
  domainName: string;
  expireDate?: string;
  createDate?: string;
  renewalPrice?: number;
}

interface NamecomRecord {
  id?: number;
  host?: string;
  type: string;
  answer: string;
  ttl?: number;
}

class NamecomError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const cents = (dollars: number | undefined): number | null =>
  typeof dollars === "number" && Number.isFinite(dollars) ? Math.round(dollars * 100) : null;
const dollars = (minor: number): number => Math.round(minor) / 100;
function contact(registrant: Registrant) {
  const parts = registrant.name.trim().split(/\s+/);
  const lastName = parts.length > 1 ? parts.pop()! : parts[0]!;
  return {
    firstName: parts.join(" "),
    lastName,
    ...(registrant.organization ? { companyName: registrant.organization } : {}),
    address1: registrant.address,
    city: registrant.city,
    zip: registrant.postalCode,
    country: registrant.country,
    email: registrant.email,
    // Stored as +<country code>.<number> (bought/registrant.ts), the form Name.com asks for.
    phone: registrant.phone,
  };
}

export function createNamecomRegistrar(options: NamecomOptions): Registrar {
  const base = options.apiUrl.replace(/\/+$/, "");
  const auth = `Basic ${Buffer.from(`${options.username}:${options.token}`).toString("base64")}`;
  const doFetch = options.fetch ?? fetch;

  async function call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, {
        method,
        headers: {
          Authorization: auth,
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
      });
    } catch {
      throw new RegistrarUnavailable("Name.com could not be reached");
    }
    const text = await response.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (response.ok) {
      if (json === null || typeof json !== "object")
        throw new RegistrarUnavailable("Name.com answered something that is not JSON");
      return json as T;
    }
    // Name.com's errors: { message, details? } (e.g. "Invalid Argument" + "Purchase price does not match").
    const said =
      json && typeof json === "object"
        ? [(json as { message?: unknown }).message, (json as { details?: unknown }).details].filter(
            (v): v is string => typeof v === "string" && v.length > 0,
          )
        : [];
    const message = (said.length ? said.join(": ") : `HTTP ${response.status}`).slice(0, 200);
    if ([401, 402, 403, 408, 429].includes(response.status) || response.status >= 500) {
      throw new RegistrarUnavailable(`Name.com answered ${response.status} (${message})`);
    }
    throw new NamecomError(response.status, message);
  }

  async function getDomain(domain: string): Promise<NamecomDomain | null> {
    try {
      return await call<NamecomDomain>("GET", `/v4/domains/${encodeURIComponent(domain)}`);
    } catch (error) {
      if (error instanceof NamecomError && error.status === 404) return null;
      if (error instanceof NamecomError)
        throw new RegistrarUnavailable(`Name.com answered ${error.status} (${error.message})`);
      throw error;
    }
  }

  function registered(domain: NamecomDomain): RegistrationState {
    const renewsAt = domain.expireDate ? new Date(domain.expireDate) : null;
    if (!renewsAt || Number.isNaN(renewsAt.getTime()))
      throw new RegistrarUnavailable("Name.com answered a domain without an expiry date");
    return { state: "registered", ref: domain.domainName, renewsAt };
  }

  /** Adds the records the zone lacks (a repeated call adds nothing twice). */
  async function ensureRecords(domain: string, records: ZoneRecord[]): Promise<void> {
    const have = await listRecords(domain);
    for (const record of records) {
      if (have.some((r) => same(r, record))) continue;
      await call("POST", `/v4/domains/${encodeURIComponent(domain)}/records`, {
        host: record.host,
        type: record.type,
        answer: record.value,
        ttl: 300,
      }).catch((error) => {
        if (error instanceof NamecomError)
          throw new RegistrarUnavailable(`Name.com refused a DNS record (${error.message})`);
        throw error;
      });
    }
  }

  async function listRecords(domain: string): Promise<NamecomRecord[]> {
    try {
      const answer = await call<{ records?: NamecomRecord[] }>(
        "GET",
        `/v4/domains/${encodeURIComponent(domain)}/records`,
      );
      return answer.records ?? [];
    } catch (error) {
      if (error instanceof NamecomError)
        throw new RegistrarUnavailable(`Name.com answered ${error.status} (${error.message})`);
      throw error;
    }
  }

  const same = (r: NamecomRecord, want: ZoneRecord) =>
    r.type === want.type &&
    (r.host ?? "") === want.host &&
    r.answer.replace(/\.$/, "").toLowerCase() === want.value.replace(/\.$/, "").toLowerCase();

  return {
    name: "namecom",

    async check(domains: string[]): Promise<DomainOffer[]> {
      if (domains.length === 0) return [];
      const answer = await call<{ results?: NamecomSearchResult[] }>("POST", "/v4/domains:checkAvailability", {
        domainNames: domains,
      }).catch((error) => {
        if (error instanceof NamecomError)
          throw new RegistrarUnavailable(`Name.com answered ${error.status} (${error.message})`);
        throw error;
      });
      const byName = new Map((answer.results ?? []).map((r) => [r.domainName.toLowerCase(), r]));
      return domains.map((domain) => {
        const r = byName.get(domain);
        const firstYear = cents(r?.purchasePrice);
        // Only plain registrations are offered (not aftermarket or backorder purchases).
        const available =
          Boolean(r?.purchasable) && firstYear !== null && (r?.purchaseType ?? "registration") === "registration";
        if (!available) return { domain, available: false, premium: false, firstYearMinor: null, renewalMinor: null };
        return {
          domain,
          available: true,
          premium: Boolean(r!.premium),
          firstYearMinor: firstYear,
          renewalMinor: cents(r!.renewalPrice) ?? firstYear,
        };
      });
    },

    async register(request: RegisterRequest): Promise<RegistrationState> {
      // Already ours (a retried job after a crash): its state, and the records it may still lack.
      const existing = await getDomain(request.domain);
      if (existing) {
        await ensureRecords(request.domain, request.records);
        return registered(existing);
      }
      let created: { domain?: NamecomDomain };
      try {
        created = await call("POST", "/v4/domains", {
          domain: {
            domainName: request.domain,
            contacts: {
              registrant: contact(request.registrant),
              admin: contact(request.registrant),
              tech: contact(request.registrant),
              billing: contact(request.registrant),
            },
          },
          purchasePrice: dollars(request.priceMinor),
          purchaseType: "registration",
          years: 1,
        });
      } catch (error) {
        if (!(error instanceof NamecomError)) throw error;
        if (/price/i.test(error.message))
          return {
            state: "failed",
            reason: "price_changed",
            message: "the registry's price changed since it was confirmed",
          };
        if (/not available|unavailable|already registered|taken/i.test(error.message) || error.status === 409) {
          return {
            state: "failed",
            reason: "unavailable",
            message: "the name was registered by someone else meanwhile",
          };
        }
        return {
          state: "failed",
          reason: "refused",
          message: `the registrar refused the registration (${error.message})`,
        };
      }
      if (!created.domain) throw new RegistrarUnavailable("Name.com answered a registration without the domain");
      await ensureRecords(request.domain, request.records);
      return registered(created.domain);
    },

    async status(domain: string): Promise<RegistrationState> {
      const found = await getDomain(domain);
      if (!found)
        return { state: "failed", reason: "refused", message: "the registrar holds no registration of this name" };
      return registered(found);
    },

    async recordsLive(domain: string, records: ZoneRecord[]): Promise<boolean> {
      const have = await listRecords(domain);
      return records.every((want) => have.some((r) => same(r, want)));
    },

    async renew(domain: string, currentRenewsAt: Date): Promise<{ renewsAt: Date }> {
      const found = await getDomain(domain);
      if (!found) throw new RegistrarUnavailable(`Name.com holds no registration of ${domain}`);
      const expiry = registered(found);
      // Renewed already (a repeated call): the expiry moved past the one the caller saw.
      if (expiry.state === "registered" && expiry.renewsAt.getTime() > currentRenewsAt.getTime() + 24 * 3600_000)
        return { renewsAt: expiry.renewsAt };
      let renewed: { domain?: NamecomDomain };
      try {
        renewed = await call("POST", `/v4/domains/${encodeURIComponent(domain)}:renew`, {
          years: 1,
          ...(found.renewalPrice ? { purchasePrice: found.renewalPrice } : {}),
        });
      } catch (error) {
        if (error instanceof NamecomError)
          throw new RegistrarUnavailable(`Name.com refused the renewal (${error.message})`);
        throw error;
      }
      if (!renewed.domain) throw new RegistrarUnavailable("Name.com answered a renewal without the domain");
      const after = registered(renewed.domain);
      if (after.state !== "registered") throw new RegistrarUnavailable("Name.com answered a renewal without an expiry");
      return { renewsAt: after.renewsAt };
    },
  };
}
