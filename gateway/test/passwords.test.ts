import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "@hatch/platform";
import { eq } from "drizzle-orm";
import { createAuth } from "../src/auth/index.ts";
import { TEST_PASSWORD_COST } from "../src/auth/passwords.ts";
import { gatewayConfig, loadGatewayConfig } from "../src/config.ts";
import { users } from "../src/db/schema.ts";
import { createHarness, type Harness } from "./oauth-harness.ts";

// Tests hash passwords at a test cost (TEST_PASSWORD_COST, set in code by the harnesses); a deployment always hashes
// with argon2id at Bun's defaults, and every stored hash names its own parameters, so either verifies.
const PASSWORD = "correct horse battery";
const DEFAULT_COST = "$argon2id$v=19$m=65536,t=2,p=1$";
const hashOf = async (h: Harness, email: string) =>
  (await h.database.db.select().from(users).where(eq(users.email, email)))[0]!.passwordHash;

describe("password hashing cost", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  test("a deployment's config hashes at Bun's defaults; no environment variable lowers the cost", async () => {
    expect(gatewayConfig({ secret: "x".repeat(40) }).passwordCost).toBeNull();
    const env = { PASSWORD_COST: "1", HATCH_PASSWORD_COST: "test", PASSWORD_MEMORY_COST: "8", NODE_ENV: "test" };
    expect(loadGatewayConfig(env, "x".repeat(40)).passwordCost).toBeNull();

    const deployed = createAuth({
      config: loadGatewayConfig({ PORT: "3000" }, "x".repeat(40)),
      db: h.database.db,
      logger: createLogger({ level: "silent" }),
    });
    await deployed.createUser({ email: "deployed@example.com", password: PASSWORD, name: "Deployed" });
    expect(await hashOf(h, "deployed@example.com")).toStartWith(DEFAULT_COST);
  });

  test("the test cost is still argon2id, named in the hash", async () => {
    await h.auth.createUser({ email: "cheap@example.com", password: PASSWORD, name: "Cheap" });
    const { memoryCost, timeCost } = TEST_PASSWORD_COST;
    expect(await hashOf(h, "cheap@example.com")).toStartWith(`$argon2id$v=19$m=${memoryCost},t=${timeCost},p=1$`);
  });

  test("sign-in verifies a hash of either cost", async () => {
    await h.auth.createUser({ email: "either@example.com", password: PASSWORD, name: "Either" });
    const signIn = async () => (await h.browser().signIn("either@example.com", PASSWORD)).status;
    expect(await signIn()).toBe(303);
    const strong = await Bun.password.hash(PASSWORD, { algorithm: "argon2id" });
    await h.database.db.update(users).set({ passwordHash: strong }).where(eq(users.email, "either@example.com"));
    expect(await signIn()).toBe(303);
    expect((await h.browser().signIn("either@example.com", "wrong password")).status).not.toBe(303);
  });
});
