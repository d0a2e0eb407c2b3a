import type { ViewerIdentity } from "@hatch/contracts";
import { viewerCookie } from "../../src/http/viewer.ts";
import type { TestHost } from "./host.ts";

// Requests to an app's data routes as a page of that app would make them: JSON bodies, the app's own Origin on
// changes, and the viewer cookie of a viewer signed in on the stand-in gateway.

export const company = "acct-company";
export const owner = {
  sub: "user-owner",
  email: "owner@example.com",
  name: "Olive Owner",
  account: company,
} satisfies ViewerIdentity;
export const member = { sub: "user-member", email: "member@example.com", account: company } satisfies ViewerIdentity;
export const stranger = {
  sub: "user-stranger",
  email: "stranger@example.com",
  account: "acct-stranger",
} satisfies ViewerIdentity;
export const ownerSeed = { owner: { id: owner.sub, email: owner.email }, accountId: company };

export interface CallOptions {
  method?: string;
  body?: unknown;
  /** A raw body (sent as is), for malformed JSON. */
  raw?: string | Uint8Array<ArrayBuffer>;
  viewer?: ViewerIdentity | null;
  /** The Origin header; defaults to the app's own origin for anything but GET. */
  origin?: string | null;
  headers?: Record<string, string>;
}

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class DataClient {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly t: TestHost) {}

  /** The viewer's cookie for an app: a fresh session on the stand-in gateway, kept for the test file. */
  cookie(address: string, viewer: ViewerIdentity): string {
    const key = `${address}\n${viewer.sub}`;
    let cookie = this.cookies.get(key);
    if (!cookie) {
      cookie = viewerCookie(
        this.t.ctx.keys.viewer,
        this.t.ctx.config,
        { sub: viewer.sub, session: this.t.gateway.signIn(viewer) },
        address,
      ).split(";")[0]!;
      this.cookies.set(key, cookie);
    }
    return cookie;
  }

  headers(address: string, options: CallOptions = {}): Record<string, string> {
    const method = options.method ?? "GET";
    const headers: Record<string, string> = { ...options.headers };
    if (options.viewer) headers.cookie = this.cookie(address, options.viewer);
    const origin = options.origin === undefined ? (method === "GET" ? null : this.t.origin(address)) : options.origin;
    if (origin !== null) headers.origin = origin;
    if (options.body !== undefined || options.raw !== undefined) headers["content-type"] = "application/json";
    return headers;
  }

  async call<T = any>(address: string, path: string, options: CallOptions = {}): Promise<Answer<T>> {
    const method = options.method ?? "GET";
    const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    const response = await this.t.get(address, path, { method, headers: this.headers(address, options), body });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
  }

  add(address: string, collection: string, doc: unknown, viewer: ViewerIdentity | null = owner) {
    return this.call(address, `/_hatch/db/${collection}`, { method: "POST", body: doc, viewer });
  }

  list(
    address: string,
    collection: string,
    query: Record<string, unknown> = {},
    viewer: ViewerIdentity | null = owner,
  ) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query))
      params.set(key, typeof value === "string" ? value : JSON.stringify(value));
    return this.call(address, `/_hatch/db/${collection}?${params}`, { viewer });
  }

  read(address: string, collection: string, id: string, viewer: ViewerIdentity | null = owner) {
    return this.call(address, `/_hatch/db/${collection}/${id}`, { viewer });
  }

  update(address: string, collection: string, id: string, patch: unknown, viewer: ViewerIdentity | null = owner) {
    return this.call(address, `/_hatch/db/${collection}/${id}`, { method: "PATCH", body: patch, viewer });
  }

  remove(address: string, collection: string, id: string, viewer: ViewerIdentity | null = owner) {
    return this.call(address, `/_hatch/db/${collection}/${id}`, { method: "DELETE", viewer });
  }
}

/** A collection whose four operations all follow one rule word. */
export function allBy(rule: string): Record<string, string> {
  return { read: rule, create: rule, update: rule, delete: rule };
}
