import { decodeJson, type Bus, type BusSubscription } from "../bus/types.ts";
import {
  type Entitlements,
  EntitlementsSchema,
  isToolError,
  type LimitName,
  PLAN_TABLE,
  plural,
  rpcMethods,
  ToolError,
} from "@hatch/contracts";
import type { Logger } from "../logger.ts";
import { callRpc } from "../rpc.ts";

// What services ask billing before an action a plan limits (a new app, a data write, an invitation, a custom
// domain): the account's entitlements, kept briefly per instance and dropped the moment billing announces a plan
// change (events.billing.account.plan_changed on the plain bus), so a person who just upgraded is not refused.

const TTL_MS = 30_000;
/** How long "billing cannot say" is remembered: a billing outage costs one failed ask per account per window, not one per write. */
const UNKNOWN_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export class EntitlementsCache {
  private readonly cache = new Map<string, { value: Entitlements | null; expires: number }>();
  private readonly changes: BusSubscription;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {
    this.changes = bus.subscribe("events.billing.account.plan_changed", (msg) => {
      try {
        const account = (decodeJson(msg.data) as { account?: unknown }).account;
        if (typeof account === "string") this.cache.delete(account);
      } catch {
        // Not an event: nothing to drop.
      }
    });
  }

  /**
   * The account's entitlements, or null when billing cannot say right now. Limits are then not enforced: a billing
   * outage must not stop people publishing (logged once per account every few seconds, so it is seen).
   */
  async get(accountId: string): Promise<Entitlements | null> {
    const hit = this.cache.get(accountId);
    if (hit && hit.expires > Date.now()) return hit.value;
    try {
      const value = await callRpc(
        this.bus,
        "billing",
        rpcMethods.billing.entitlements,
        { accountId },
        EntitlementsSchema,
        { timeoutMs: 2_000 },
      );
      this.remember(accountId, value, TTL_MS);
      return value;
    } catch (error) {
      if (!isToolError(error) || error.code !== "unavailable")
        this.logger.warn("entitlements unreadable; limits not enforced", { accountId, error });
      else this.logger.warn("billing unavailable; limits not enforced", { accountId });
      this.remember(accountId, null, UNKNOWN_TTL_MS);
      return null;
    }
  }

  private remember(accountId: string, value: Entitlements | null, ttlMs: number): void {
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(accountId, { value, expires: Date.now() + ttlMs });
  }

  close(): void {
    this.changes.unsubscribe();
  }
}

const WHAT: Record<LimitName, (n: number) => string> = {
  apps: (n) => plural(n, "app"),
  customDomains: (n) => plural(n, "custom domain"),
  storageBytes: (n) => `${Math.round(n / 1024 / 1024)} MB of app data and files`,
  companyAiTokensPerMonth: (n) => `${n} AI tokens a month through the company's key`,
  seats: (n) => plural(n, "person"),
};

/**
 * Throws `needs_payment` when `used + adding` would pass the limit: the message names the limit and the plan and
 * carries the billing settings page, where the person upgrades. Nothing has been done when it throws.
 */
export function checkLimit(entitlements: Entitlements | null, limit: LimitName, used: number, adding = 1): void {
  if (!entitlements) return;
  const max = entitlements.limits[limit];
  if (max === null || used + adding <= max) return;
  if (limit === "seats") throw seatsRefusal(entitlements, max, used, used + adding);
  // A plan without the thing at all says so, rather than "allows 0 custom domains, and this account has 0".
  const state =
    max === 0 && limit !== "storageBytes"
      ? `The ${entitlements.plan} plan does not include ${WHAT[limit](0).slice("0 ".length)}.`
      : `The ${entitlements.plan} plan allows ${WHAT[limit](max)}, and this account has ${limit === "storageBytes" ? WHAT.storageBytes(used) : used}.`;
  throw new ToolError(
    "needs_payment",
    `${state} Nothing was changed. The user can upgrade at ${entitlements.settingsUrl} (give them the link), then try again.`,
  );
}

/**
 * Seats: members and open invitations. A plan paid per seat is told to add seats, one that is not to move to Team; the
 * link opens the billing page with the seats needed filled in.
 */
function seatsRefusal(entitlements: Entitlements, max: number, used: number, needed: number): ToolError {
  const info = PLAN_TABLE[entitlements.plan];
  const link = `${entitlements.settingsUrl}?seats=${needed}`;
  const state = info.perSeat
    ? `The ${info.title} plan pays for ${plural(max, "seat")} and this organization has ${plural(used, "person")} (members and open invitations); this needs ${needed}. Nothing was changed. The user adds seats at ${link}`
    : `The ${entitlements.plan} plan allows ${plural(max, "person")}, and this account has ${used}. Nothing was changed. Members and open invitations each take a seat; Team is paid per seat: the user moves to Team with ${needed} seats at ${link}`;
  return new ToolError("needs_payment", `${state} (give them the link), then try again.`);
}
