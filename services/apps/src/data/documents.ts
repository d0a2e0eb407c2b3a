import { and, asc, desc, eq, sql, type SQL } from "drizzle-orm";
import { randomId } from "@hatch/contracts";
import { DATA_LIMITS, DOCUMENT_FIELD, DOCUMENT_META_FIELDS } from "../spec/data-rules.ts";
import { type Database } from "@hatch/platform";
import { appsTable, documents } from "../db/schema.ts";
import { DataError } from "../http/answers.ts";
import { lockAppRow } from "./app-lock.ts";
import { countAddSql, countChange, shareRoom } from "./document-usage.ts";
import { checkStorageLocked, grantSql, storageForAdd, storageMax, type StorageLimit } from "./storage-limit.ts";
import {
  afterCondition,
  conditionsSql,
  cursorAfter,
  listShape,
  listValues,
  sortExpression,
  type ListQuery,
} from "./query.ts";

// The documents of an app's collections. Each change is one transaction that also counts it in the app's
// document_usage (document-usage.ts: shards, so adds at once do not queue on one row), so the per-app limit is one
// conditional update of one shard, never a count. An add is one statement. Reads are one statement, kept prepared:
// building a statement with drizzle costs more than Postgres takes to answer it.

export interface StoredDocument {
  id: string;
  /** The app's own fields. */
  data: Record<string, unknown>;
  /** The creator's user id (the `creator` rule compares it), or null when added without signing in. */
  createdBy: string | null;
  createdByEmail: string | null;
  /** UTC, microseconds: `2026-01-31T12:00:00.123456Z` (cursors need the full precision). */
  createdAt: string;
  updatedAt: string;
}

/** A document of a list page: its fields as jsonb's JSON text, copied into the answer without parsing. */
export type ListedDocument = Omit<StoredDocument, "data"> & { dataJson: string };

/** Who adds a document: the signed-in viewer, or null. */
export interface Author {
  sub: string;
  email: string;
}

export interface DocumentKey {
  appId: string;
  collection: string;
}

/** A change's outcome when the document is not there, or not the caller's under the `creator` rule. */
export type Refused = "missing" | "not_creator";

const MICROS = '\'YYYY-MM-DD"T"HH24:MI:SS.US"Z"\'';
const META_COLUMNS = {
  id: documents.id,
  createdBy: documents.createdBy,
  createdByEmail: documents.createdByEmail,
  createdAt: sql<string>`to_char(${documents.createdAt} at time zone 'UTC', ${sql.raw(MICROS)})`,
  updatedAt: sql<string>`to_char(${documents.updatedAt} at time zone 'UTC', ${sql.raw(MICROS)})`,
};
const COLUMNS = { ...META_COLUMNS, data: documents.data };
const LISTED_COLUMNS = { ...META_COLUMNS, dataJson: sql<string>`${documents.data}::text` };
const MAX_DEPTH = 64;
const META = new Set<string>(DOCUMENT_META_FIELDS);

/**
 * The app's fields of a written object, checked: meta keys (id, createdAt, updatedAt, createdBy) are dropped so a
 * page may write back what it read; top-level names must be DOCUMENT_FIELD; every string must be storable.
 */
export function appFields(body: Record<string, unknown>): Record<string, unknown> {
  const entries = Object.entries(body).filter(([name]) => !META.has(name));
  for (const [name] of entries) {
    if (!DOCUMENT_FIELD.test(name)) {
      throw new DataError(
        "invalid",
        `The field name "${name.slice(0, 64)}" cannot be used: top-level names are letters, digits and _, at most 64, not starting with a digit.`,
      );
    }
  }
  // fromEntries defines own properties: a field called __proto__ stays a field.
  const fields = Object.fromEntries(entries);
  checkStorable(fields);
  return fields;
}

/** Postgres jsonb holds no NUL character and no lone surrogate, and deep nesting would exhaust its stack. */
function checkStorable(root: unknown): void {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (typeof value === "string") {
      if (!isStorableText(value))
        throw new DataError(
          "invalid",
          "A document's text may not contain NUL characters or broken Unicode (lone surrogates).",
        );
    } else if (typeof value === "object" && value !== null) {
      if (depth >= MAX_DEPTH)
        throw new DataError("invalid", `A document may nest objects and arrays at most ${MAX_DEPTH} levels deep.`);
      const entries = Array.isArray(value) ? value : Object.entries(value).flat();
      for (const item of entries) stack.push([item, depth + 1]);
    }
  }
}

function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && text.isWellFormed();
}

/** The JSON size of a document's fields, checked against the limit. */
export function documentBytes(fields: Record<string, unknown>, json = JSON.stringify(fields)): number {
  const bytes = Buffer.byteLength(json);
  if (bytes > DATA_LIMITS.maxDocumentBytes) {
    throw new DataError(
      "too_large",
      `This document is ${bytes} bytes as JSON; a document may be at most ${DATA_LIMITS.maxDocumentBytes} bytes. Keep big things in a file bucket and store its id.`,
    );
  }
  return bytes;
}

/** A new document id: base64url, and never starting with `_` (so no id is ever `_changes` or looks like a route). */
function newDocumentId(): string {
  const id = randomId(12);
  return id.startsWith("_") ? `d${id.slice(1)}` : id;
}

export async function addDocument(
  db: Database,
  key: DocumentKey,
  fields: Record<string, unknown>,
  author: Author | null,
  /** The plan's storage, when the write counts against it (read before the transaction). */
  storage?: StorageLimit,
): Promise<StoredDocument> {
  const json = JSON.stringify(fields);
  const bytes = documentBytes(fields, json);
  const added: NewDocument = { id: newDocumentId(), json, bytes, author };
  // The add is one statement (its own transaction): its shard of the app's usage, and with a plan's storage its
  // shard of the account's storage escrow, are locked only while Postgres runs it, never across a round trip.
  const max = storageMax(storage, bytes);
  if (max === null) {
    return (await insertCounted({ pool: db }, key, added)) ?? db.transaction((tx) => addWithRoom(tx, key, added));
  }
  const granted = { account: storage!.accountId, max };
  const row = await insertCounted({ pool: db }, key, added, granted);
  if (row) return row;
  // No escrow shard had room for it (or the app's shards had none): under the account's storage lock, ask the escrow
  // again where it has room by then; otherwise count it there and share the account's room out again.
  return db.transaction(async (tx) => {
    if ((await storageForAdd(tx, storage!, bytes)) === "room") {
      const again = await insertCounted({ tx }, key, added, granted);
      if (again) return again;
      await storageForAdd(tx, storage!, bytes, true);
    }
    return (await insertCounted({ tx }, key, added)) ?? addWithRoom(tx, key, added);
  });
}

/** The plan's storage an add takes its bytes from: the account, and the limit its escrow was shared for. */
interface Granted {
  account: string;
  max: number;
}

type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

interface NewDocument {
  id: string;
  /** The fields as JSON, `bytes` long. */
  json: string;
  bytes: number;
  author: Author | null;
}

/**
 * The add that found no free shard with room: under the app's usage lock, adds again where a shard has room, and
 * otherwise (or when those shards were all busy again) shares the app's room out (or refuses at the limit) and adds.
 */
async function addWithRoom(tx: Tx, key: DocumentKey, added: NewDocument): Promise<StoredDocument> {
  let room = await shareRoom(tx, key.appId);
  if (room === "room") {
    const row = await insertCounted({ tx }, key, added);
    if (row) return row;
    room = await shareRoom(tx, key.appId, { force: true });
  }
  if (room === "full") {
    throw new DataError(
      "limit_exceeded",
      `This app holds ${DATA_LIMITS.maxDocumentsPerApp} documents (all collections together), the most it may. Remove documents it no longer needs before adding more.`,
    );
  }
  const row = room === "shared" ? await insertCounted({ tx }, key, added) : null;
  // The app row is gone (deleted meanwhile): as a foreign key refusal was before, an unexpected failure.
  if (!row) throw new Error("the app of this document no longer exists");
  return row;
}

/**
 * The document and its count in one statement, in the order every write of the app's data takes its locks: the app
 * row (key share, as lockAppRow), then this connection's shard of the app's usage (counted, when it has room), then
 * the document. Nothing is written, and null answered, when the shard has no room or the app is gone. Kept prepared
 * on the pool (built once; Postgres plans it once per connection); built afresh inside a transaction.
 */
async function insertCounted(
  runner: { pool: Database } | { tx: Tx },
  key: DocumentKey,
  added: NewDocument,
  granted?: Granted,
): Promise<StoredDocument | null> {
  const shape = granted ? "add-granted" : "add";
  const insert =
    "pool" in runner
      ? statement(runner.pool, shape, true, () => addStatement(runner.pool, granted !== undefined))
      : addStatement(runner.tx, granted !== undefined).prepare(`hatch_${shape.replace("-", "_")}_document`);
  const [row] = await insert.execute({
    app: key.appId,
    collection: key.collection,
    id: added.id,
    data: added.json,
    bytes: added.bytes,
    creator: added.author?.sub ?? null,
    creatorEmail: added.author?.email ?? null,
    ...(granted ? { account: granted.account, max: granted.max } : {}),
  });
  return row ?? null;
}

/**
 * The add's statement, with placeholders for the app, the document and its creator. `granted`: its bytes taken from
 * the account's storage escrow first (placeholders `account` and `max`), and the document counted and inserted only
 * when they were.
 */
function addStatement(db: Database | Tx, granted: boolean) {
  const value = <T>(name: string, type: string) => sql<T>`${sql.placeholder(name)}::${sql.raw(type)}`.as(name);
  const app = sql`(select ${appsTable.id} from ${appsTable} where ${appsTable.id} = ${sql.placeholder("app")} for key share)`;
  const bytes = sql`${sql.placeholder("bytes")}::integer`;
  const grant = db
    .$with("granted", { accountId: sql<string>`account_id`.as("account_id") })
    .as(grantSql(sql`${sql.placeholder("account")}::text`, bytes, sql`${sql.placeholder("max")}::bigint`));
  const counted = db
    .$with("counted", { appId: sql<string>`app_id`.as("app_id") })
    .as(countAddSql(app, bytes, granted ? sql`exists (select 1 from granted)` : undefined));
  return db
    .with(...(granted ? [grant, counted] : [counted]))
    .insert(documents)
    .select(
      db
        .select({
          appId: counted.appId,
          collection: value<string>("collection", "text"),
          id: value<string>("id", "text"),
          data: value<Record<string, unknown>>("data", "jsonb"),
          bytes: value<number>("bytes", "integer"),
          createdBy: value<string | null>("creator", "text"),
          createdByEmail: value<string | null>("creatorEmail", "text"),
          createdAt: sql<Date>`now()`.as("created_at"),
          updatedAt: sql<Date>`now()`.as("updated_at"),
        })
        .from(counted),
    )
    .returning(COLUMNS);
}

function byId(key: DocumentKey, id: string): SQL {
  return and(eq(documents.appId, key.appId), eq(documents.collection, key.collection), eq(documents.id, id))!;
}

/** A statement built once per database and shape: drizzle's query building is the dear part of a small read. */
interface Prepared<T> {
  execute(values: Record<string, unknown>): Promise<T>;
}
type Rows = (StoredDocument | ListedDocument)[];

const prepared = new WeakMap<Database, Map<string, Prepared<Rows>>>();
/** Shapes kept built per database; the least recently used goes first. */
const MAX_SHAPES = 256;

/**
 * The statement of a shape, built on first use. `named`: kept prepared in Postgres too (postgres.js keeps a named
 * statement per connection for the connection's life, and Postgres may settle on one generic plan for it).
 */
function statement<T extends Rows>(
  db: Database,
  shape: string,
  named: boolean,
  build: () => { prepare(name?: string): Prepared<T> },
): Prepared<T> {
  let shapes = prepared.get(db);
  if (!shapes) prepared.set(db, (shapes = new Map()));
  let found = shapes.get(shape);
  if (found) {
    shapes.delete(shape);
  } else {
    found = build().prepare(named ? "hatch_documents" : undefined);
    if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value!);
  }
  shapes.set(shape, found);
  return found as Prepared<T>;
}

const byIdSql = and(
  eq(documents.appId, sql.placeholder("app")),
  eq(documents.collection, sql.placeholder("collection")),
  eq(documents.id, sql.placeholder("id")),
);

export async function getDocument(db: Database, key: DocumentKey, id: string): Promise<StoredDocument | null> {
  const get = statement(db, "get", true, () => db.select(COLUMNS).from(documents).where(byIdSql).limit(1));
  const [row] = await get.execute({ app: key.appId, collection: key.collection, id });
  return row ?? null;
}

/** The statement of a list of this shape, with placeholders (values: listValues, app, collection and creator). */
export function listStatement(db: Database, query: ListQuery, onlyCreator: boolean) {
  const direction = query.order.desc ? desc : asc;
  return db
    .select(LISTED_COLUMNS)
    .from(documents)
    .where(
      and(
        eq(documents.appId, sql.placeholder("app")),
        eq(documents.collection, sql.placeholder("collection")),
        onlyCreator ? eq(documents.createdBy, sql.placeholder("creator")) : undefined,
        ...conditionsSql(query.conditions),
        query.after ? afterCondition(query.order) : undefined,
      ),
    )
    .orderBy(direction(sortExpression(query.order)), direction(documents.id))
    .limit(sql.placeholder("limit"));
}

/**
 * Whether a list's statement stays prepared in Postgres: only lists without a where, a few shapes whose one generic
 * plan (the index by createdAt, or by creator) is right for every value. A where is planned for its values each time
 * (whether `data @> …` is better answered by the GIN index or by walking the createdAt index depends on how many
 * documents match), and the number of statements kept on the server stays small whatever pages ask for.
 */
export function keptPrepared(query: ListQuery): boolean {
  return query.conditions.length === 0;
}

/** The values of a list statement's placeholders. */
export function listStatementValues(
  key: DocumentKey,
  query: ListQuery,
  onlyCreator: string | null,
): Record<string, unknown> {
  return {
    ...listValues(query),
    app: key.appId,
    collection: key.collection,
    ...(onlyCreator === null ? {} : { creator: onlyCreator }),
  };
}

/**
 * One page of a list, in one statement (one row more than asked tells whether there is a next page). `onlyCreator`:
 * the `creator` read rule, the viewer's user id.
 */
export async function listDocuments(
  db: Database,
  key: DocumentKey,
  query: ListQuery,
  onlyCreator: string | null,
): Promise<{ documents: ListedDocument[]; next: string | null }> {
  const list = statement(db, listShape(query, onlyCreator !== null), keptPrepared(query), () =>
    listStatement(db, query, onlyCreator !== null),
  );
  const rows = await list.execute(listStatementValues(key, query, onlyCreator));
  const more = rows.length > query.limit;
  if (more) rows.length = query.limit;
  return { documents: rows, next: more ? cursorAfter(query, rows[rows.length - 1]!) : null };
}

/** Sets the given fields (a shallow merge). `onlyCreator`: the `creator` rule, the viewer's user id. */
export async function updateDocument(
  db: Database,
  key: DocumentKey,
  id: string,
  patch: Record<string, unknown>,
  onlyCreator: string | null,
  /** The plan's storage (read before the transaction): a patch grows a document by about its own size, counted as that. */
  storage?: StorageLimit,
): Promise<StoredDocument | Refused> {
  return db.transaction(async (tx) => {
    await checkStorageLocked(tx, storage, documentBytes(patch));
    // The app row before the document, as removeDocument and delete_tool take them (its usage shard comes last).
    if (!(await lockAppRow(tx, key.appId))) return "missing";
    const [current] = await tx
      .select({ data: documents.data, bytes: documents.bytes, createdBy: documents.createdBy })
      .from(documents)
      .where(byId(key, id))
      .for("update");
    if (!current) return "missing";
    if (onlyCreator !== null && current.createdBy !== onlyCreator) return "not_creator";
    const data = { ...current.data, ...patch };
    const bytes = documentBytes(data);
    const [row] = await tx
      .update(documents)
      .set({ data, bytes, updatedAt: sql`now()` })
      .where(byId(key, id))
      .returning(COLUMNS);
    if (bytes !== current.bytes) await countChange(tx, key.appId, { documents: 0, bytes: bytes - current.bytes });
    return row!;
  });
}

/** Removes a document and counts it off; answers its creator (whose live streams hear of it under `creator`). */
export async function removeDocument(
  db: Database,
  key: DocumentKey,
  id: string,
  onlyCreator: string | null,
  /** Writes what else the removal records (the dashboard's activity log event), in the same transaction. */
  record?: (tx: Pick<Database, "insert">) => Promise<void>,
): Promise<{ createdBy: string | null } | Refused> {
  return db.transaction(async (tx) => {
    // The app row first, as delete_tool takes it: otherwise this document's lock and the app's document_usage rows could
    // be taken in opposite orders by the two (a deadlock Postgres would end by failing one of them).
    if (!(await lockAppRow(tx, key.appId))) return "missing";
    const mine = onlyCreator === null ? undefined : eq(documents.createdBy, onlyCreator);
    const [removed] = await tx
      .delete(documents)
      .where(and(byId(key, id), mine))
      .returning({ createdBy: documents.createdBy, bytes: documents.bytes });
    if (!removed) {
      if (onlyCreator === null) return "missing";
      const [exists] = await tx.select({ id: documents.id }).from(documents).where(byId(key, id)).limit(1);
      return exists ? "not_creator" : "missing";
    }
    await countChange(tx, key.appId, { documents: -1, bytes: -removed.bytes });
    await record?.(tx);
    return { createdBy: removed.createdBy };
  });
}
