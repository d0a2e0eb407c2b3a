import { callRpc, type Bus } from "@hatch/platform";
import {
  ContextVersions,
  rpcMethods,
  SessionSchema,
  signContext,
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

  /** `trace.timeoutMs`: how long the caller can wait for orgs (default 5 s); a shared first call waits as its starter did. */
  async resolve(
    claims: CallContextClaims,
    trace: { requestId: string; traceparent: string; timeoutMs?: number },
  ): Promise<Session> {
    const hit = this.cache.get(claims.sub);
    if (hit && hit.expires > Date.now()) return hit.session;
    // Concurrent first calls of one user share one round trip.
    let running = this.pending.get(claims.sub);
    if (!running) {
      running = this.fetch(claims, trace).finally(() => this.pending.delete(claims.sub));
      this.pending.set(claims.sub, running);
    }
    return running;
  }

  drop(userId: string): void {
    this.cache.delete(userId);
    this.pending.delete(userId);
    this.drops++;
  }

  private async fetch(
    claims: CallContextClaims,
    trace: { requestId: string; traceparent: string; timeoutMs?: number },
  ): Promise<Session> {
    const drops = this.drops;
    const session = await callRpc(
      this.bus,
      "orgs",
      rpcMethods.orgs.resolveSession,
      { email: claims.email, name: claims.name },
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
    if (drops !== this.drops) return session;
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(claims.sub, { session, expires: Date.now() + TTL_MS });
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
