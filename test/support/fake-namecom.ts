// A fake of Name.com's JSON HTTP API v4 on a real port, for services/domains/src/registrar/namecom.ts (the same code
// path as production; only NAMECOM_API_URL differs). It checks what Name.com checks: Basic auth, JSON bodies, a
// purchasePrice that must match the price exactly ("Purchase price does not match"), a name that must be purchasable.
// Tests set prices (`offer`), inject outages (`failNext`), and look at `requests`, `domains` and `records`.

export interface FakeOffer {
  purchasable: boolean;
  premium?: boolean;
  /** USD, as Name.com writes prices. */
  purchasePrice?: number;
  renewalPrice?: number;
}

interface FakeDomain {
  domainName: string;
  createDate: string;
  expireDate: string;
  renewalPrice: number;
  autorenewEnabled: boolean;
  locked: boolean;
  contacts: unknown;
}

interface FakeRecord {
  id: number;
  domainName: string;
  host: string;
  fqdn: string;
  type: string;
  answer: string;
  ttl: number;
}

const YEAR_MS = 365 * 24 * 3600_000;

export class FakeNamecom {
  readonly url: string;
  readonly offers = new Map<string, FakeOffer>();
  readonly domains = new Map<string, FakeDomain>();
  readonly records = new Map<string, FakeRecord[]>();
  readonly requests: { method: string; path: string; body: unknown }[] = [];
  /** The next this many requests answer 503 (an outage). */
  failNext = 0;
  private nextId = 1;
  private readonly server: ReturnType<typeof Bun.serve>;

  constructor(private readonly credentials: { username: string; token: string }) {
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (request) => this.handle(request) });
    this.url = `http://127.0.0.1:${this.server.port}`;
  }

  /** What checkAvailability answers for a name; names never set are not purchasable. */
  offer(domain: string, offer: FakeOffer): void {
    this.offers.set(domain, offer);
  }

  stop(): void {
    this.server.stop(true);
  }

  private async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = decodeURIComponent(url.pathname);
    let body: unknown = null;
    if (request.method === "POST") {
      if (!request.headers.get("content-type")?.startsWith("application/json"))
        return this.error(415, "Unsupported Media Type");
      try {
        body = await request.json();
      } catch {
        return this.error(400, "Invalid Argument");
      }
    }
    this.requests.push({ method: request.method, path, body });
    const expected = `Basic ${Buffer.from(`${this.credentials.username}:${this.credentials.token}`).toString("base64")}`;
    if (request.headers.get("authorization") !== expected) return this.error(401, "Unauthenticated");
    if (this.failNext > 0) {
      this.failNext--;
      return this.error(503, "Service Unavailable");
    }
    let match: RegExpExecArray | null;
    if (request.method === "POST" && path === "/v4/domains:checkAvailability")
      return this.check(body as { domainNames?: unknown });
    if (request.method === "POST" && path === "/v4/domains") return this.create(body as Record<string, unknown>);
    if (request.method === "GET" && (match = /^\/v4\/domains\/([^/:]+)$/.exec(path))) {
      const domain = this.domains.get(match[1]!);
      return domain ? Response.json(domain) : this.error(404, "Not Found");
    }
    if ((match = /^\/v4\/domains\/([^/:]+)\/records$/.exec(path))) {
      const name = match[1]!;
      if (!this.domains.has(name)) return this.error(404, "Not Found");
      if (request.method === "GET") return Response.json({ records: this.records.get(name) ?? [] });
      const r = body as { host?: string; type?: string; answer?: string; ttl?: number };
      if (!r.type || !r.answer) return this.error(400, "Invalid Argument", "type and answer are required");
      const record: FakeRecord = {
        id: this.nextId++,
        domainName: name,
        host: r.host ?? "",
        fqdn: `${r.host ? `${r.host}.` : ""}${name}.`,
        type: r.type,
        answer: r.answer,
        ttl: r.ttl ?? 300,
      };
      this.records.set(name, [...(this.records.get(name) ?? []), record]);
      return Response.json(record);
    }
    if (request.method === "POST" && (match = /^\/v4\/domains\/([^/:]+):renew$/.exec(path))) {
      const domain = this.domains.get(match[1]!);
      if (!domain) return this.error(404, "Not Found");
      const b = body as { purchasePrice?: number; years?: number };
      if (b.purchasePrice !== undefined && b.purchasePrice !== domain.renewalPrice)
        return this.error(400, "Invalid Argument", "Purchase price does not match");
      domain.expireDate = new Date(Date.parse(domain.expireDate) + (b.years ?? 1) * YEAR_MS).toISOString();
      return Response.json({ domain, order: this.nextId++, totalPaid: domain.renewalPrice });
    }
    return this.error(404, "Not Found");
  }

  private check(body: { domainNames?: unknown }): Response {
    if (!Array.isArray(body?.domainNames) || body.domainNames.length === 0 || body.domainNames.length > 50)
      return this.error(400, "Invalid Argument", "domainNames: 1 to 50 names");
    const results = (body.domainNames as string[]).map((name) => {
      const [sld, ...rest] = name.split(".");
      const offer = this.domains.has(name) ? undefined : this.offers.get(name);
      // Like Name.com: a name that cannot be bought comes back without purchasable or prices.
      if (!offer?.purchasable) return { domainName: name, sld, tld: rest.join(".") };
      return {
        domainName: name,
        sld,
        tld: rest.join("."),
        purchasable: true,
        ...(offer.premium ? { premium: true } : {}),
        purchasePrice: offer.purchasePrice,
        purchaseType: "registration",
        renewalPrice: offer.renewalPrice,
      };
    });
    return Response.json({ results });
  }

  private create(body: Record<string, unknown>): Response {
    const domain = body.domain as { domainName?: string; contacts?: unknown } | undefined;
    const name = domain?.domainName;
    if (!name) return this.error(400, "Invalid Argument", "domain.domainName is required");
    const offer = this.offers.get(name);
    if (this.domains.has(name) || !offer?.purchasable)
      return this.error(400, "Invalid Argument", "Domain is not available");
    if (body.purchasePrice !== undefined && body.purchasePrice !== offer.purchasePrice)
      return this.error(400, "Invalid Argument", "Purchase price does not match");
    if (offer.premium && body.purchasePrice === undefined)
      return this.error(400, "Invalid Argument", "Purchase price is required for premium domains");
    const now = new Date();
    const created: FakeDomain = {
      domainName: name,
      createDate: now.toISOString(),
      expireDate: new Date(now.getTime() + YEAR_MS).toISOString(),
      renewalPrice: offer.renewalPrice ?? offer.purchasePrice ?? 0,
      autorenewEnabled: false,
      locked: true,
      contacts: domain!.contacts ?? null,
    };
    this.domains.set(name, created);
    return Response.json({ domain: created, order: this.nextId++, totalPaid: offer.purchasePrice });
  }

  private error(status: number, message: string, details?: string): Response {
    return Response.json({ message, ...(details ? { details } : {}) }, { status });
  }
}
