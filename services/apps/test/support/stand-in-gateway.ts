import { randomBytes } from "node:crypto";
import { encodeJson, decodeJson, type Bus, type BusSubscription } from "@hatch/platform";
import {
  openViewerCheck,
  rpcMethods,
  subjects,
  ViewerCheckInputSchema,
  type RpcReply,
  type ViewerIdentity,
} from "@hatch/contracts";

/**
 * The gateway's part of app viewers, for app host tests without a gateway: answers `rpc.gateway.viewer.check` in
 * the real wire format (signed question, `{ viewer }` or null, with `consent` when the question names an app) from the
 * sessions signed in here, and broadcasts `viewerChanged` the way the gateway does. `down()` takes it off the bus, as a gateway (or bus) that is down.
 */
export class StandInGateway {
  private readonly sessions = new Map<string, ViewerIdentity>();
  private subscription: BusSubscription | null = null;
  /** How many questions reached it (tests of what must not ask). */
  asked = 0;
  /** `<sub> <app id>`: people who have not agreed that a public app learns who they are (everyone else has). */
  readonly withheld = new Set<string>();

  constructor(
    private readonly bus: Bus,
    private readonly key: Buffer,
  ) {
    this.up();
  }

  up(): void {
    if (this.subscription) return;
    const key = this.key;
    this.subscription = this.bus.subscribe(
      `rpc.gateway.${rpcMethods.gateway.viewerCheck}`,
      (msg) => {
        this.asked++;
        const input = ViewerCheckInputSchema.safeParse((decodeJson(msg.data) as { input?: unknown }).input);
        const asked = input.success ? openViewerCheck(key, input.data.check) : null;
        const viewer =
          asked && this.sessions.get(asked.session)?.sub === asked.sub ? this.sessions.get(asked.session)! : null;
        // A question naming an app is answered with the person's consent to it: given, unless a test withheld it.
        const consent = asked?.app ? { consent: !this.withheld.has(`${asked.sub} ${asked.app.id}`) } : {};
        const reply: RpcReply = asked
          ? { ok: true, result: { viewer: viewer ? { ...viewer, ...consent } : null } }
          : { ok: false, error: { code: "forbidden", message: "not signed" } };
        return { data: encodeJson(reply) };
      },
      { queue: "gateway" },
    );
  }

  /** A new browser session for this person; returns its reference (what tickets carry). */
  signIn(viewer: ViewerIdentity): string {
    const session = randomBytes(32).toString("hex");
    this.sessions.set(session, viewer);
    return session;
  }

  signOut(session: string): void {
    this.sessions.delete(session);
    this.bus.publish(subjects.viewerChanged, encodeJson({ session }));
  }

  /** The person now acts as another account (membership changed); every session of theirs says so. */
  changeAccount(sub: string, account: string): void {
    for (const [session, viewer] of this.sessions)
      if (viewer.sub === sub) this.sessions.set(session, { ...viewer, account });
    this.bus.publish(subjects.viewerChanged, encodeJson({ sub }));
  }

  down(): void {
    this.subscription?.unsubscribe();
    this.subscription = null;
  }
}
