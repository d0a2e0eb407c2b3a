import { callRpc, type Bus } from "@hatch/platform";
import {
  ContextVersions,
  rpcMethods,
  SessionSchema,
  signContext,
  ToolError,
  type CallContextClaims,
  type Session,
} from "@hatch/contracts";

const TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;

/**
 * Which account each user acts as, asked of orgs and kept briefly. Orgs events about members and
 * organizations drop entries at once (see session-events.ts), so a removed member loses access on the next call.
 */
export class AccountSessions {
  private readonly cache = new Map<string, { session: Session; expires: number }>();
  private readonly pending = new Map<string, Promise<Session>>();
  /** Bumped by every drop: an answer fetched across a drop is used once but not kept (it may predate the change). */
  private drops = 0;

  constructor(
    private readonly bus: Bus,
    private readonly contextKey: Buffer,
    /** The call context version orgs reads (negotiated: see ContextVersions). */
    private readonly versions = new ContextVersions(),
  ) {}

  /**
   * `trace.timeoutMs`: how long the caller can wait for orgs (default 5 s); a shared first call waits as its starter did.
   * `account`: another account the person belongs to (the dashboard's switcher); orgs answers not_found otherwise.
   */
  async resolve(
    claims: CallContextClaims,
    trace: { requestId: string; traceparent: string; timeoutMs?: number },
    account?: string,
  ): Promise<Session> {
    const key = account ? `${claims.sub}\n${account}` : claims.sub;
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return hit.session;
    // Concurrent first calls of one user share one round trip.
    let running = this.pending.get(key);
    if (!running) {
      running = this.fetch(claims, trace, key, account).finally(() => this.pending.delete(key));
      this.pending.set(key, running);
    }
    return running;
  }

  drop(userId: string): void {
    this.cache.delete(userId);
    this.pending.delete(userId);
    // The accounts a switcher chose: rare, so a scan of the keys is cheap enough.
    const prefix = `${userId}\n`;
    for (const key of this.cache.keys()) if (key.startsWith(prefix)) this.cache.delete(key);
    for (const key of this.pending.keys()) if (key.startsWith(prefix)) this.pending.delete(key);
    this.drops++;
  }

  private async fetch(
    claims: CallContextClaims,
    trace: { requestId: string; traceparent: string; timeoutMs?: number },
    key: string,
    account: string | undefined,
  ): Promise<Session> {
    const drops = this.drops;
    const session = await callRpc(
      this.bus,
      "orgs",
      rpcMethods.orgs.resolveSession,
      { email: claims.email, name: claims.name, ...(account ? { account } : {}) },
      SessionSchema,
      {
        ctx: signContext(claims, this.contextKey, Date.now(), this.versions.for("orgs")),
        resign: (read) => {
          const version = this.versions.learn("orgs", read);
          return version === null ? null : signContext(claims, this.contextKey, Date.now(), version);
        },
        requestId: trace.requestId,
        traceparent: trace.traceparent,
        timeoutMs: trace.timeoutMs,
      },
    );
    // An orgs copy that predates `account` answers the current account: never act in one that was not asked for.
    if (account && session.account !== account)
      throw new ToolError("unavailable", "Hatch is being upgraded; switching accounts works again in a minute.");
    if (drops !== this.drops) return session;
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { session, expires: Date.now() + TTL_MS });
    return session;
  }
}

/** The claims of a call made as `base`'s user in the account the session resolved to. */
export function withSession(base: CallContextClaims, session: Session): CallContextClaims {
  return {
    ...base,
    account: session.account,
    accountKind: session.accountKind,
    org: session.org,
    orgName: session.orgName ?? null,
    role: session.role,
    permissions: session.permissions,
  };
}
