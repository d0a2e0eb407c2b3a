import { hasControlChars, plainText } from "@hatch/shared";
import { and, eq } from "drizzle-orm";
import { users } from "../db/schema.ts";
import type { AuthContext } from "./context.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";
import { endUserSessions, startSession, type BrowserState } from "./sessions.ts";
import { passwordProblem } from "./users.ts";

// What a signed-in person changes about their own account on /dashboard/settings: their name and their password.
// The gateway owns both (its users table); a change drops the cached user, so the next call carries it.

const NAME = plainText(100);

export interface AccountSettings {
  /** Sets the person's name; the problem in words when it cannot be used. */
  rename(userId: string, name: string): Promise<{ ok: true } | { ok: false; error: string }>;
  /**
   * Sets a new password when `current` is the account's password; every other browser is signed out (this one gets
   * a fresh session: the cookie to set). AI clients stay connected.
   */
  changePassword(
    state: BrowserState & { user: { id: string } },
    current: string,
    next: string,
  ): Promise<{ ok: true; cookie: string; signedOut: number } | { ok: false; error: string }>;
}

export function accountSettings(ctx: AuthContext): AccountSettings {
  return {
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

    async changePassword(state, current, next) {
      const [row] = await ctx.db
        .select({ passwordHash: users.passwordHash })
        .from(users)
        .where(eq(users.id, state.user.id))
        .limit(1);
      if (!row || current.length > 1024 || !(await verifyPassword(current, row.passwordHash)))
        return { ok: false, error: "Your current password is not right. Nothing was changed." };
      const weak = passwordProblem(next);
      if (weak) return { ok: false, error: `${weak} Nothing was changed.` };
      const passwordHash = await hashPassword(next, ctx.config.passwordCost);
      // Only over the hash just checked: two changes at once do not both pass with the old password.
      const changed = await ctx.db
        .update(users)
        .set({ passwordHash })
        .where(and(eq(users.id, state.user.id), eq(users.passwordHash, row.passwordHash)))
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
