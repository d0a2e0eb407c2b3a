import { describe, expect, test } from "bun:test";
import {
  buildQuestion,
  canonicalJson,
  checkConfirm,
  CONFIRM_TTL_SECONDS,
  deriveKey,
  issueConfirm,
} from "@hatch/contracts";

const key = deriveKey("confirm-test-secret".padEnd(40, "x"), "confirm");
const binding = { sub: "user-1", tool: "delete_tool", input: { address: "my-app" } };

describe("confirm tokens", () => {
  test("a token checks out for the same user, tool and input", () => {
    const { token, claims } = issueConfirm(key, binding);
    const check = checkConfirm(key, token, binding);
    expect(check).toEqual({ ok: true, claims });
  });

  test("key order does not change the input binding", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    const { token } = issueConfirm(key, { ...binding, input: { visibility: "public", address: "a" } });
    expect(checkConfirm(key, token, { ...binding, input: { address: "a", visibility: "public" } }).ok).toBe(true);
  });

  test("another user, tool or input is a mismatch", () => {
    const { token } = issueConfirm(key, binding);
    expect(checkConfirm(key, token, { ...binding, sub: "user-2" })).toEqual({ ok: false, reason: "mismatch" });
    expect(checkConfirm(key, token, { ...binding, tool: "share" })).toEqual({ ok: false, reason: "mismatch" });
    expect(checkConfirm(key, token, { ...binding, input: { address: "other-app" } })).toEqual({
      ok: false,
      reason: "mismatch",
    });
  });

  test("an expired token is refused", () => {
    const issuedAt = Date.now();
    const { token } = issueConfirm(key, binding, issuedAt);
    expect(checkConfirm(key, token, binding, issuedAt + (CONFIRM_TTL_SECONDS - 1) * 1000).ok).toBe(true);
    expect(checkConfirm(key, token, binding, issuedAt + (CONFIRM_TTL_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: "expired",
    });
  });

  test("a forged or tampered token is invalid", () => {
    const { token } = issueConfirm(key, binding);
    const other = deriveKey("another-secret".padEnd(40, "y"), "confirm");
    expect(checkConfirm(other, token, binding)).toEqual({ ok: false, reason: "invalid" });
    const [body, mac] = token.split(".");
    const claims = JSON.parse(Buffer.from(body!, "base64url").toString());
    const forged = `${Buffer.from(JSON.stringify({ ...claims, sub: "user-2" })).toString("base64url")}.${mac}`;
    expect(checkConfirm(key, forged, { ...binding, sub: "user-2" })).toEqual({ ok: false, reason: "invalid" });
    expect(checkConfirm(key, "garbage", binding)).toEqual({ ok: false, reason: "invalid" });
  });

  test("a question carries a fresh token, its fallback and its expiry", () => {
    const now = Date.parse("2026-11-21T10:00:00Z");
    const q = buildQuestion(
      key,
      binding,
      {
        message: "Delete?",
        properties: { confirm: { type: "boolean" } },
        fallback: "link",
        data: { address: "my-app" },
      },
      now,
    );
    expect(q.fallback).toBe("link");
    expect(q.expiresAt).toBe("2026-11-21T10:10:00.000Z");
    expect(q.data).toEqual({ address: "my-app" });
    expect(checkConfirm(key, q.confirm, binding, now).ok).toBe(true);
  });
});
