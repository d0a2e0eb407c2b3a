import { createHash } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import { DATA_LIMITS, DOCUMENT_FIELD } from "../spec/data-rules.ts";
import { documents } from "../db/schema.ts";
import { DataError } from "../http/answers.ts";

// `list`'s query string (`where`, `orderBy`, `limit`, `after`) turned into SQL conditions. Every value the page sends,
// field names included, travels as a bind parameter (a named placeholder); only operators from the fixed table below
// are written into the statement, so lists of the same structure share one statement text (documents.ts keeps them
// prepared). Equality on the app's fields is one `data @> $json` (the GIN index answers it); a range compares values
// of one JSON type only.

export type MetaSort = "createdAt" | "updatedAt";

export interface ListOrder {
  /** A document field, or createdAt / updatedAt (columns). */
  field: string;
  meta: MetaSort | null;
  desc: boolean;
}

/** One condition of a where: its SQL with placeholders for `values`, in order. */
export interface Condition {
  /** The condition's structure without its values: conditions with equal tokens render the same SQL text. */
  token: string;
  values: unknown[];
  render(slots: SQL[]): SQL;
}

export interface ListQuery {
  /** Sorted by token, so the same structure written in another order is the same statement. */
  conditions: Condition[];
  order: ListOrder;
  limit: number;
  /** The last row of the previous page: its sort key (a timestamp with microseconds, or a JSON value) and id. */
  after: { key: unknown; id: string } | null;
  /** Which where and orderBy a cursor belongs to: a cursor of another query would skip or repeat documents. */
  shape: string;
}

/** Document ids as Hatch makes them (randomId: base64url, never starting with `_`); anything else names no document. */
export const DOCUMENT_ID = /^[A-Za-z0-9-][A-Za-z0-9_-]{0,63}$/;

const RANGE_OPERATORS = { "<": sql.raw("<"), "<=": sql.raw("<="), ">": sql.raw(">"), ">=": sql.raw(">=") } as const;
type RangeOperator = keyof typeof RANGE_OPERATORS;
const OPERATORS = ["==", "<", "<=", ">", ">="];
/** A timestamp as a page writes it (doc.createdAt): at most milliseconds, with a zone. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;
/** A cursor's timestamp: what `to_char(... 'US')` writes, microseconds in UTC. */
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const FIELD_HELP = "fields are top-level names of letters, digits and _ (or createdAt, updatedAt, createdBy)";

function invalid(message: string): DataError {
  return new DataError("invalid", message);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reads `where`, `orderBy`, `limit` and `after` of a list request. */
export function parseListQuery(params: URLSearchParams): ListQuery {
  const where = parseWhere(params.get("where"));
  const order = parseOrder(params.get("orderBy"));
  const limit = parseLimit(params.get("limit"));
  const shape = createHash("sha256")
    .update(`${order.desc ? "-" : ""}${order.field}\n${where.canonical}`)
    .digest("base64url")
    .slice(0, 16);
  const cursor = params.get("after");
  return {
    conditions: where.conditions,
    order,
    limit,
    shape,
    after: cursor ? parseCursor(cursor, shape, order) : null,
  };
}

function parseLimit(text: string | null): number {
  if (text === null || text === "") return DATA_LIMITS.defaultListLimit;
  const limit = /^\d{1,4}$/.test(text) ? Number(text) : NaN;
  if (!(limit >= 1 && limit <= DATA_LIMITS.maxListLimit)) {
    throw invalid(
      `limit must be a whole number from 1 to ${DATA_LIMITS.maxListLimit}; page on with the answer's next cursor.`,
    );
  }
  return limit;
}

function parseOrder(text: string | null): ListOrder {
  if (text === null || text === "") return { field: "createdAt", meta: "createdAt", desc: false };
  const desc = text.startsWith("-");
  const field = desc ? text.slice(1) : text;
  if (field === "createdAt" || field === "updatedAt") return { field, meta: field, desc };
  if (field === "id" || field === "createdBy" || !DOCUMENT_FIELD.test(field)) {
    throw invalid(
      `orderBy cannot be "${field.slice(0, 64)}": name a top-level field of letters, digits and _, or createdAt or updatedAt; put - in front for descending order.`,
    );
  }
  return { field, meta: null, desc };
}

/** The expression a list sorts by: a column, or a field (placeholder `sort`) with a missing value sorting as JSON null. */
export function sortExpression(order: ListOrder): SQL {
  if (order.meta === "createdAt") return sql`${documents.createdAt}`;
  if (order.meta === "updatedAt") return sql`${documents.updatedAt}`;
  return sql`coalesce(${documents.data} -> ${sql.placeholder("sort")}::text, 'null'::jsonb)`;
}

/** The condition that starts a page after the cursor's row (placeholders `afterKey`, `afterId`); id breaks ties. */
export function afterCondition(order: ListOrder): SQL {
  const key = order.meta
    ? sql`${sql.placeholder("afterKey")}::timestamptz`
    : sql`${sql.placeholder("afterKey")}::jsonb`;
  return sql`(${sortExpression(order)}, ${documents.id}) ${sql.raw(order.desc ? "<" : ">")} (${key}, ${sql.placeholder("afterId")}::text)`;
}

/** The conditions' SQL, their values in placeholders c0, c1, … */
export function conditionsSql(conditions: Condition[]): SQL[] {
  let next = 0;
  return conditions.map((condition) =>
    condition.render(condition.values.map(() => sql`${sql.placeholder(`c${next++}`)}`)),
  );
}

/** The values of a list statement's placeholders (besides app, collection and the creator). */
export function listValues(query: ListQuery): Record<string, unknown> {
  const values: Record<string, unknown> = { limit: query.limit + 1 };
  let next = 0;
  for (const condition of query.conditions) for (const value of condition.values) values[`c${next++}`] = value;
  if (!query.order.meta) values.sort = query.order.field;
  if (query.after) {
    values.afterKey = query.order.meta ? query.after.key : JSON.stringify(query.after.key);
    values.afterId = query.after.id;
  }
  return values;
}

/** What a list statement's SQL text depends on (values aside). */
export function listShape(query: ListQuery, onlyCreator: boolean): string {
  const { meta, desc } = query.order;
  return `${meta ?? "field"}${desc ? "-" : "+"}${onlyCreator ? "c" : ""}${query.after ? "a" : ""}|${query.conditions.map((c) => c.token).join("|")}`;
}

/** The cursor that continues after this row: base64url JSON of [shape, sort key, id]. */
export function cursorAfter(
  query: ListQuery,
  row: { id: string; dataJson: string; createdAt: string; updatedAt: string },
): string {
  const { meta, field } = query.order;
  const key =
    meta === "createdAt"
      ? row.createdAt
      : meta === "updatedAt"
        ? row.updatedAt
        : ((JSON.parse(row.dataJson) as Record<string, unknown>)[field] ?? null);
  return Buffer.from(JSON.stringify([query.shape, key, row.id])).toString("base64url");
}

function parseCursor(text: string, shape: string, order: ListOrder): { key: unknown; id: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || typeof parsed[2] !== "string" || !DOCUMENT_ID.test(parsed[2])) {
    throw invalid("after is not a cursor Hatch made: pass the next value of the previous page as it came.");
  }
  const [madeFor, key, id] = parsed as [unknown, unknown, string];
  if (madeFor !== shape)
    throw invalid(
      "This cursor belongs to a list with another where or orderBy: page on with the same where and orderBy, or start again without after.",
    );
  if (order.meta ? typeof key !== "string" || !CURSOR_TIME.test(key) : key === undefined) {
    throw invalid("after is not a cursor Hatch made: pass the next value of the previous page as it came.");
  }
  return { key, id };
}

interface ParsedWhere {
  conditions: Condition[];
  canonical: string;
}

function parseWhere(text: string | null): ParsedWhere {
  if (text === null || text === "") return { conditions: [], canonical: "{}" };
  let where: unknown;
  try {
    where = JSON.parse(text);
  } catch {
    throw invalid('where is not JSON: write an object like {"done":false} or {"price":{"<":10}}, URL-encoded.');
  }
  if (!isPlainObject(where)) throw invalid('where must be a JSON object of field → value, like {"done":false}.');
  const fields = Object.keys(where).sort();
  if (fields.length > DATA_LIMITS.maxWhereFields)
    throw invalid(`where may name at most ${DATA_LIMITS.maxWhereFields} fields; it names ${fields.length}.`);
  const contains: Record<string, unknown> = {};
  const conditions: Condition[] = [];
  const canonical: Record<string, unknown> = {};
  for (const field of fields) {
    const operations = operationsOf(field, where[field]);
    canonical[field] = Object.fromEntries(operations);
    conditions.push(...fieldConditions(field, operations, contains));
  }
  if (Object.keys(contains).length) {
    conditions.push({
      token: "@>",
      values: [JSON.stringify(contains)],
      render: ([json]) => sql`${documents.data} @> ${json}::jsonb`,
    });
  }
  conditions.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
  return { conditions, canonical: JSON.stringify(canonical) };
}

/** A field's condition as [operator, value] pairs, sorted: a plain value is `==`. */
function operationsOf(field: string, condition: unknown): [string, unknown][] {
  if (!isPlainObject(condition)) return [["==", scalar(field, condition)]];
  const operators = Object.keys(condition).sort();
  if (!operators.length)
    throw invalid(`where.${field} is an empty object: give a value, or operators like {">=": 1, "<": 5}.`);
  return operators.map((operator) => {
    if (!OPERATORS.includes(operator))
      throw invalid(`where.${field} has the operator "${operator.slice(0, 8)}": use ==, <, <=, > or >=.`);
    return [operator, scalar(field, condition[operator])];
  });
}

function scalar(field: string, value: unknown): string | number | boolean | null {
  if (
    value === null ||
    typeof value === "string" ||
    typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value))
  )
    return value;
  throw invalid(
    `where.${field}: compare with a string, number, boolean or null (objects and arrays cannot be compared).`,
  );
}

function fieldConditions(
  field: string,
  operations: [string, unknown][],
  contains: Record<string, unknown>,
): Condition[] {
  if (field === "createdAt" || field === "updatedAt")
    return operations.map(([operator, value]) => timeCondition(field, operator, value));
  if (field === "createdBy") return operations.map(([operator, value]) => creatorCondition(operator, value));
  if (field === "id") throw invalid("where cannot name id: read one document with get(id).");
  if (!DOCUMENT_FIELD.test(field)) throw invalid(`where names "${field.slice(0, 64)}": ${FIELD_HELP}.`);
  const conditions: Condition[] = [];
  for (const [operator, value] of operations) {
    if (operator === "==") {
      contains[field] = value;
      continue;
    }
    if (typeof value !== "string" && typeof value !== "number") {
      throw invalid(`where.${field}: ${operator} compares strings or numbers only.`);
    }
    // Only values of the same JSON type: 10 is not "less than" "abc", and a field holding text never matches a number.
    const type = typeof value === "number" ? "number" : "string";
    const compare = RANGE_OPERATORS[operator as RangeOperator];
    conditions.push({
      token: `r${operator}`,
      values: [field, type, JSON.stringify(value)],
      render: ([name, kind, bound]) =>
        sql`(jsonb_typeof(${documents.data} -> ${name}::text) = ${kind}::text and ${documents.data} -> ${name}::text ${compare} ${bound}::jsonb)`,
    });
  }
  return conditions;
}

/**
 * createdAt / updatedAt compared at the millisecond a page sees (the columns hold microseconds): `> t` means from the
 * next millisecond on, so `{ createdAt: { ">": newest.createdAt } }` never repeats `newest`. Index-friendly ranges.
 */
function timeCondition(field: MetaSort, operator: string, value: unknown): Condition {
  const ms = typeof value === "string" && ISO_TIME.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms))
    throw invalid(`where.${field}: compare with a time like "2026-01-31T12:00:00.000Z" (a document's ${field}).`);
  const column = field === "createdAt" ? documents.createdAt : documents.updatedAt;
  const at = new Date(ms).toISOString();
  const next = new Date(ms + 1).toISOString();
  const token = `t${field}${operator}`;
  switch (operator) {
    case "==":
      return {
        token,
        values: [at, next],
        render: ([from, to]) => sql`(${column} >= ${from}::timestamptz and ${column} < ${to}::timestamptz)`,
      };
    case "<":
      return { token, values: [at], render: ([bound]) => sql`${column} < ${bound}::timestamptz` };
    case "<=":
      return { token, values: [next], render: ([bound]) => sql`${column} < ${bound}::timestamptz` };
    case ">":
      return { token, values: [next], render: ([bound]) => sql`${column} >= ${bound}::timestamptz` };
    default:
      return { token, values: [at], render: ([bound]) => sql`${column} >= ${bound}::timestamptz` };
  }
}

function creatorCondition(operator: string, value: unknown): Condition {
  if (operator !== "==")
    throw invalid("where.createdBy compares with == only (an email, or null for documents added without signing in).");
  if (value === null) return { token: "b0", values: [], render: () => sql`${documents.createdByEmail} is null` };
  if (typeof value !== "string")
    throw invalid("where.createdBy: compare with an email, or null for documents added without signing in.");
  return {
    token: "b=",
    values: [value.toLowerCase()],
    render: ([email]) => sql`lower(${documents.createdByEmail}) = ${email}::text`,
  };
}
