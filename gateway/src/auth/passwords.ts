/**
 * Password hashes: argon2id. A deployment uses Bun's defaults (64 MiB, 2 passes); only code can lower the cost
 * (`GatewayConfig.passwordCost`, which test harnesses set to TEST_PASSWORD_COST; no environment variable does).
 * A hash names its own parameters (`$argon2id$v=19$m=…,t=…,p=…$`), so verification accepts either.
 */

/** argon2id's memory (KiB) and passes for new hashes; null: Bun's defaults. */
export type PasswordCost = { memoryCost: number; timeCost: number } | null;

/** What tests hash with: still argon2id, about a millisecond instead of a few hundred. Never in a deployment. */
export const TEST_PASSWORD_COST = { memoryCost: 1024, timeCost: 1 } as const;

export function hashPassword(password: string, cost: PasswordCost): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id", ...cost });
}

export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return Bun.password.verify(password, hash);
}

// Verified against when the email is unknown, so a wrong email takes as long as a wrong password (one per cost).
const dummies = new Map<string, Promise<string>>();
export function dummyHash(cost: PasswordCost): Promise<string> {
  const key = cost ? `${cost.memoryCost}:${cost.timeCost}` : "default";
  let hash = dummies.get(key);
  if (!hash) dummies.set(key, (hash = hashPassword("not-a-real-password", cost)));
  return hash;
}
