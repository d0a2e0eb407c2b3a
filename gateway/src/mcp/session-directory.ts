import { isNatsBus, LazyKv, openKvBucket, type Bus, type Logger } from "@hatch/platform";
import { Kvm, type KV } from "@nats-io/kv";
import { z } from "zod";
import { deleteEventBucket } from "./event-store.ts";

// Where a 2025-11-25 session lives between requests, so any gateway copy can serve it: who opened it (user and
// grant), what the client said in `initialize` (replayed to rebuild the session on a copy that has not seen it), the
// connection URL's choice and whether it answers over SSE. A JetStream key-value bucket on NATS (entries expire after
// the idle time unless touched), a map shared by every gateway on one in-process bus in `bun run dev`. No token, no
// secret: a session id alone opens nothing, since every request is authenticated and checked against user and grant.

export const SessionRecordSchema = z.object({
  user: z.string(),
  grant: z.string(),
  /** The params of the client's initialize request. */
  init: z.record(z.string(), z.unknown()),
  choice: z.object({ groups: z.array(z.string()).nullable(), readOnly: z.boolean() }),
  /** The session answers over SSE (the client declared elicitation). */
  stream: z.boolean(),
});
export type SessionRecord = z.infer<typeof SessionRecordSchema>;

export interface SessionDirectory {
  get(id: string): Promise<SessionRecord | null>;
  /** Writes the record (again): a write restarts its idle time. */
  put(id: string, record: SessionRecord): Promise<void>;
  delete(id: string): Promise<void>;
}

class MemorySessionDirectory implements SessionDirectory {
  private readonly records = new Map<string, { record: SessionRecord; until: number }>();
  constructor(private readonly idleMs: number) {}

  async get(id: string): Promise<SessionRecord | null> {
    const entry = this.records.get(id);
    if (!entry) return null;
    if (entry.until <= Date.now()) {
      this.records.delete(id);
      return null;
    }
    return entry.record;
  }

  async put(id: string, record: SessionRecord): Promise<void> {
    this.records.set(id, { record, until: Date.now() + this.idleMs });
    if (this.records.size > 100_000) this.records.delete(this.records.keys().next().value!);
  }

  async delete(id: string): Promise<void> {
    this.records.delete(id);
  }
}

class KvSessionDirectory implements SessionDirectory {
  private readonly bucket: LazyKv;
  constructor(
    open: () => Promise<KV>,
    private readonly logger: Logger,
  ) {
    this.bucket = new LazyKv(open);
  }

  private kv(): Promise<KV> {
    return this.bucket.get();
  }

  async get(id: string): Promise<SessionRecord | null> {
    const entry = await (await this.kv()).get(id);
    if (!entry || entry.operation !== "PUT") return null;
    const parsed = SessionRecordSchema.safeParse(entry.json());
    if (!parsed.success) {
      this.logger.warn("unreadable MCP session record ignored");
      return null;
    }
    return parsed.data;
  }

  async put(id: string, record: SessionRecord): Promise<void> {
    await (await this.kv()).put(id, JSON.stringify(record));
  }

  async delete(id: string): Promise<void> {
    await (await this.kv()).delete(id);
  }
}

/** The gateways of one in-process bus share one map (two copies in one test process see each other's sessions). */
const memoryDirectories = new WeakMap<Bus, MemorySessionDirectory>();

export function sessionBucketName(prefix: string): string {
  return ["hatch_mcp_sessions", prefix].filter(Boolean).join("_");
}

export function createSessionDirectory(bus: Bus, idleMs: number, logger: Logger): SessionDirectory {
  if (!isNatsBus(bus)) {
    let directory = memoryDirectories.get(bus);
    if (!directory) memoryDirectories.set(bus, (directory = new MemorySessionDirectory(idleMs)));
    return directory;
  }
  const name = sessionBucketName(bus.prefix);
  return new KvSessionDirectory(() => openKvBucket(bus, name, { history: 1, ttl: idleMs }, logger), logger);
}

/** Removes the bucket and the stream events' one (a test run under its own bus prefix cleans up after itself). */
export async function deleteSessionBucket(bus: Bus): Promise<void> {
  if (!isNatsBus(bus)) return;
  await deleteEventBucket(bus).catch(() => {});
  const kv = await new Kvm(bus.connection).open(sessionBucketName(bus.prefix));
  await kv.destroy();
}
