import type { AuthContext } from "./context.ts";

/**
 * What a client is told when its connection has ended, by the grant's revocation reason: what happened, where, and
 * how to connect again. Plain text without quotes (it also goes into a WWW-Authenticate header).
 */
export function revokedDescription(ctx: AuthContext, reason: string | null): string {
  const tokens = `${ctx.config.baseUrl}/dashboard/tokens`;
  const again = `To connect again, start the sign-in again from the AI client (reconnect or re-add the server ${ctx.config.mcpUrl}) and approve it.`;
  switch (reason) {
    case "user":
      return `This connection was revoked by the user on the Hatch Connected clients page (${tokens}). ${again}`;
    case "replaced":
      return `This connection was replaced: the user approved this client again, and the newer connection took its place on the Connected clients page (${tokens}). Use the tokens of the newer connection. ${again}`;
    case "password_reset":
      return `This connection ended because the account's password was reset, which disconnects every client. ${again}`;
    case "account_deleted":
      return "This connection ended because its Hatch account was deleted.";
    case "refresh_reuse":
      return `This connection was revoked because a refresh token was used twice (a sign it was copied). ${again}`;
    case "code_reuse":
      return `This connection was revoked because its authorization code was used twice. ${again}`;
    case "client":
      return `This connection was ended by the client itself (token revocation). ${again}`;
    default:
      return `This connection has been revoked. ${again}`;
  }
}
