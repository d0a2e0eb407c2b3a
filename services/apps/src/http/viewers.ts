import { callRpc, decodeJson, type Bus, type BusSubscription, type Logger } from "@hatch/platform";
import {
  rpcMethods,
  signViewerCheck,
  subjects,
  ViewerChangedSchema,
  ViewerCheckSchema,
  type ViewerCheckApp,
  type ViewerIdentity,
  type ViewerSession,
} from "@hatch/contracts";

// Who the viewer of a non-public app is now: the gateway answers for the browser session the app cookie names
// (`rpc.gateway.viewer.check`). Answers are kept briefly and dropped at once when the gateway broadcasts that a
// session ended or a person's membership changed, so a request costs a bus round trip about every 30 s per viewer.
// Public apps' pages never ask; their data requests (and hatch.me()) ask with the app named, and the answer then
// says whether the person agreed that this app learns who they are (kept per session and app).

export interface LiveViewersOptions {
  /** How long an answer is trusted without a broadcast (default 30 s, as the gateway's own account cache). */
  ttlMs?: number;
  /** Answers kept at most (default 10,000; the oldest goes first). */
  maxEntries?: number;
  /** How long to wait for the gateway (default 3 s); after that the viewer is "not known" and refused. */
  timeoutMs?: number;
}

interface Entry {
  sub: string;
  session: string;
  viewer: ViewerIdentity | null;
  expires: number;
}

export class LiveViewers {
  private readonly cache = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<ViewerIdentity | null>>();
  /** Bumped by every drop: an answer fetched across a drop is used once but not kept (it may predate the change). */
  private drops = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly bus: Bus,
    /** The viewer key: signs the question, so only Hatch's own app hosts can ask. */
    private readonly key: Buffer,
    options: LiveViewersOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.timeoutMs = options.timeoutMs ?? 3_000;
  }

  /**
   * The viewer now, or null when the session ended or is someone else's. Synchronous on a cache hit. Rejects
   * (ToolError `unavailable`) when the gateway does not answer: the caller refuses, never guesses.
   */
  check(asked: ViewerSession, app?: ViewerCheckApp): ViewerIdentity | null | Promise<ViewerIdentity | null> {
    const key = `${asked.session}\n${asked.sub}${app ? `\n${app.id}\n${app.owner}` : ""}`;
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return hit.viewer;
    let running = this.pending.get(key);
    if (!running) {
      const started = this.fetch(key, asked, app).finally(() => {
        if (this.pending.get(key) === started) this.pending.delete(key);
      });
      this.pending.set(key, started);
      running = started;
    }
    return running;
  }

  dropSession(session: string): void {
    for (const [key, entry] of this.cache) if (entry.session === session) this.cache.delete(key);
    this.dropPending();
  }

  dropUser(sub: string): void {
    for (const [key, entry] of this.cache) if (entry.sub === sub) this.cache.delete(key);
    this.dropPending();
  }

  /** Every instance hears every broadcast: no queue group. */
  listen(logger: Logger): BusSubscription {
    return this.bus.subscribe(subjects.viewerChanged, (msg) => {
      let raw: unknown;
      try {
        raw = decodeJson(msg.data);
      } catch {
        raw = undefined;
      }
      const change = ViewerChangedSchema.safeParse(raw);
      if (!change.success) logger.warn("ignored a malformed viewer change broadcast");
      else if ("session" in change.data) this.dropSession(change.data.session);
      else this.dropUser(change.data.sub);
    });
  }

  private dropPending(): void {
    this.pending.clear();
    this.drops++;
  }

  private async fetch(key: string, asked: ViewerSession, app?: ViewerCheckApp): Promise<ViewerIdentity | null> {
    const drops = this.drops;
    const { viewer } = await callRpc(
      this.bus,
      "gateway",
      rpcMethods.gateway.viewerCheck,
      { check: signViewerCheck(this.key, { sub: asked.sub, session: asked.session, app }) },
      ViewerCheckSchema,
      {
        timeoutMs: this.timeoutMs,
      },
    );
    // The gateway answers for the session asked about; anything else is not this viewer.
    const answer = viewer && viewer.sub === asked.sub ? viewer : null;
    if (drops !== this.drops) return answer;
    this.cache.delete(key);
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { sub: asked.sub, session: asked.session, viewer: answer, expires: Date.now() + this.ttlMs });
    return answer;
  }
}
