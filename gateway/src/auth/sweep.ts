import { lt } from "drizzle-orm";
import { authCodes, browserSessions, refreshTokens } from "../db/schema.ts";
import type { AuthContext } from "./context.ts";

/** Codes are kept a day past expiry so a late replay is still recognised for what it is. */
const CODE_GRACE_MS = 86_400_000;

export interface SweepResult {
  codes: number;
  sessions: number;
  refreshTokens: number;
}

/** Deletes what can never be used again: expired codes, sign-in sessions and refresh tokens. */
export async function sweepExpired(ctx: AuthContext): Promise<SweepResult> {
  const now = new Date(ctx.now());
  const codes = await ctx.db
    .delete(authCodes)
    .where(lt(authCodes.expiresAt, new Date(ctx.now() - CODE_GRACE_MS)))
    .returning({ k: authCodes.codeHash });
  const sessions = await ctx.db
    .delete(browserSessions)
    .where(lt(browserSessions.expiresAt, now))
    .returning({ k: browserSessions.idHash });
  const tokens = await ctx.db
    .delete(refreshTokens)
    .where(lt(refreshTokens.expiresAt, now))
    .returning({ k: refreshTokens.tokenHash });
  return { codes: codes.length, sessions: sessions.length, refreshTokens: tokens.length };
}
