import {
  acceptRequestId,
  HEADER_REQUEST_ID,
  isToolError,
  openViewerCheck,
  RpcRequestSchema,
  rpcMethods,
  subjects,
  ToolError,
  ViewerCheckInputSchema,
  type RpcReply,
  type ViewerChanged,
  type ViewerCheck,
  type ViewerCheckQuestion,
} from "@hatch/contracts";
import {
  decodeJson,
  encodeJson,
  type Bus,
  type BusMessage,
  type BusReply,
  type BusSubscription,
  type Database,
  type Logger,
  withDeadlineOr,
} from "@hatch/platform";
import { and, eq, gt } from "drizzle-orm";
import { hasConsent } from "./app-consents.ts";
import { browserSessions, users } from "./db/schema.ts";
import type { AccountSessions } from "./mcp/accounts.ts";
import { websiteClaims } from "./website-claims.ts";

// The gateway's side of app viewers (shared/contracts/src/viewer-ticket.ts): it answers who a browser session is now (and, for
// a question naming an app, whether the person agreed that it learns who they are: app-consents.ts), and tells every
// app host when a session ended, a person's membership changed or they took a consent back.

export const VIEWER_CHECK_SUBJECT = `rpc.gateway.${rpcMethods.gateway.viewerCheck}`;
/** The longest a sign-out waits for its broadcast to leave (the page still answers if the bus is slow). */
const ANNOUNCE_WAIT_MS = 1_000;

export interface ViewerCheckDeps {
  bus: Bus;
  db: Database;
  accounts: AccountSessions;
  /** `deriveKey(secret, "viewer-ticket")`: the question must be signed with it. */
  viewerKey: Buffer;
  logger: Logger;
}

/**
 * Answers `rpc.gateway.viewer.check` (queue group "gateway": one instance answers each). Only a question signed with
 * the viewer key is answered; the answer is null unless the session is alive and belongs to the user asked about.
 */
export function answerViewerChecks(deps: ViewerCheckDeps): BusSubscription {
  const log = deps.logger.child({ component: "viewer-check" });

  async function liveViewer(asked: ViewerCheckQuestion, requestId: string): Promise<ViewerCheck> {
    const [row] = await deps.db
      .select({ id: users.id, email: users.email, name: users.name, emailVerifiedAt: users.emailVerifiedAt })
      .from(browserSessions)
      .innerJoin(users, eq(users.id, browserSessions.userId))
      .where(and(eq(browserSessions.idHash, asked.session), gt(browserSessions.expiresAt, new Date())))
      .limit(1);
    if (!row || row.id !== asked.sub) return { viewer: null };
    // A question naming an app (a public one's data request) is answered with whether this person agreed it may know them.
    const consent = asked.app ? await hasConsent(deps.db, row.id, asked.app) : undefined;
    const session = await deps.accounts.resolve(
      websiteClaims(
        { id: row.id, email: row.email, name: row.name, emailVerified: row.emailVerifiedAt !== null },
        { scope: "read", client: "browser", grant: "browser", rid: requestId },
      ),
      { requestId, traceparent: "" },
    );
    return {
      viewer: {
        sub: row.id,
        email: row.email,
        name: row.name,
        emailVerified: row.emailVerifiedAt !== null,
        account: session.account,
        ...(consent === undefined ? {} : { consent }),
      },
    };
  }

  async function answer(msg: BusMessage): Promise<BusReply> {
    const requestId = acceptRequestId(msg.headers[HEADER_REQUEST_ID]);
    let reply: RpcReply;
    try {
      const request = RpcRequestSchema.safeParse(safeJson(msg.data));
      const input = ViewerCheckInputSchema.safeParse(request.success ? request.data.input : undefined);
      if (!input.success) throw new ToolError("invalid_input", "The viewer check was malformed.");
      const asked = openViewerCheck(deps.viewerKey, input.data.check);
      if (!asked) {
        log.warn("refused a viewer check without a valid signature", { rid: requestId });
        throw new ToolError("forbidden", "This viewer check was not signed by a Hatch app host, so it was refused.");
      }
      reply = { ok: true, result: await liveViewer(asked, requestId) };
    } catch (error) {
      if (isToolError(error)) reply = { ok: false, error: { code: error.code, message: error.message } };
      else {
        log.error("viewer check failed", { rid: requestId, error });
        reply = {
          ok: false,
          error: {
            code: "internal",
            message: `The Hatch gateway could not check the viewer. Request id ${requestId}.`,
          },
        };
      }
    }
    return { data: encodeJson(reply), headers: { [HEADER_REQUEST_ID]: requestId } };
  }

  return deps.bus.subscribe(VIEWER_CHECK_SUBJECT, answer, { queue: "gateway" });
}

/**
 * Tells every app host to forget what it cached about a session or a person. Never throws: the change is done, and
 * app hosts stop trusting their copy within 30 s anyway. With `wait`, returns once the broadcast left (bounded), so a
 * sign-out page answers after the app hosts could hear it.
 */
export async function announceViewerChanged(
  bus: Bus,
  logger: Logger,
  change: ViewerChanged,
  wait = false,
): Promise<void> {
  try {
    bus.publish(subjects.viewerChanged, encodeJson(change));
    if (!wait) return;
    const flushed = bus.flush().catch((error: unknown) => logger.warn("viewer change not flushed", { error }));
    await withDeadlineOr(flushed, ANNOUNCE_WAIT_MS, undefined);
  } catch (error) {
    logger.warn("viewer change not broadcast", { kind: "session" in change ? "session" : "user", error });
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return decodeJson(data);
  } catch {
    return undefined;
  }
}
