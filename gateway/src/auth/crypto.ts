import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Codes, refresh tokens and session ids are stored only as this digest. */
export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** An unguessable bearer secret (256 bits), URL-safe. */
export function newSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** Compares two secrets without leaking where they differ through timing. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** PKCE S256 (RFC 7636 §4.6): BASE64URL(SHA256(verifier)) must equal the challenge sent on authorize. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  return safeEqual(createHash("sha256").update(verifier).digest("base64url"), challenge);
}
