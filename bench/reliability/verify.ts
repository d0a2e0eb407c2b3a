// After the load: the database against what each acknowledged call said it wrote. A write is lost when an
// acknowledged change is missing, doubled when it is there more than once (or more changes exist than calls were
// made); an activity entry is lost or doubled when a committed change does not appear exactly once in org_activity's
// table. Changes committed without an answer (the call failed or hung) are counted apart: not a loss, worth knowing.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { SQL } from "bun";
import { COLLECTION, type LoadUser } from "./load.ts";

export interface Integrity {
  acknowledgedWrites: number;
  writesLost: number;
  writesDoubled: number;
  committedWithoutAnswer: number;
  activityLost: number;
  activityDoubled: number;
  problems: Problem[];
}

export type ProblemKind = "writeLost" | "writeDoubled" | "activityLost" | "activityDoubled";
/** One finding; `at` (ms) places it in a fault's window: when the call was answered or the row was written. */
export interface Problem {
  kind: ProblemKind;
  at: number | null;
  text: string;
}

type Row = Record<string, unknown>;

export async function checkIntegrity(databaseUrl: string, users: LoadUser[]): Promise<Integrity> {
  const sql = new SQL(databaseUrl, { max: 2 });
  const out: Integrity = {
    acknowledgedWrites: 0,
    writesLost: 0,
    writesDoubled: 0,
    committedWithoutAnswer: 0,
    activityLost: 0,
    activityDoubled: 0,
    problems: [],
  };
  const counters: Record<ProblemKind, keyof Integrity> = {
    writeLost: "writesLost",
    writeDoubled: "writesDoubled",
    activityLost: "activityLost",
    activityDoubled: "activityDoubled",
  };
  const found = (kind: ProblemKind, n: number, at: number | Date | null, text: string) => {
    (out[counters[kind]] as number) += n;
    out.problems.push({ kind, at: at instanceof Date ? at.getTime() : at, text });
  };
  const time = (value: unknown) =>
    value instanceof Date ? value.getTime() : value ? new Date(value as string).getTime() : null;
  try {
    for (const user of users) {
      const [app] = (await sql`select id from apps.apps where address = ${user.address}`) as Row[];
      if (!app) {
        found("writeLost", 1, null, `${user.label}: app ${user.address} is missing`);
        continue;
      }
      const appId = app.id as string;

      // Publishes: every acknowledged version exists; no more versions than publish calls.
      const versionRows = (await sql`select number, created_at from apps.versions where app_id = ${appId}`) as Row[];
      const versions = versionRows.map((r) => Number(r.number));
      const versionTime = new Map(versionRows.map((r) => [Number(r.number), time(r.created_at)]));
      const have = new Set(versions);
      out.acknowledgedWrites += user.ackedVersions.length;
      for (const v of user.ackedVersions)
        if (!have.has(v.version))
          found("writeLost", 1, v.at, `${user.label}: acknowledged version ${v.version} of ${user.address} is missing`);
      if (versions.length > user.publishAttempts) {
        found(
          "writeDoubled",
          versions.length - user.publishAttempts,
          null,
          `${user.label}: ${versions.length} versions of ${user.address} from ${user.publishAttempts} publish calls`,
        );
      }
      out.committedWithoutAnswer += Math.max(0, versions.length - user.ackedVersions.length);
      const published = (await sql`
        select (event->'details'->>'version')::int as version, count(*)::int as n from orgs.activity
        where action = 'app.published' and app = ${user.address} group by 1`) as Row[];
      const publishedCount = new Map(published.map((r) => [Number(r.version), Number(r.n)]));
      for (const v of versions) {
        const n = publishedCount.get(v) ?? 0;
        if (n === 0)
          found(
            "activityLost",
            1,
            versionTime.get(v) ?? null,
            `${user.label}: version ${v} of ${user.address} has no activity entry`,
          );
        if (n > 1)
          found(
            "activityDoubled",
            n - 1,
            versionTime.get(v) ?? null,
            `${user.label}: version ${v} of ${user.address} has ${n} activity entries`,
          );
      }

      // Shares: each call adds one new email; every acknowledged one is there, and one activity entry per email there.
      const peopleRows =
        (await sql`select email, created_at as added_at from apps.app_people where app_id = ${appId}`) as Row[];
      const people = new Set(peopleRows.map((r) => r.email as string));
      const lastAdded = Math.max(0, ...peopleRows.map((r) => time(r.added_at) ?? 0));
      out.acknowledgedWrites += user.ackedShares.length;
      for (const s of user.ackedShares)
        if (!people.has(s.email))
          found("writeLost", 1, s.at, `${user.label}: acknowledged share with ${s.email} is missing`);
      out.committedWithoutAnswer += Math.max(0, people.size - user.ackedShares.length);
      const [shared] =
        (await sql`select count(*)::int as n from orgs.activity where action = 'app.shared' and app = ${user.address}`) as Row[];
      const sharedEntries = Number(shared!.n);
      // Which share lacks its entry is not known (the entry does not name the email): placed at the last one added.
      if (sharedEntries < people.size)
        found(
          "activityLost",
          people.size - sharedEntries,
          null,
          `${user.label}: ${people.size} people added to ${user.address}, ${sharedEntries} app.shared entries`,
        );
      if (sharedEntries > people.size)
        found(
          "activityDoubled",
          sharedEntries - people.size,
          lastAdded || null,
          `${user.label}: ${people.size} people added to ${user.address}, ${sharedEntries} app.shared entries`,
        );

      // Invitations: every acknowledged one exists once; one activity entry per invitation that exists.
      const invitations =
        (await sql`select id, email, created_at from orgs.invitations where account_id = ${user.orgId}`) as Row[];
      const invitationTime = new Map(invitations.map((r) => [r.id as string, time(r.created_at)]));
      const byEmail = new Map<string, number>();
      for (const row of invitations) byEmail.set(row.email as string, (byEmail.get(row.email as string) ?? 0) + 1);
      const invitationIds = new Set(invitations.map((r) => r.id as string));
      out.acknowledgedWrites += user.ackedInvitations.length;
      for (const inv of user.ackedInvitations)
        if (!byEmail.has(inv.email))
          found("writeLost", 1, inv.at, `${user.label}: acknowledged invitation to ${inv.email} is missing`);
      for (const [email, n] of byEmail)
        if (n > 1) found("writeDoubled", n - 1, null, `${user.label}: ${n} invitations for ${email}`);
      out.committedWithoutAnswer += Math.max(0, invitations.length - user.ackedInvitations.length);
      const invited = (await sql`
        select event->'details'->>'invitation' as id, count(*)::int as n from orgs.activity
        where action = 'invitation.created' and account_id = ${user.orgId} group by 1`) as Row[];
      const invitedCount = new Map(invited.map((r) => [r.id as string, Number(r.n)]));
      for (const id of invitationIds) {
        const n = invitedCount.get(id) ?? 0;
        if (n === 0)
          found(
            "activityLost",
            1,
            invitationTime.get(id) ?? null,
            `${user.label}: invitation ${id} has no activity entry`,
          );
        if (n > 1)
          found(
            "activityDoubled",
            n - 1,
            invitationTime.get(id) ?? null,
            `${user.label}: invitation ${id} has ${n} activity entries`,
          );
      }

      // Rollbacks: between the acknowledged ones and the attempted ones (a rollback changes no row we can count).
      const [rolled] =
        (await sql`select count(*)::int as n from orgs.activity where action = 'app.rolled_back' and app = ${user.address}`) as Row[];
      const rolledEntries = Number(rolled!.n);
      out.acknowledgedWrites += user.rollbacksAcked;
      if (rolledEntries < user.rollbacksAcked)
        found(
          "activityLost",
          user.rollbacksAcked - rolledEntries,
          null,
          `${user.label}: ${user.rollbacksAcked} rollbacks acknowledged, ${rolledEntries} app.rolled_back entries`,
        );
      if (rolledEntries > user.rollbackAttempts)
        found(
          "activityDoubled",
          rolledEntries - user.rollbackAttempts,
          null,
          `${user.label}: ${rolledEntries} app.rolled_back entries from ${user.rollbackAttempts} calls`,
        );

      // Documents: every acknowledged one exists with its nonce; no nonce twice.
      const docs =
        (await sql`select id, data->>'nonce' as nonce, created_at from apps.documents where app_id = ${appId} and collection = ${COLLECTION}`) as Row[];
      const docIds = new Map(docs.map((r) => [r.id as string, r.nonce as string]));
      const nonces = new Map<string, number>();
      for (const row of docs) nonces.set(row.nonce as string, (nonces.get(row.nonce as string) ?? 0) + 1);
      out.acknowledgedWrites += user.ackedDocs.length;
      const idOfNonce = new Map(docs.map((r) => [r.nonce as string, r.id as string]));
      for (const doc of user.ackedDocs) {
        if (docIds.get(doc.id) === doc.nonce) continue;
        // Stored under another id than the one answered: the answer belonged to another request.
        const stored = idOfNonce.get(doc.nonce);
        found(
          "writeLost",
          1,
          doc.at,
          `${user.label}: acknowledged document ${doc.id} (${doc.nonce}) is missing: its nonce is ${stored ? `stored as ${stored}` : "not stored"}, ${doc.id} ${docIds.has(doc.id) ? `holds ${docIds.get(doc.id)}` : "does not exist"}`,
        );
      }
      for (const [nonce, n] of nonces) {
        if (n > 1)
          found(
            "writeDoubled",
            n - 1,
            time(docs.find((d) => d.nonce === nonce)!.created_at),
            `${user.label}: document ${nonce} stored ${n} times`,
          );
      }
      out.committedWithoutAnswer += Math.max(0, docs.length - user.ackedDocs.length);
    }
  } finally {
    await sql.close();
  }
  return out;
}

/** Waits until the outboxes are empty and the activity table stops growing (the relay and consumer caught up). */
/**
 * Waits until every change's event reached the activity log: the outboxes are sent, every durable consumer of the
 * events stream has nothing pending or unacknowledged (an event held by a process that was killed comes back after
 * the consumer's ack wait, 30 s), and the activity count has been still for 1.5 s.
 */
export async function waitForActivity(databaseUrl: string, natsUrl: string, timeoutMs: number): Promise<boolean> {
  const sql = new SQL(databaseUrl, { max: 1 });
  const nc = await connect({ servers: natsUrl.split(","), maxReconnectAttempts: -1 }).catch(() => null);
  const jsm = nc ? await jetstreamManager(nc, { timeout: 5_000 }).catch(() => null) : null;
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let stableSince = Date.now();
  try {
    while (Date.now() < deadline) {
      const [row] = (await sql`select
          (select count(*) from orgs.activity)::int as activity,
          (select count(*) from apps.outbox where sent_at is null)::int + (select count(*) from orgs.outbox where sent_at is null)::int as pending`.catch(
        () => [{ activity: -2, pending: 1 }],
      )) as Row[];
      const activity = Number(row!.activity);
      if (activity !== last) (last = activity), (stableSince = Date.now());
      const settled = Number(row!.pending) === 0 && Date.now() - stableSince > 1_500;
      if (settled && (await consumersIdle(jsm))) return true;
      await Bun.sleep(250);
    }
    return false;
  } finally {
    await sql.close();
    await nc?.close().catch(() => {});
  }
}

/** True when no consumer of an events stream has a message waiting or delivered but not yet acknowledged. */
async function consumersIdle(jsm: JetStreamManager | null): Promise<boolean> {
  if (!jsm) return false;
  try {
    for await (const stream of jsm.streams.list()) {
      if (!stream.config.name.startsWith("EVENTS")) continue;
      for await (const consumer of jsm.consumers.list(stream.config.name))
        if (consumer.num_pending > 0 || consumer.num_ack_pending > 0) return false;
    }
    return true;
  } catch {
    return false;
  }
}
