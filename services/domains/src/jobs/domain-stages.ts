import { encodeJson } from "@hatch/platform";
import { subjects } from "@hatch/contracts";
import { and, eq, isNull, sql } from "drizzle-orm";
import { buyerContext, charge, refund, renewalKey } from "../bought/billing.ts";
import { domainEvent } from "../bought/events.ts";
import { money } from "../bought/money.ts";
import type { DomainsContext } from "../context.ts";
import { boughtDomains, hostnames } from "../db/schema.ts";
import { checkCertificate, loadExtraRoots } from "../dns/certificate.ts";
import type { ZoneRecord } from "../registrar/types.ts";
import { enqueueJob, type JobKind, type JobRow } from "./queue.ts";

// A bought domain's stages, as jobs keyed by the domain (queue.ts runs them on whichever copy claims them):
//   domain.register  registrar register (idempotent), then status until registered → stage dns, renews_at set, a
//                    `bought` hostnames row (verified: the purchase proves it), domain.stage and domain.renew queued.
//                    A definitive failure (taken meanwhile, price changed, refused) or too many transient ones queue
//                    domain.refund.
//   domain.stage     dns: the registrar serves the records → certificate: the edge presents a valid certificate for
//                    the domain (skipped when EDGE_TLS_ADDRESS is unset) → live.
//   domain.renew     30 days before renews_at when auto-renew is on: charge (one key per renewal period), then the
//                    registrar renews; queued again for the next period.
//   domain.refund    gives a charge back (payload: key, amountMinor, reason, purpose purchase|renewal).
// The outside calls happen in `run`; the database changes and the events commit in `apply`, with the job's completion.

type BoughtRow = typeof boughtDomains.$inferSelect;
type Tx = Parameters<NonNullable<Awaited<ReturnType<JobKind["run"]>>["apply"]>>[0];

const RENEW_BEFORE_MS = 30 * 24 * 3600_000;
const DAY_MS = 24 * 3600_000;
/** How long the DNS or certificate stage may take before domain_status shows a problem. */
const STUCK_MS = 60 * 60_000;

async function bought(ctx: DomainsContext, domain: string): Promise<BoughtRow | null> {
  const [row] = await ctx.db.select().from(boughtDomains).where(eq(boughtDomains.domain, domain));
  return row ?? null;
}

/** How soon to look again at something the registrar or the edge is still doing. */
function pollMs(ctx: DomainsContext): number {
  return ctx.config.registrar.kind === "simulated"
    ? Math.max(50, Math.floor(ctx.config.registrar.stepMs / 2))
    : ctx.config.recheckMs;
}

async function setDomain(tx: Tx, domain: string, values: Partial<typeof boughtDomains.$inferInsert>): Promise<void> {
  await tx
    .update(boughtDomains)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(boughtDomains.domain, domain));
}

function queueRefund(
  tx: Tx,
  row: BoughtRow,
  payload: { key: string; amountMinor: number; reason: string; purpose: "purchase" | "renewal" },
) {
  return enqueueJob(tx, {
    kind: "domain.refund",
    key: `${row.domain}:${payload.key}`,
    payload: { domain: row.domain, ...payload },
  });
}

function registerKind(getCtx: () => DomainsContext): JobKind {
  return {
    // Transient registrar failures retry with backoff (about half an hour in all), then the purchase is refunded.
    maxAttempts: 10,
    async giveUp(job, error, tx) {
      const [row] = await tx.select().from(boughtDomains).where(eq(boughtDomains.domain, job.key));
      if (!row || row.chargeStatus !== "charged" || row.stage !== "registering") return;
      await setDomain(tx, row.domain, {
        problem: "The registrar did not answer for a long time, so the purchase is being refunded.",
      });
      await domainEvent(
        tx,
        null,
        row,
        "registration_failed",
        `Registering ${row.domain} failed: the registrar did not answer`,
        { reason: "unavailable", error: error.slice(0, 200) },
      );
      await queueRefund(tx, row, {
        key: row.chargeKey,
        amountMinor: row.firstYearMinor,
        reason: `Domain ${row.domain} could not be registered`,
        purpose: "purchase",
      });
    },
    async run(job) {
      const ctx = getCtx();
      const row = await bought(ctx, job.key);
      if (!row || row.chargeStatus !== "charged" || row.stage !== "registering") return {};
      const records: ZoneRecord[] = row.zoneRecords ?? [];
      const first = await ctx.registrar.register({
        domain: row.domain,
        priceMinor: row.firstYearMinor,
        registrant: row.registrant!,
        records,
      });
      const state = first.state === "pending" ? await ctx.registrar.status(row.domain) : first;
      if (state.state === "pending") return { againInMs: pollMs(ctx) };
      if (state.state === "failed") {
        const why = {
          unavailable: "the name was registered by someone else meanwhile",
          price_changed: "the registry's price changed",
          refused: "the registry refused it",
        }[state.reason];
        return {
          apply: async (tx) => {
            await setDomain(tx, row.domain, {
              problem: `Registering ${row.domain} failed (${why}); the ${money(row.firstYearMinor).formatted} charge is being refunded.`,
            });
            await domainEvent(tx, null, row, "registration_failed", `Registering ${row.domain} failed: ${why}`, {
              reason: state.reason,
            });
            await queueRefund(tx, row, {
              key: row.chargeKey,
              amountMinor: row.firstYearMinor,
              reason: `Domain ${row.domain} could not be registered`,
              purpose: "purchase",
            });
          },
        };
      }
      return {
        apply: async (tx) => {
          await setDomain(tx, row.domain, {
            stage: "dns",
            registrarRef: state.ref,
            renewsAt: state.renewsAt,
            registeredAt: sql`now()` as unknown as Date,
            problem: null,
          });
          // The purchase proves the name: a `bought` hostname, verified, serving the app the purchase named (if any).
          // An unverified claim of someone else's on the name goes.
          await tx.delete(hostnames).where(and(eq(hostnames.hostname, row.domain), isNull(hostnames.verifiedAt)));
          await tx
            .insert(hostnames)
            .values({
              hostname: row.domain,
              kind: "bought",
              accountId: row.accountId,
              appId: row.appId,
              address: row.address,
              createdBy: row.boughtBy,
              token: "",
              stage: "dns",
              verifiedAt: sql`now()` as unknown as Date,
            })
            .onConflictDoNothing();
          await domainEvent(
            tx,
            null,
            row,
            "registered",
            `${row.domain} is registered until ${state.renewsAt.toISOString().slice(0, 10)}`,
            { renewsAt: state.renewsAt.toISOString() },
          );
          await enqueueJob(tx, { kind: "domain.stage", key: row.domain });
          await enqueueJob(tx, {
            kind: "domain.renew",
            key: row.domain,
            inMs: Math.max(0, state.renewsAt.getTime() - RENEW_BEFORE_MS - Date.now()),
          });
        },
      };
    },
  };
}

let extraRoots: { file: string | null; pem: string | null } | null = null;
function caPem(ctx: DomainsContext): string | null {
  if (!extraRoots || extraRoots.file !== ctx.config.edgeCaFile)
    extraRoots = { file: ctx.config.edgeCaFile, pem: loadExtraRoots(ctx.config.edgeCaFile) };
  return extraRoots.pem;
}

function stageKind(getCtx: () => DomainsContext): JobKind {
  async function advance(tx: Tx, row: BoughtRow, stage: "certificate" | "live"): Promise<void> {
    const live = stage === "live";
    await setDomain(tx, row.domain, {
      stage,
      problem: null,
      ...(live ? { liveAt: sql`now()` as unknown as Date } : {}),
    });
    await tx
      .update(hostnames)
      .set({
        stage,
        problem: null,
        checkedAt: sql`now()`,
        updatedAt: sql`now()`,
        ...(live ? { liveAt: sql`now()` } : {}),
      })
      .where(and(eq(hostnames.hostname, row.domain), eq(hostnames.kind, "bought")));
    if (live)
      await domainEvent(
        tx,
        null,
        row,
        "live",
        `${row.domain} is live${row.address ? ` and serves ${row.address}` : ""}`,
      );
  }
  const stuck = (row: BoughtRow) => Date.now() - (row.registeredAt ?? row.updatedAt).getTime() > STUCK_MS;

  return {
    async run(job, signal) {
      const ctx = getCtx();
      const row = await bought(ctx, job.key);
      if (!row || row.chargeStatus !== "charged" || row.stage === "registering" || row.stage === "live") return {};
      // The hostname row committed with the registration: the app host forgets what it cached about the name.
      if (row.stage === "dns" && !job.payload.announced)
        ctx.bus.publish(subjects.domainsHostChanged, encodeJson({ hostname: row.domain }));
      if (row.stage === "dns") {
        const live = await ctx.registrar.recordsLive(row.domain, row.zoneRecords ?? []);
        if (!live) {
          const problem = stuck(row)
            ? "The registrar's DNS does not serve the domain's records yet; this usually resolves itself within an hour."
            : null;
          return {
            againInMs: pollMs(ctx),
            payload: { announced: true },
            apply: async (tx) => (problem !== row.problem ? setDomain(tx, row.domain, { problem }) : undefined),
          };
        }
        const next = ctx.config.edgeTlsAddress ? "certificate" : "live";
        return {
          againInMs: next === "live" ? undefined : 0,
          payload: { announced: true },
          apply: (tx) => advance(tx, row, next),
        };
      }
      // certificate
      if (!ctx.config.edgeTlsAddress) return { apply: (tx) => advance(tx, row, "live") };
      const check = await checkCertificate(row.domain, {
        address: ctx.config.edgeTlsAddress,
        caPem: caPem(ctx),
        signal,
        timeoutMs: 15_000,
      });
      if (check.ok) return { apply: (tx) => advance(tx, row, "live") };
      const problem = stuck(row) ? check.problem : null;
      return {
        againInMs: Math.min(ctx.config.recheckMs, pollMs(ctx) * 4),
        payload: { announced: true },
        apply: async (tx) => (problem !== row.problem ? setDomain(tx, row.domain, { problem }) : undefined),
      };
    },
  };
}

function renewKind(getCtx: () => DomainsContext): JobKind {
  return {
    maxAttempts: 12,
    async giveUp(job, _error, tx) {
      const [row] = await tx.select().from(boughtDomains).where(eq(boughtDomains.domain, job.key));
      if (!row?.renewsAt) return;
      await setDomain(tx, row.domain, {
        problem: `Renewing ${row.domain} failed at the registrar; the renewal charge is being refunded. It expires on ${row.renewsAt.toISOString().slice(0, 10)}.`,
      });
      await queueRefund(tx, row, {
        key: renewalKey(row.domain, row.renewsAt),
        amountMinor: row.renewalMinor,
        reason: `Renewal of ${row.domain} failed`,
        purpose: "renewal",
      });
    },
    async run(job: JobRow) {
      const ctx = getCtx();
      const row = await bought(ctx, job.key);
      if (!row || !row.autoRenew || row.chargeStatus !== "charged" || !row.renewsAt) return {};
      const renewsAt = row.renewsAt;
      const key = renewalKey(row.domain, renewsAt);
      const paid = await charge(ctx, buyerContext(ctx, row, job.id), {
        accountId: row.accountId,
        amountMinor: row.renewalMinor,
        description: `Domain ${row.domain}, renewal`,
        key,
      });
      if (paid.status === "refused") {
        const problem = `The renewal (${money(row.renewalMinor).formatted}) could not be charged: ${paid.message ?? "the payment was refused"} Add or update the card${paid.url ? ` at ${paid.url}` : ""}; Hatch tries again daily until ${renewsAt.toISOString().slice(0, 10)}.`;
        return { againInMs: DAY_MS, apply: (tx) => setDomain(tx, row.domain, { problem }) };
      }
      if (paid.status !== "charged") throw new Error(paid.message ?? "the renewal charge failed");
      // Charged (now or on an earlier run: same key): renew; a retry after a registrar error charges nothing again.
      const renewed = await ctx.registrar.renew(row.domain, renewsAt);
      return {
        apply: async (tx) => {
          await setDomain(tx, row.domain, { renewsAt: renewed.renewsAt, problem: null });
          await domainEvent(
            tx,
            null,
            row,
            "renewed",
            `${row.domain} renewed until ${renewed.renewsAt.toISOString().slice(0, 10)} for ${money(row.renewalMinor).formatted}`,
            {
              amountMinor: row.renewalMinor,
              currency: row.currency,
              renewsAt: renewed.renewsAt.toISOString(),
            },
          );
          await enqueueJob(tx, {
            kind: "domain.renew",
            key: row.domain,
            inMs: Math.max(0, renewed.renewsAt.getTime() - RENEW_BEFORE_MS - Date.now()),
          });
        },
      };
    },
  };
}

function refundKind(getCtx: () => DomainsContext): JobKind {
  return {
    async run(job) {
      const ctx = getCtx();
      const { domain, key, amountMinor, reason, purpose } = job.payload as {
        domain: string;
        key: string;
        amountMinor: number;
        reason: string;
        purpose: "purchase" | "renewal";
      };
      const row = await bought(ctx, domain);
      if (!row) return {};
      if (purpose === "purchase" && row.chargeStatus === "refunded") return {};
      const result = await refund(ctx, buyerContext(ctx, row, job.id), { accountId: row.accountId, key, reason });
      return {
        apply: async (tx) => {
          if (purpose === "purchase") {
            await setDomain(tx, domain, {
              chargeStatus: "refunded",
              problem: `${row.problem?.replace(/ is being refunded\.$/, " was refunded.") ?? `The ${money(amountMinor).formatted} charge was refunded.`}`,
            });
          } else {
            await setDomain(tx, domain, {
              problem: `Renewing ${domain} failed; the ${money(amountMinor).formatted} renewal charge was refunded.`,
            });
          }
          await domainEvent(
            tx,
            null,
            row,
            "refunded",
            `${money(amountMinor).formatted} for ${domain} refunded: ${reason}`,
            // boughtAt: billing takes a refunded purchase off the usage of the month it was bought in.
            {
              amountMinor,
              currency: row.currency,
              purpose,
              status: result.status,
              boughtAt: row.createdAt.toISOString(),
            },
          );
        },
      };
    },
  };
}

/** The bought-domain job kinds (registered in kinds.ts). */
export function domainStageKinds(getCtx: () => DomainsContext): Record<string, JobKind> {
  return {
    "domain.register": registerKind(getCtx),
    "domain.stage": stageKind(getCtx),
    "domain.renew": renewKind(getCtx),
    "domain.refund": refundKind(getCtx),
  };
}
