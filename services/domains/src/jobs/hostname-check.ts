import { and, eq, sql } from "drizzle-orm";
import type { DomainsContext } from "../context.ts";
import { hostnames, type ConnectionStage, type RecordSeen } from "../db/schema.ts";
import { checkCertificate, loadExtraRoots } from "../dns/certificate.ts";
import { checkRecords, edgeZoneRecords, wantedRecords, type DnsCheck } from "../hostnames/records.ts";
import { announceHostChanged, hostnameEvent, STALE_CLAIM_MS, type HostnameRow, type Tx } from "../hostnames/store.ts";
import type { JobKind, JobOutcome, JobRow } from "./queue.ts";

// `hostname.check` (key = hostname): the stages of a hostname pointed at Hatch.
//   dns          the records Hatch asked for (wanted) are looked up with the real resolver; once all are seen the
//                hostname is verified (verified_at, set once) and the app host serves it. A bought hostname asks the
//                registrar instead (its zone is Hatch's). Checked again with backoff while waiting; after 7 days
//                unproven the checks stop (custom_domains starts them again).
//   certificate  a TLS connection to the edge with the hostname's SNI must present a valid certificate (the
//                connection is what makes the edge obtain it, after our `ask` said yes). Skipped when there is no
//                EDGE_TLS_ADDRESS (dev), and for a company domain (certificates are issued per app address).
//   live         a slow re-check of the DNS keeps `records` and `problem` true (the hostname keeps being served).

/** Waits between checks grow from recheckMs up to this many times it while a hostname waits. */
const MAX_BACKOFF_FACTOR = 16;
/** After live, checks come this many times less often. */
const LIVE_FACTOR = 60;

export function hostnameCheckKind(getCtx: () => DomainsContext): JobKind {
  let roots: { file: string | null; pem: string | null } | null = null;
  const caPem = (ctx: DomainsContext) => {
    if (!roots || roots.file !== ctx.config.edgeCaFile)
      roots = { file: ctx.config.edgeCaFile, pem: loadExtraRoots(ctx.config.edgeCaFile) };
    return roots.pem;
  };
  return {
    async run(job: JobRow, signal: AbortSignal): Promise<JobOutcome> {
      const ctx = getCtx();
      const [row] = await ctx.db.select().from(hostnames).where(eq(hostnames.hostname, job.key));
      if (!row) return {}; // disconnected meanwhile: nothing to check
      const waits = typeof job.payload.waits === "number" ? job.payload.waits : 0;
      const recheck = ctx.config.recheckMs;
      const waitAgain = (): Pick<JobOutcome, "againInMs" | "payload"> => ({
        againInMs: recheck * Math.min(2 ** waits, MAX_BACKOFF_FACTOR),
        payload: { waits: waits + 1 },
      });
      const slow = { againInMs: recheck * LIVE_FACTOR, payload: { waits: 0 } };

      if (row.stage === "dns" || row.verifiedAt === null) {
        const dns = await dnsCheck(ctx, row);
        if (!dns.complete) {
          const givingUp = Date.now() - row.createdAt.getTime() > STALE_CLAIM_MS;
          const problem = givingUp
            ? `${dns.problem} Hatch stopped checking after 7 days; custom_domains (or company_domain) checks again.`
            : dns.problem;
          return {
            apply: async (tx) => void (await record(tx, row, { records: dns.records, problem })),
            ...(givingUp ? {} : waitAgain()),
          };
        }
        const next: ConnectionStage =
          row.kind === "company" || ctx.config.edgeTlsAddress === null ? "live" : "certificate";
        return {
          apply: async (tx) => {
            if (!(await record(tx, row, { records: dns.records, problem: null, stage: next, verified: true }))) return;
            await hostnameEvent(
              tx,
              null,
              row,
              "hostname",
              "verified",
              `${row.hostname} is verified: its DNS records point at Hatch${row.address ? ` (app ${row.address})` : ""}`,
            );
            if (next === "live") await liveEvent(tx, row);
          },
          afterCommit: () => announceHostChanged(ctx, row.hostname),
          ...(next === "live" ? slow : { againInMs: 0, payload: { waits: 0 } }),
        };
      }

      if (row.stage === "certificate") {
        const address = ctx.config.edgeTlsAddress;
        const cert = address
          ? await checkCertificate(row.hostname, { address, caPem: caPem(ctx), signal })
          : ({ ok: true } as const);
        if (!cert.ok)
          return {
            apply: async (tx) =>
              void (await record(tx, row, { problem: `The HTTPS certificate is not ready yet: ${cert.problem}.` })),
            ...waitAgain(),
          };
        return {
          apply: async (tx) => {
            if (await record(tx, row, { problem: null, stage: "live" })) await liveEvent(tx, row);
          },
          ...slow,
        };
      }

      // Live: keep the picture of its records true; it stays served (proven once) whatever they show now.
      const dns = await dnsCheck(ctx, row);
      return {
        apply: async (tx) =>
          void (await record(tx, row, {
            records: dns.records,
            problem: dns.complete ? null : `${dns.problem} The domain stays connected, but visitors may not reach it.`,
          })),
        ...slow,
      };
    },
  };
}

async function dnsCheck(ctx: DomainsContext, row: HostnameRow): Promise<DnsCheck> {
  const wanted = wantedRecords(row.kind, row.hostname, row.token, ctx.config);
  if (row.kind !== "bought") return checkRecords(ctx.dns, row.hostname, wanted);
  // A bought domain's zone is at the registrar, set up by Hatch when it bought it: ask the registrar.
  const live = await ctx.registrar.recordsLive(row.hostname, edgeZoneRecords(row.hostname, ctx.config));
  const records: RecordSeen[] = wanted.map((r) => ({ ...r, seen: live }));
  return {
    records,
    complete: live,
    problem: live
      ? null
      : "The registrar's DNS servers do not serve the domain's records yet; that usually takes a few minutes after registration.",
  };
}

/**
 * Writes a check's result, fenced by the token (a hostname disconnected and claimed again meanwhile is another
 * claim: the old check's result is dropped). Answers whether the row was there.
 */
async function record(
  tx: Tx,
  row: HostnameRow,
  change: { records?: RecordSeen[]; problem: string | null; stage?: ConnectionStage; verified?: boolean },
): Promise<boolean> {
  const updated = await tx
    .update(hostnames)
    .set({
      ...(change.records ? { records: change.records, checkedAt: sql`now()` } : {}),
      problem: change.problem,
      ...(change.stage ? { stage: change.stage } : {}),
      ...(change.stage === "live" ? { liveAt: sql`now()` } : {}),
      ...(change.verified ? { verifiedAt: sql`coalesce(${hostnames.verifiedAt}, now())` } : {}),
      updatedAt: sql`now()`,
    })
    .where(and(eq(hostnames.hostname, row.hostname), eq(hostnames.token, row.token)))
    .returning({ hostname: hostnames.hostname });
  return updated.length > 0;
}

async function liveEvent(tx: Tx, row: HostnameRow): Promise<void> {
  await hostnameEvent(
    tx,
    null,
    row,
    "hostname",
    "live",
    `${row.hostname} is live${row.address ? `: it serves ${row.address}` : ""}`,
  );
}
