import { formatBytes } from "@hatch/contracts";
import { z } from "zod";

// App data: the collections and file buckets an app declares in service.json, the rule words that say who may do
// what, and the limits the app host enforces. The apps service enforces these, the developer reference prints them
// and the browser library's errors speak the same words: all read this file.

/**
 * Who may do something, judged on every request by the viewer the app host verified (never by what the page sends):
 * - `anyone`: whoever can open the app (for a non-public app that already means a signed-in viewer it is shared with);
 * - `signed_in`: a viewer signed in to Hatch;
 * - `creator`: the signed-in viewer who created the document or file (for `read`: each viewer sees only their own);
 * - `org`: a signed-in viewer acting as the account the app belongs to (the owner's organization);
 * - `owner`: the app's owner only.
 */
export const DATA_RULES = ["anyone", "signed_in", "creator", "org", "owner"] as const;
export type DataRule = (typeof DATA_RULES)[number];

/** An operation a rule does not name is allowed to the app's owner only: nobody else gets anything by default. */
export const DEFAULT_DATA_RULE: DataRule = "owner";

export const COLLECTION_OPERATIONS = ["read", "create", "update", "delete"] as const;
export type CollectionOperation = (typeof COLLECTION_OPERATIONS)[number];
export const BUCKET_OPERATIONS = ["read", "create", "delete"] as const;
export type BucketOperation = (typeof BUCKET_OPERATIONS)[number];

/** Limits of app data; sizes are bytes. The app host enforces them and the reference prints them. */
export const DATA_LIMITS = {
  /** Collections and buckets one service.json may declare. */
  maxCollections: 50,
  maxBuckets: 20,
  /** One document as JSON. */
  maxDocumentBytes: 64 * 1024,
  /** Documents of one app, all collections together. */
  maxDocumentsPerApp: 100_000,
  /** Files of one app, all buckets together, and their bytes together. */
  maxFilesPerApp: 10_000,
  maxFileBytesPerApp: 1024 * 1024 * 1024,
  /** A bucket's `maxFileSize` when it names none, and the most it may name. */
  defaultMaxFileSize: 5 * 1024 * 1024,
  maxFileSize: 25 * 1024 * 1024,
  /** Data requests one viewer (signed-in user, else address) may make to one app per minute. */
  requestsPerViewerPerMinute: 600,
  /** Live subscriptions (open event streams) one viewer may hold on one app instance. */
  subscriptionsPerViewer: 10,
  /** `list`: documents per page by default and at most. */
  defaultListLimit: 20,
  maxListLimit: 100,
  /** Conditions in one `where`. */
  maxWhereFields: 10,
  /** Characters of a file's name. */
  maxFileNameLength: 200,
} as const;

/** Collection and bucket names: how `hatch.db(name)` and `hatch.files(name)` are written. */
export const DATA_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const NAME_MESSAGE = "names start with a letter and hold at most 64 letters, digits, _ or -";

/** Top-level document fields a `where` or `orderBy` may name besides the document's own: kept by Hatch, never written by the app. */
export const DOCUMENT_META_FIELDS = ["id", "createdAt", "updatedAt", "createdBy"] as const;
/** A field a document may have at its top level (and that `where` / `orderBy` may name). */
export const DOCUMENT_FIELD = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export const DataRuleSchema = z.enum(DATA_RULES, { error: `a rule is one of ${DATA_RULES.join(", ")}` });
const RuleSchema = DataRuleSchema;
const NoCreatorRule = RuleSchema.refine((rule) => rule !== "creator", {
  error: "create cannot be creator (nobody has created anything yet): use anyone, signed_in, org or owner",
});

export const CollectionRulesSchema = z
  .object({
    read: RuleSchema.optional(),
    create: NoCreatorRule.optional(),
    update: RuleSchema.optional(),
    delete: RuleSchema.optional(),
  })
  .strict();
export type CollectionRules = z.infer<typeof CollectionRulesSchema>;

/** `maxFileSize`: bytes as a number, or a size like "5 MB" / "500 KB". */
const FileSizeSchema = z
  .union([
    z.number().int().positive(),
    z.string().regex(/^\s*\d+(\.\d+)?\s*(B|KB|MB)\s*$/i, {
      error: 'write a size like "5 MB" or "500 KB", or a number of bytes',
    }),
  ])
  .transform((value) => (typeof value === "number" ? value : parseSize(value)))
  .refine((bytes) => bytes <= DATA_LIMITS.maxFileSize, {
    error: `maxFileSize may be at most ${formatBytes(DATA_LIMITS.maxFileSize)}`,
  });

export const BucketRulesSchema = z
  .object({
    read: RuleSchema.optional(),
    create: NoCreatorRule.optional(),
    delete: RuleSchema.optional(),
    maxFileSize: FileSizeSchema.optional(),
  })
  .strict();
export type BucketRules = z.infer<typeof BucketRulesSchema>;

function namedMap<T extends z.ZodType>(item: T, max: number, what: string) {
  return z
    .record(z.string().regex(DATA_NAME, { error: `${what} ${NAME_MESSAGE}` }), item)
    .refine((map) => Object.keys(map).length <= max, { error: `at most ${max} ${what}s` });
}

export const CollectionsSchema = namedMap(CollectionRulesSchema, DATA_LIMITS.maxCollections, "collection");
export const BucketsSchema = namedMap(BucketRulesSchema, DATA_LIMITS.maxBuckets, "bucket");

/** Every operation named: what the app host enforces for a collection as written in service.json. */
export function collectionRules(written: CollectionRules): Record<CollectionOperation, DataRule> {
  return {
    read: written.read ?? DEFAULT_DATA_RULE,
    create: written.create ?? DEFAULT_DATA_RULE,
    update: written.update ?? DEFAULT_DATA_RULE,
    delete: written.delete ?? DEFAULT_DATA_RULE,
  };
}

export function bucketRules(written: BucketRules): Record<BucketOperation, DataRule> & { maxFileSize: number } {
  return {
    read: written.read ?? DEFAULT_DATA_RULE,
    create: written.create ?? DEFAULT_DATA_RULE,
    delete: written.delete ?? DEFAULT_DATA_RULE,
    maxFileSize: written.maxFileSize ?? DATA_LIMITS.defaultMaxFileSize,
  };
}

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

function parseSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB)\s*$/i.exec(text)!;
  return Math.floor(Number(match[1]) * UNITS[match[2]!.toLowerCase()]!);
}

/**
 * The error codes of the browser library and the app host's data routes (`{ error: { code, message } }`), each with
 * its HTTP status. A page reads `error.code`; the message says what a person can do.
 */
export const DATA_ERROR_STATUS = {
  forbidden: 403,
  not_found: 404,
  invalid: 400,
  too_large: 413,
  limit_exceeded: 429,
  /** The app owner's plan limit (storage) is reached: the owner upgrades at the link in the message. */
  needs_payment: 402,
  unavailable: 503,
} as const;
export type DataErrorCode = keyof typeof DATA_ERROR_STATUS;
