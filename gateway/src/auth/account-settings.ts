import { hasControlChars, plainText } from "@hatch/contracts";
import { and, eq, isNull } from "drizzle-orm";
import { grants, users } from "../db/schema.ts";
import type { AuthContext } from "./context.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";
import { endUserSessions, startSession, type BrowserState } from "./sessions.ts";
import { findUserByEmail, formEmailProblem, passwordProblem } from "./users.ts";
import { emailChangeToken } from "./verify-email.ts";

// What a signed-in person changes about their own account on /dashboard/settings: their name, their email (a link
// mailed to the new address moves the account when opened: verify-email.ts) and their password. The gateway owns them
// (its users table); a change drops the cached user, so the next call carries it.

const NAME = plainText(100);
const WRONG_PASSWORD = "Your current password is not right (after 10 wrong tries an hour, wait). Nothing was changed.";

export interface AccountSettings {
  /** Sets the person's name; the problem in words when it cannot be used. */
  rename(userId: string, name: string): Promise<{ ok: true } | { ok: false; error: string }>;
  /**
   * Sets a new password when `current` is the account's password; every other browser is signed out (this one gets
   * a fresh session: the cookie to set). AI clients stay connected.
   */
  /**
   * Mails a link to `email` that makes it the account's address when opened (the current password first, so a
   * browser left signed in cannot take the account); the account keeps its address until then.
   */
  requestEmailChange(
    user: { id: string; email: string; name: string },
    password: string,
    email: string,
  ): Promise<{ ok: true; delivery: "smtp" | "outbox" } | { ok: false; error: string }>;
  changePassword(
    state: BrowserState & { user: { id: string } },
    current: string,
    next: string,
  ): Promise<{ ok: true; cookie: string; signedOut: number } | { ok: false; error: string }>;
  /** Whether `password` is the account's (counted like every current-password check: 10 wrong an hour, then no). */
  passwordIs(userId: string, password: string): Promise<boolean>;
  /**
   * The gateway's part of deleting an account, last (the services did theirs): every AI client is disconnected,
   * every browser signed out, then the user goes (with their pending confirmations and app consents). The email can
   * sign up anew. Idempotent.
   */
  deleteUser(userId: string): Promise<void>;
}

export function accountSettings(ctx: AuthContext): AccountSettings {
  /**
   * The account's password hash when `password` matches it, else null; after 10 wrong ones in an hour, null without
   * checking (throttle.ts).
   */
  async function passwordMatches(userId: string, password: string): Promise<string | null> {
    const throttle = ctx.throttles.currentPassword;
    if ((await throttle.count(userId)) >= throttle.limit) return null;
    const [row] = await ctx.db
      .select({ passwordHash: users.passwordHash })
      .from(users)
      .where(eq(users.id, userId))
      .limit(1);
    const ok = !!row && password.length <= 1024 && (await verifyPassword(password, row.passwordHash));
    if (!ok) await throttle.take(userId);
    return ok && row ? row.passwordHash : null;
  }

  return {
    async passwordIs(userId, password) {
      return (await passwordMatches(userId, password)) !== null;
    },

    async deleteUser(userId) {
      const live = await ctx.db
        .select({ id: grants.id })
        .from(grants)
        .where(and(eq(grants.userId, userId), isNull(grants.revokedAt)));
      for (const grant of live) await ctx.revokeGrant(grant.id, "account_deleted");
      const sessions = await endUserSessions(ctx, userId);
      await ctx.db.delete(users).where(eq(users.id, userId));
      ctx.forgetUser(userId);
      await ctx.onUserChanged?.(userId);
      ctx.logger.info("account deleted", { userId, clients: live.length, sessions });
    },

    async rename(userId, raw) {
      const name = raw.trim();
      if (!name) return { ok: false, error: "Enter your name." };
      if (hasControlChars(name)) return { ok: false, error: "Your name must not contain control characters." };
      const parsed = NAME.safeParse(name);
      if (!parsed.success) return { ok: false, error: "Enter a name of up to 100 characters." };
      await ctx.db.update(users).set({ name: parsed.data }).where(eq(users.id, userId));
      ctx.forgetUser(userId);
      await ctx.onUserChanged?.(userId);
      ctx.logger.info("user renamed", { userId });
      return { ok: true };
    },

    async requestEmailChange(user, password, raw) {
      const email = raw.trim();
      const problem = formEmailProblem(email);
      if (problem) return { ok: false, error: `${problem} Nothing was changed.` };
      if (email.toLowerCase() === user.email.toLowerCase())
        return { ok: false, error: `${email} already is your email. Nothing was changed.` };
      if (!(await passwordMatches(user.id, password))) return { ok: false, error: WRONG_PASSWORD };
      if (await findUserByEmail(ctx, email))
        return { ok: false, error: `Another Hatch account has ${email}. Nothing was changed.` };
      if (!ctx.sendVerificationMail)
        return { ok: false, error: "Mail cannot be sent right now. Nothing was changed; try again in a minute." };
      try {
        // Mailed to the new address (the ctx orgs mails to is the new one): opening it proves that inbox.
        const delivery = await ctx.sendVerificationMail(
          { id: user.id, email, name: user.name, emailVerified: false },
          emailChangeToken(ctx, user, email),
        );
        ctx.logger.info("email change requested", { userId: user.id });
        return { ok: true, delivery };
      } catch (error) {
        const limited = (error as { code?: unknown }).code === "limit_exceeded";
        if (!limited) ctx.logger.error("email change mail failed", { userId: user.id, error });
        return {
          ok: false,
          error: limited
            ? "Too many links went to that address in the last hour. Nothing was changed; try again later."
            : "The mail could not be sent right now. Nothing was changed; try again in a minute.",
        };
      }
    },

    async changePassword(state, current, next) {
      const checked = await passwordMatches(state.user.id, current);
      if (!checked) return { ok: false, error: WRONG_PASSWORD };
      const weak = passwordProblem(next);
      if (weak) return { ok: false, error: `${weak} Nothing was changed.` };
      const passwordHash = await hashPassword(next, ctx.config.passwordCost);
      // Only over the hash just checked: two changes at once do not both pass with the old password.
      const changed = await ctx.db
        .update(users)
        .set({ passwordHash })
        .where(and(eq(users.id, state.user.id), eq(users.passwordHash, checked)))
        .returning({ id: users.id });
      if (changed.length === 0)
        return { ok: false, error: "Your password was changed meanwhile. Nothing was changed; try again." };
      const signedOut = Math.max(0, (await endUserSessions(ctx, state.user.id)) - 1);
      const cookie = await startSession(ctx, state.user.id, state);
      ctx.logger.info("password changed", { userId: state.user.id, sessionsEnded: signedOut });
      return { ok: true, cookie, signedOut };
    },
  };
}
