import { createLogger, type RateCounter } from "@hatch/platform";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { Elysia } from "elysia";
import { createAuth, type Auth } from "../src/auth/index.ts";
import { TEST_PASSWORD_COST } from "../src/auth/passwords.ts";
import { gatewayConfig, type GatewayConfig } from "../src/config.ts";
import { CookieJar, csrfOf, hiddenFields, openTestDatabase, pkcePair, type TestDatabase } from "./support.ts";

export const BASE = "http://localhost:3000";
export const MCP = `${BASE}/mcp`;
export const REDIRECT = "http://127.0.0.1:8976/callback";

/** One auth instance over a fresh database, driven with app.handle, a settable clock and captured log lines. */
export interface Harness {
  config: GatewayConfig;
  database: TestDatabase;
  auth: Auth;
  clock: { now: number };
  logs: string[];
  /** Every per-email sign-in delay asked for, in ms (nothing really waits). */
  delays: number[];
  request(path: string, init?: RequestInit): Promise<Response>;
  /** A browser on its own network address (X-Forwarded-For, trusted by the harness's config) unless one is given. */
  browser(address?: string): Browser;
  close(): Promise<void>;
}

let addresses = 0;

export interface HarnessOptions {
  /** Default true here (the test metadata server is plain http on loopback); the product default is false. */
  allowInsecureClientMetadata?: boolean;
  trustProxy?: boolean;
  fetchClientMetadata?: typeof fetch;
  resolveHost?: (hostname: string) => Promise<string[]>;
  /** The throttles' counter, on the harness clock (default: in memory). */
  rateCounter?: (now: () => number) => RateCounter;
  /** Stands for orgs' `mail.password-reset` (default: none, so a reset mail cannot go out). */
  sendPasswordResetMail?: (user: { email: string }, token: string) => Promise<"smtp" | "outbox">;
  /** Start the harness clock here (two harnesses standing for two gateway copies share one clock value). */
  startAt?: number;
}

export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const config = gatewayConfig({
    secret: "x".repeat(40),
    port: 3000,
    trustProxy: options.trustProxy ?? true,
    allowInsecureClientMetadata: options.allowInsecureClientMetadata ?? true,
    passwordCost: TEST_PASSWORD_COST,
  });
  const database = await openTestDatabase();
  const clock = { now: options.startAt ?? Date.now() };
  const logs: string[] = [];
  const logger = createLogger({ level: "debug", write: (line) => logs.push(line) });
  const delays: number[] = [];
  const auth = createAuth({
    config,
    db: database.db,
    logger,
    now: () => clock.now,
    sleep: async (ms) => void delays.push(ms),
    fetchClientMetadata: options.fetchClientMetadata,
    resolveHost: options.resolveHost,
    rateCounter: options.rateCounter?.(() => clock.now),
    sendPasswordResetMail: options.sendPasswordResetMail,
  });
  const app = new Elysia().use(auth.routes);
  const request = (path: string, init?: RequestInit) => app.handle(new Request(`${BASE}${path}`, init));
  const browser = (address = `10.0.${(++addresses >> 8) & 255}.${addresses & 255}`) => new Browser(request, address);
  return { config, database, auth, clock, logs, delays, request, browser, close: () => database.close() };
}

/** A person's browser: keeps cookies and submits forms with their hidden fields. */
export class Browser {
  readonly jar = new CookieJar();
  constructor(
    private readonly send: (path: string, init?: RequestInit) => Promise<Response>,
    /** Sent as X-Forwarded-For (the harness trusts it); real servers see the connection's address instead. */
    readonly address?: string,
  ) {}

  private get forwarded(): Record<string, string> {
    return this.address ? { "x-forwarded-for": this.address } : {};
  }

  async get(path: string): Promise<Response> {
    return this.jar.absorb(await this.send(path, { headers: { cookie: this.jar.header(), ...this.forwarded } }));
  }

  async post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.jar.absorb(
      await this.send(path, {
        method: "POST",
        headers: {
          cookie: this.jar.header(),
          "content-type": "application/x-www-form-urlencoded",
          ...this.forwarded,
          ...headers,
        },
        body: new URLSearchParams(form).toString(),
      }),
    );
  }

  /** Opens a page and submits its form with the page's hidden fields plus `fields`. */
  async submit(pagePath: string, action: string, fields: Record<string, string>): Promise<Response> {
    const page = await (await this.get(pagePath)).text();
    return this.post(action, { ...hiddenFields(page), csrf: csrfOf(page), ...fields });
  }

  async signUp(email: string, password = "correct horse battery", name = "Ada Lovelace"): Promise<Response> {
    return this.submit("/signup", "/signup", { email, password, name });
  }

  async signIn(email: string, password: string, next?: string): Promise<Response> {
    const path = next ? `/signin?next=${encodeURIComponent(next)}` : "/signin";
    return this.submit(path, "/signin", { email, password });
  }
}

export async function registerClient(
  h: Harness,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return h.request("/oauth/register", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

export async function registerClientId(h: Harness, name = "Test Client", redirectUris = [REDIRECT]): Promise<string> {
  const response = await registerClient(h, { client_name: name, redirect_uris: redirectUris });
  const body = (await response.json()) as { client_id: string };
  return body.client_id;
}

export function authorizePath(clientId: string, challenge: string, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st-123",
    resource: MCP,
    scope: "read write",
    ...extra,
  });
  return `/oauth/authorize?${query}`;
}

/** Signed-in browser → consent page → decision; returns the redirect Location. */
export async function consent(
  browser: Browser,
  path: string,
  decision: "write" | "read" | "deny" = "write",
): Promise<URL> {
  const response = await browser.submit(path, "/oauth/authorize", { decision });
  if (response.status !== 303) throw new Error(`consent answered ${response.status}: ${await response.text()}`);
  return new URL(response.headers.get("location") ?? "");
}

export async function tokenRequest(h: Harness, form: Record<string, string>): Promise<Response> {
  return h.request("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  scope: string;
  expires_in: number;
  token_type: string;
}

/** A signed-in user with a connected client: the whole code flow, ending with the token response. */
export async function connectClient(
  h: Harness,
  browser: Browser,
  decision: "write" | "read" = "write",
): Promise<{ clientId: string; tokens: Tokens }> {
  const clientId = await registerClientId(h);
  const { verifier, challenge } = pkcePair();
  const location = await consent(browser, authorizePath(clientId, challenge), decision);
  const code = location.searchParams.get("code") ?? "";
  const response = await tokenRequest(h, {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
    resource: MCP,
  });
  if (response.status !== 200) throw new Error(`token exchange answered ${response.status}: ${await response.text()}`);
  return { clientId, tokens: (await response.json()) as Tokens };
}

/** What an MCP client keeps between runs: its registration, tokens and PKCE verifier (in memory). */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  authorizationUrl: URL | undefined;
  readonly clientMetadata;
  constructor(
    readonly redirectUrl: string,
    clientName: string,
  ) {
    this.clientMetadata = {
      client_name: clientName,
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}
