import { expect, test } from "bun:test";
import {
  acceptRequestId,
  childTraceparent,
  deriveKey,
  signContext,
  verifyContext,
  type CallContextClaims,
} from "@hatch/contracts";
import { ConfigError, CommonEnvSchema, loadConfig } from "@hatch/platform";

const claims: CallContextClaims = {
  sub: "usr_1",
  email: "a@example.com",
  name: "A",
  permissions: [],
  scope: "write",
  client: { kind: "claude", name: "claude-code", elicitation: { form: true, url: false } },
  grant: "gr_1",
  rid: "r1",
};
const key = deriveKey("s".repeat(40), "ctx");

test("a signed context verifies and round-trips its claims", () => {
  const ctx = verifyContext(signContext(claims, key), key);
  expect(ctx).toMatchObject({ ...claims, v: 1 });
});

test("a context signed with another key, tampered, malformed or expired is refused", () => {
  const token = signContext(claims, key);
  expect(verifyContext(token, deriveKey("o".repeat(40), "ctx"))).toBeNull();
  expect(verifyContext(signContext(claims, deriveKey("s".repeat(40), "jwt")), key)).toBeNull();
  const [body, mac] = token.split(".");
  const forged = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(body!, "base64url").toString()), sub: "usr_2" }),
  ).toString("base64url");
  expect(verifyContext(`${forged}.${mac}`, key)).toBeNull();
  expect(verifyContext("garbage", key)).toBeNull();
  expect(verifyContext(".", key)).toBeNull();
  const old = signContext(claims, key, Date.now() - 10 * 60_000);
  expect(verifyContext(old, key)).toBeNull();
});

test("request ids are accepted only when they look like one; traceparent keeps a valid trace id", () => {
  expect(acceptRequestId("abc-123")).toBe("abc-123");
  expect(acceptRequestId("has space")).not.toBe("has space");
  expect(acceptRequestId("x".repeat(65))).toHaveLength(16);
  const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  expect(childTraceparent(`00-${trace}-00f067aa0ba902b7-01`)).toStartWith(`00-${trace}-`);
  expect(childTraceparent("nonsense")).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  expect(childTraceparent(`00-${"0".repeat(32)}-00f067aa0ba902b7-01`)).not.toContain("0".repeat(32));
});

test("configuration errors name every bad variable and what to do", () => {
  let error: unknown;
  try {
    loadConfig(CommonEnvSchema, {
      NATS_URL: "http://x",
      DATABASE_URL: "nope",
      BUS_PREFIX: "a.b",
      HATCH_SECRET: "short",
    });
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigError);
  const message = (error as Error).message;
  for (const name of ["NATS_URL", "DATABASE_URL", "BUS_PREFIX", "HATCH_SECRET"]) expect(message).toContain(name);
  expect(message).toContain("nats://");
  expect(loadConfig(CommonEnvSchema, {}).DATA_DIR).toBe(".data");
});
