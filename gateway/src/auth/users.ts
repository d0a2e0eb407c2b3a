import { eq, sql } from "drizzle-orm";
import { emailProblem, hasControlChars, plainText, randomId } from "@hatch/contracts";
import { users } from "../db/schema.ts";
import type { AuthContext, PublicUser } from "./context.ts";

export type { PublicUser };
import { AuthInputError } from "./errors.ts";
import { dummyHash, hashPassword, verifyPassword } from "./passwords.ts";

export const MIN_PASSWORD = 8;
// argon2 cost grows with input; a cap keeps one request from pinning a CPU.
const MAX_PASSWORD = 1024;

const NAME = plainText(100);

/** Why the email typed on a form cannot be used (the shared rule of every contract), or null. */
export function formEmailProblem(email: string): string | null {
  return email ? emailProblem(email) : "Enter your email address.";
}

/** Why a new password cannot be used, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD) return `Choose a password of at least ${MIN_PASSWORD} characters.`;
  if (password.length > MAX_PASSWORD) return `Choose a password of at most ${MAX_PASSWORD} characters.`;
  return null;
}

function validate(input: { email: string; password: string; name: string }): {
  email: string;
  name: string;
  password: string;
} {
  const email = input.email.trim();
  const emailError = formEmailProblem(email);
  if (emailError) throw new AuthInputError(emailError);
  if (hasControlChars(input.name))
    throw new AuthInputError("Your name must not contain control characters. Type it again.");
  const name = NAME.safeParse(input.name);
  if (!name.success) throw new AuthInputError("Enter your name (up to 100 characters).");
  const weak = passwordProblem(input.password);
  if (weak) throw new AuthInputError(weak);
  return { email, name: name.data, password: input.password };
}

function isUniqueViolation(error: unknown): boolean {
  for (let e: unknown = error; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}

export async function findUserByEmail(ctx: AuthContext, email: string) {
  const [row] = await ctx.db
    .select()
    .from(users)
    .where(eq(sql`lower(${users.email})`, email.trim().toLowerCase()))
    .limit(1);
  return row;
}

/** `verified`: the caller vouches for the address (admin, scripts); sign-up leaves it false until the mailed link is opened. */
export async function createUser(
  ctx: AuthContext,
  input: { email: string; password: string; name: string },
  options: { verified?: boolean } = {},
): Promise<PublicUser> {
  const valid = validate(input);
  const duplicate = new AuthInputError("An account with this email already exists. Sign in instead.", "email_taken");
  if (await findUserByEmail(ctx, valid.email)) throw duplicate;
  const passwordHash = await hashPassword(valid.password, ctx.config.passwordCost);
  const user = {
    id: `usr_${randomId(12)}`,
    email: valid.email,
    name: valid.name,
    emailVerified: options.verified === true,
  };
  try {
    await ctx.db.insert(users).values({
      id: user.id,
      email: user.email,
      name: user.name,
      passwordHash,
      emailVerifiedAt: user.emailVerified ? new Date(ctx.now()) : null,
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicate;
    throw error;
  }
  ctx.logger.info("user created", { userId: user.id });
  if (ctx.onUserCreated) {
    // The user exists either way; failing sign-up here would leave an account nobody can sign up for again.
    await ctx
      .onUserCreated(user)
      .catch((error: unknown) => ctx.logger.error("onUserCreated failed", { userId: user.id, error }));
  }
  return user;
}

/** The user when email and password match; null otherwise (same time either way). */
export async function checkPassword(ctx: AuthContext, email: string, password: string): Promise<PublicUser | null> {
  if (password.length > MAX_PASSWORD) return null;
  const row = await findUserByEmail(ctx, email);
  const ok = await verifyPassword(password, row?.passwordHash ?? (await dummyHash(ctx.config.passwordCost)));
  return row && ok
    ? { id: row.id, email: row.email, name: row.name, emailVerified: row.emailVerifiedAt !== null }
    : null;
}
