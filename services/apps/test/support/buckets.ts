import { expect } from "bun:test";
import { signViewerTicket, type ViewerIdentity } from "@hatch/contracts";
import type { TestHost } from "./host.ts";

// Viewers and requests of the app data tests: a viewer signs in the way the gateway sends them (a ticket for one
// app, then its /_hatch/auth), and every request is a real HTTP request to the app's origin.

export type TestViewer = ViewerIdentity;

/** Signs a viewer in to one app on a fresh browser session of the stand-in gateway; returns the Cookie header value. */
export async function signInTo(t: TestHost, address: string, viewer: TestViewer): Promise<string> {
  const session = t.gateway.signIn(viewer);
  const ticket = signViewerTicket(t.ctx.keys.viewer, { sub: viewer.sub, session, address });
  const response = await t.get(address, `/_hatch/auth?${new URLSearchParams({ ticket, path: "/" })}`);
  expect(response.status).toBe(302);
  return (response.headers.get("set-cookie") ?? "").split(";")[0]!;
}

/** Headers of a request as a browser page of the app would send them (cookie when signed in). */
export function pageHeaders(cookie: string | null, extra: Record<string, string> = {}): Record<string, string> {
  return { ...(cookie ? { cookie } : {}), ...extra };
}

export interface WireFile {
  id: string;
  name: string;
  size: number;
  contentType: string;
  createdAt: string;
  createdBy: string | null;
  url: string;
}

/** POST /_hatch/files/<bucket>?name=… with the bytes as the body. */
export function uploadTo(
  t: TestHost,
  address: string,
  bucket: string,
  options: {
    cookie?: string | null;
    name?: string | null;
    body?: BodyInit;
    type?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Response> {
  const query = options.name === null ? "" : `?${new URLSearchParams({ name: options.name ?? "note.txt" })}`;
  const headers = pageHeaders(options.cookie ?? null, {
    "content-type": options.type ?? "text/plain",
    ...options.headers,
  });
  return t.get(address, `/_hatch/files/${bucket}${query}`, { method: "POST", body: options.body ?? "hello", headers });
}

/** An upload that must succeed: the file as answered. */
export async function uploaded(
  t: TestHost,
  address: string,
  bucket: string,
  options: Parameters<typeof uploadTo>[3] = {},
): Promise<WireFile> {
  const response = await uploadTo(t, address, bucket, options);
  const body = (await response.json()) as WireFile;
  expect({ status: response.status, error: (body as { error?: unknown }).error }).toEqual({
    status: 201,
    error: undefined,
  });
  return body;
}

/** The JSON error of a refused request: status and code, checked together so a failure shows both. */
export async function expectError(response: Response, status: number, code: string): Promise<string> {
  const body = (await response.json()) as { error?: { code?: string; message?: string } };
  expect({ status: response.status, code: body.error?.code }).toEqual({ status, code });
  expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
  return body.error?.message ?? "";
}

export function sha256Hex(bytes: string | Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}
