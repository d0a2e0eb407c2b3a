import { confirmUsesTable, outboxTable } from "@hatch/platform";
import { type AiKeyChoice, type AiKeyScope, type ApiPlacement } from "@hatch/contracts";
import {
  bigint,
  bigserial,
  boolean,
  date,
  index,
  integer,
  jsonb,
  pgSchema,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

/** The apps service's own schema. Rows stay inside the service; tools map them to contract types. */
export const apps = pgSchema("apps");

const created = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();

/**
 * Every address ever given out. A row is never deleted, so an address is never reused after its app is
 * deleted (interface spec). `app_id` is null once the app is gone.
 */
export const addresses = apps.table("addresses", {
  address: text("address").primaryKey(),
  appId: text("app_id"),
  reservedAt: created(),
});

/** An app: owned by one person inside one account (personal or company). */
export const appsTable = apps.table(
  "apps",
  {
    id: text("id").primaryKey(),
    address: text("address")
      .notNull()
      .unique()
      .references(() => addresses.address),
    name: text("name").notNull(),
    accountId: text("account_id").notNull(),
    ownerId: text("owner_id").notNull(),
    ownerEmail: text("owner_email").notNull(),
    ownerName: text("owner_name").notNull(),
    visibility: text("visibility").$type<"private" | "org" | "people" | "public">().notNull(),
    aiDiscoverable: boolean("ai_discoverable").notNull().default(false),
    /** null until the first version is complete. */
    currentVersion: integer("current_version"),
    /** The highest version number handed out (versions are numbered 1, 2, ... per app). */
    lastVersion: integer("last_version").notNull().default(0),
    paused: boolean("paused").notNull().default(false),
    pausedReason: text("paused_reason"),
    /** tool_ai: whose AI provider key pays for the app's AI calls. */
    aiChoice: text("ai_choice").$type<AiKeyChoice>().notNull().default("none"),
    /** For `mine`: the user whose own key pays (the one who chose it). */
    aiPayerId: text("ai_payer_id"),
    createdAt: created(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("apps_owner").on(t.ownerId), index("apps_account").on(t.accountId)],
);

/** An immutable published version; `config` is its parsed service.json (empty object when it has none). */
export const versions = apps.table(
  "versions",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    number: integer("number").notNull(),
    publishedBy: text("published_by").notNull(),
    publisherEmail: text("publisher_email").notNull(),
    /** The client it was published from (ctx.client: an AI client's name, or the dashboard); null before 0008. */
    publisherClient: jsonb("publisher_client").$type<{ kind: string; name: string }>(),
    fileCount: integer("file_count").notNull(),
    totalBytes: bigint("total_bytes", { mode: "number" }).notNull(),
    config: jsonb("config").$type<Record<string, unknown>>().notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.number] })],
);

/** The files of a version, pointing at content-addressed blobs. */
export const versionFiles = apps.table(
  "version_files",
  {
    appId: text("app_id").notNull(),
    version: integer("version").notNull(),
    path: text("path").notNull(),
    sha256: text("sha256").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    contentType: text("content_type").notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.version, t.path] }), index("version_files_sha").on(t.sha256)],
);

/** Blobs the store holds (by sha256), so a manifest can be answered without asking the store file by file. */
export const blobs = apps.table("blobs", {
  sha256: text("sha256").primaryKey(),
  size: bigint("size", { mode: "number" }).notNull(),
  createdAt: created(),
});

/**
 * One-time upload URLs handed out for missing manifest files. A used row also proves the user had that content
 * (publish counts stored content as present only then). Rows of a manifest publish (`batch`) are found by the
 * batch's token and their `path`; `token` is only the row's key (no URL names it since the per-file upload route went).
 */
export const uploads = apps.table(
  "uploads",
  {
    token: text("token").primaryKey(),
    sha256: text("sha256").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    userId: text("user_id").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
    createdAt: created(),
    /** The folder_uploads row (a manifest publish) this file belongs to. */
    batch: text("batch"),
    /** The manifest path the file is uploaded under (`<batch URL>/<path>`). */
    path: text("path"),
  },
  (t) => [uniqueIndex("uploads_batch_path").on(t.batch, t.path)],
);

/**
 * A folder publish waiting for its bytes, with everything already decided (the target app, or a new app's name,
 * visibility and account; the user's answer was spent when the row was made). `tar`: one PUT of the folder as a
 * tar publishes it. `manifest`: the missing files are PUT under the token, then publish { uploadId } finishes.
 * One use; the sweep drops expired rows.
 */
export const folderUploads = apps.table("folder_uploads", {
  id: text("id").primaryKey(),
  token: text("token").notNull().unique(),
  userId: text("user_id").notNull(),
  kind: text("kind").$type<"tar" | "manifest">().notNull(),
  /** The caller's context when it was made (the publish is done as them). */
  ctx: jsonb("ctx").notNull(),
  target: jsonb("target").notNull(),
  /** kind manifest: every file (path, sha256, size). */
  manifest: jsonb("manifest"),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  usedAt: timestamp("used_at", { withTimezone: true }),
  createdAt: created(),
});

/** People an app is shared with by email (visibility `people`, kept when visibility changes). */
export const appPeople = apps.table(
  "app_people",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    /** Lower-cased. */
    email: text("email").notNull(),
    addedAt: created(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.email] }), index("app_people_email").on(t.email)],
);

/** Opens per app per UTC day. */
export const dailyOpens = apps.table(
  "daily_opens",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    day: date("day").notNull(),
    opens: integer("opens").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.appId, t.day] })],
);

/**
 * Who opened an app on a day, as a keyed hash (HMAC of the app id with the signed-in user id, or with the IP
 * address and user agent). No raw IP address is stored, and a hash cannot be linked across apps.
 */
export const dailyViewers = apps.table(
  "daily_viewers",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    day: date("day").notNull(),
    viewer: text("viewer").notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.day, t.viewer] })],
);

/**
 * App data: the documents of an app's collections (service.json `collections`). A document belongs to the app, not
 * to a version, so a new version keeps it; deleting the app deletes it. `data` holds the app's own fields only
 * (the meta fields id, createdAt, updatedAt and createdBy are columns).
 */
export const documents = apps.table(
  "documents",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    collection: text("collection").notNull(),
    id: text("id").notNull(),
    data: jsonb("data").$type<Record<string, unknown>>().notNull(),
    /** Size of `data` as JSON, as the document size limit counts it. */
    bytes: integer("bytes").notNull(),
    /** The signed-in viewer who added it (user id; null when added anonymously): the `creator` rule compares this. */
    createdBy: text("created_by"),
    createdByEmail: text("created_by_email"),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.appId, t.collection, t.id] }),
    // list: newest or oldest first, and each viewer's own documents (the creator rule), by cursor.
    index("documents_by_created").on(t.appId, t.collection, t.createdAt, t.id),
    index("documents_by_creator").on(t.appId, t.collection, t.createdBy, t.createdAt, t.id),
    // list with an equality filter: `data @> '{"done": false}'`.
    index("documents_data").using("gin", t.data.op("jsonb_path_ops")),
  ],
);

/** Files uploaded to an app's buckets (service.json `buckets`); the bytes are blobs in the store, by sha256. */
export const bucketFiles = apps.table(
  "bucket_files",
  {
    id: text("id").primaryKey(),
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    bucket: text("bucket").notNull(),
    name: text("name").notNull(),
    contentType: text("content_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    sha256: text("sha256").notNull(),
    createdBy: text("created_by"),
    createdByEmail: text("created_by_email"),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [
    index("bucket_files_by_created").on(t.appId, t.bucket, t.createdAt, t.id),
    index("bucket_files_sha").on(t.sha256),
  ],
);

/**
 * The files an app's buckets hold, kept in the same transaction as each change, so the per-app file limits are checked
 * with one conditional update instead of a count. `documents` and `document_bytes` are no longer written (documents
 * are counted in `document_usage`); kept until copies of the release before it are gone (expand before contract).
 */
export const dataUsage = apps.table("data_usage", {
  appId: text("app_id")
    .primaryKey()
    .references(() => appsTable.id, { onDelete: "cascade" }),
  documents: integer("documents").notNull().default(0),
  files: integer("files").notNull().default(0),
  fileBytes: bigint("file_bytes", { mode: "number" }).notNull().default(0),
  /** The documents' bytes as JSON (documents.bytes summed). */
  documentBytes: bigint("document_bytes", { mode: "number" }).notNull().default(0),
});

/**
 * An app's documents counted in shards, so concurrent writes of one app do not queue on one row: a change counts in
 * the shard of its database connection (src/data/document-usage.ts). The app's documents and bytes are the sums of
 * its rows. `allowed` is the shard's share of DATA_LIMITS.maxDocumentsPerApp (escrow): a shard counts an add only
 * while `documents < allowed`, and the app's `allowed` add up to at most the limit, so the limit holds with each add
 * checking one row. A shard out of room shares the app's room out again, under a per-app lock, over all shards.
 */
export const documentUsage = apps.table(
  "document_usage",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    shard: smallint("shard").notNull(),
    /** Documents added minus removed through this shard (below 0 when it counted off more than it counted in). */
    documents: integer("documents").notNull().default(0),
    /** Their bytes as JSON (documents.bytes), the same way. */
    bytes: bigint("bytes", { mode: "number" }).notNull().default(0),
    /** How many documents this shard may count: `documents` never goes past it by an add. */
    allowed: integer("allowed").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.appId, t.shard] })],
);

/**
 * The plan's storage held by escrow, per account in shards (src/data/storage-limit.ts): a document add takes its bytes
 * from a shard with room in the statement that inserts it, without the account's lock; `allowed` − `used` is what the
 * shard may still grant, under the limit it was shared for (`limit_bytes`: a plan change makes the shares stale).
 */
export const storageEscrow = apps.table(
  "storage_escrow",
  {
    accountId: text("account_id").notNull(),
    shard: smallint("shard").notNull(),
    allowed: bigint("allowed", { mode: "number" }).notNull().default(0),
    used: bigint("used", { mode: "number" }).notNull().default(0),
    limitBytes: bigint("limit_bytes", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.shard] })],
);

/** Lines an app's server code logged (console.*, and Hatch's own error lines); the newest SERVER_LIMITS.logLinesKept per app are kept. */
export const appLogs = apps.table(
  "app_logs",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    at: timestamp("at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    level: text("level").$type<"debug" | "info" | "warn" | "error">().notNull(),
    message: text("message").notNull(),
  },
  (t) => [index("app_logs_by_app").on(t.appId, t.id)],
);

/**
 * Secret values of an app (service.json `apis` name them), sealed with AES-256-GCM: `sealed` is
 * base64url(iv | tag | ciphertext) under the key `keyId` names, with the app id and secret name as associated data.
 * `destinations` are where the person who set or confirmed it saw it would go (src/secrets/destinations.ts): an API
 * whose declared destination is not among them gets no value.
 */
/** A destination a secret's value was confirmed for: the api that declared it then, its base url, where the value goes. */
export interface BoundDestination {
  api: string;
  url: string;
  in: ApiPlacement;
}

export const secrets = apps.table(
  "secrets",
  {
    appId: text("app_id")
      .notNull()
      .references(() => appsTable.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    keyId: text("key_id").notNull(),
    sealed: text("sealed").notNull(),
    destinations: jsonb("destinations").$type<BoundDestination[]>().notNull().default([]),
    updatedBy: text("updated_by").notNull(),
    updatedByEmail: text("updated_by_email").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.name] })],
);

/**
 * AI provider keys, sealed like secrets. `ownerId` is whose key it is: the user (scope mine), the account (company)
 * or the app (tool; `appId` too, so deleting the app deletes its key). One key per owner and provider.
 */
export const aiKeys = apps.table(
  "ai_keys",
  {
    id: text("id").primaryKey(),
    scope: text("scope").$type<AiKeyScope>().notNull(),
    ownerId: text("owner_id").notNull(),
    appId: text("app_id").references(() => appsTable.id, { onDelete: "cascade" }),
    provider: text("provider").notNull(),
    keyId: text("key_id").notNull(),
    sealed: text("sealed").notNull(),
    addedBy: text("added_by").notNull(),
    addedByEmail: text("added_by_email").notNull(),
    addedAt: timestamp("added_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("ai_keys_owner_provider").on(t.scope, t.ownerId, t.provider)],
);

export const confirmUses = confirmUsesTable(apps);

/** Events of this service's changes, written in the same transaction (see src/events.ts); the relay publishes them. */
export const outbox = outboxTable(apps);
