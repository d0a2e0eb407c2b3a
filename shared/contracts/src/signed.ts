import { createHmac, timingSafeEqual } from "node:crypto";

// One format for every short token Hatch signs itself (call contexts, confirm tokens, viewer tickets and
// cookies): base64url(JSON) "." base64url(HMAC-SHA256). Purpose keys keep the kinds apart.

const MAX_TOKEN_LENGTH = 16_384;

export function signPayload(payload: unknown, key: Buffer): string {
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${body}.${mac(body, key)}`;
}

/** The payload when the signature is right and the body is JSON; null otherwise. Never throws. */
export function openPayload(token: string, key: Buffer): unknown {
  const dot = token.indexOf(".");
  if (dot <= 0 || token.length > MAX_TOKEN_LENGTH) return null;
  const body = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), "base64url");
  const expected = Buffer.from(mac(body, key), "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    return JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return null;
  }
}

/**
 * HMAC-SHA256 with node:crypto, so the contracts run anywhere zod does (Bun's own hasher gives the same bytes: 1.5 µs
 * against 1.8 µs a call of ~600 bytes here, 2026-11-28, nothing next to a bus call).
 */
function mac(body: string, key: Buffer): string {
  return createHmac("sha256", key).update(body).digest("base64url");
}
