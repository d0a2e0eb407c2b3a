import { decodeJson, type Bus, type BusSubscription, type Logger } from "@hatch/platform";
import { HatchEventSchema } from "@hatch/contracts";
import { announceViewerChanged } from "../viewer-check.ts";
import type { AccountSessions } from "./accounts.ts";

/**
 * Orgs events that change whom a person acts for or what they may do (joined, role changed, removed,
 * organization created or converted, ownership transferred) name those people in `details.affectedUsers`;
 * their cached sessions are dropped at once. A plain subscription, not a durable consumer: every gateway
 * instance must hear every such event, and one missed only leaves the 30 s cache to run out. App hosts are told too
 * (after the drop here, so the viewer check they make next gets the new account), and forget those viewers.
 */
export function dropSessionsOnOrgEvents(bus: Bus, accounts: AccountSessions, logger: Logger): BusSubscription[] {
  const handle = (data: Uint8Array) => {
    let raw: unknown;
    try {
      raw = decodeJson(data);
    } catch {
      return;
    }
    const event = HatchEventSchema.safeParse(raw);
    if (!event.success) {
      logger.warn("unreadable orgs event ignored");
      return;
    }
    const users = event.data.details.affectedUsers;
    if (!Array.isArray(users)) return;
    for (const user of users) {
      if (typeof user !== "string") continue;
      accounts.drop(user);
      void announceViewerChanged(bus, logger, { sub: user });
    }
  };
  return ["events.orgs.member.*", "events.orgs.org.*"].map((subject) =>
    bus.subscribe(subject, (msg) => handle(msg.data)),
  );
}
