import { z } from "zod";
import {
  AI_PROVIDER_NAME,
  ApiPlacementSchema,
  SECRET_VALUE_MAX_CHARS,
  SECRET_VALUE_MIN_CHARS,
  SecretNameSchema,
} from "./apps/secrets.ts";
import { DOCS_TOPICS } from "./tools/apps.ts";
import { AI_KEY_SCOPES, ORG_ROLES, VisibilitySchema } from "./tools/common.ts";

// Shapes of the internal rpc methods between services and the gateway (`rpcMethods` names them). Both ends
// import them from here, so neither imports the other.

/** apps `owned.list`: the apps `userId` owns in `accountId`. The caller's ctx must be a manager of that account. */
export const OwnedAppsListInputSchema = z.object({ accountId: z.string().min(1), userId: z.string().min(1) });
export const OwnedAppSchema = z.object({ address: z.string(), name: z.string() });
/**
 * An app whose AI calls a person's own key (tool_ai `mine`) stopped paying for, in the change that answers it: its
 * owner changed to someone else than that person (`moved`), or that person left the account. `now`: who pays now, the
 * organization's key when it has one, else nobody (AI calls are refused). `owner`: who owns it after the change.
 */
export const AiResetSchema = z.object({
  address: z.string(),
  name: z.string(),
  owner: z.object({ email: z.string(), name: z.string() }),
  moved: z.boolean(),
  now: z.enum(["company", "none"]),
});
export type AiReset = z.infer<typeof AiResetSchema>;
export const OwnedAppsSchema = z.object({
  apps: z.array(OwnedAppSchema),
  /** owned.move only: the apps whose `mine` choice it reset (absent from an apps service that predates it). */
  aiReset: z.array(AiResetSchema).optional(),
});
export type OwnedApps = z.infer<typeof OwnedAppsSchema>;

/**
 * apps `owned.move`, when `fromUserId` leaves `accountId`: every app they own there goes to `to` (a member, as orgs
 * vouches), and their own AI key stops paying for any app of the account (the reply's `aiReset`).
 */
export const OwnedAppsMoveInputSchema = z.object({
  accountId: z.string().min(1),
  fromUserId: z.string().min(1),
  to: z.object({ userId: z.string().min(1), email: z.string().min(1), name: z.string() }),
});

/** orgs `invitation.preview`: what the page behind an invitation link shows. */
export const InvitationTokenInputSchema = z.object({ token: z.string().min(16).max(128) });
export const InvitationPreviewSchema = z.object({
  status: z.enum(["pending", "expired", "revoked", "accepted"]),
  orgName: z.string(),
  email: z.string(),
  role: z.enum(ORG_ROLES),
  invitedBy: z.object({ name: z.string(), email: z.string() }),
  expiresAt: z.string(),
});
export type InvitationPreview = z.infer<typeof InvitationPreviewSchema>;

/**
 * orgs `invitation.accept` (signed ctx of the browser's user): the organization joined, and the email the
 * invitation went to (when it is the user's own, the link proved the address: the gateway marks it verified).
 */
export const InvitationAcceptedSchema = z.object({
  orgId: z.string(),
  orgName: z.string(),
  role: z.enum(ORG_ROLES),
  email: z.string().optional(),
});
export type InvitationAccepted = z.infer<typeof InvitationAcceptedSchema>;

/** orgs `mail.outbox` (signed ctx): the latest mails to the caller's email kept for the dev outbox page. */
export const MailOutboxSchema = z.object({
  enabled: z.boolean(),
  mails: z.array(
    z.object({ id: z.string(), to: z.string(), subject: z.string(), body: z.string(), createdAt: z.string() }),
  ),
});
export type MailOutbox = z.infer<typeof MailOutboxSchema>;

/**
 * orgs `mail.verify-email` (signed ctx of the user): mails `${BASE_URL}/verify-email?token=<token>` to the
 * ctx's email. The gateway signs the token; orgs only delivers it, and only to the caller's own address.
 * orgs `mail.password-reset` takes the same input and mails `${BASE_URL}/reset-password?token=<token>` likewise.
 */
export const VerificationMailInputSchema = z.object({
  token: z
    .string()
    .min(16)
    .max(2048)
    .regex(/^[A-Za-z0-9_.-]+$/),
});
export const VerificationMailSentSchema = z.object({ delivery: z.enum(["smtp", "outbox"]) });
export type VerificationMailSent = z.infer<typeof VerificationMailSentSchema>;

// The dashboard pages where a person types a secret value or an AI key (gateway) and the apps service that keeps
// them. Every call carries the signed ctx of the browser's user; apps checks who may, as for the tools. A value or
// key travels in `secret.set` / `ai-key.set` only, and no answer ever carries one back.

const AddressSchema = z.string().min(1).max(63);

/** Where a secret goes: an API's base url and its place in the request. */
export const SecretDestinationSchema = z.object({ url: z.string(), in: ApiPlacementSchema });

/** apps `secret.page`: what the page shows about one secret of one app. */
export const SecretPageInputSchema = z.object({ address: AddressSchema, name: SecretNameSchema });
export const SecretPageSchema = z.object({
  address: z.string(),
  appName: z.string(),
  name: z.string(),
  /** The apis in the current version's service.json that use this secret: base url, placement, and whether the value may go there. */
  apis: z.array(
    z.object({
      name: z.string(),
      url: z.string(),
      in: ApiPlacementSchema,
      /** The destination was shown when the value was saved or confirmed; false: nothing is sent to this api. */
      confirmed: z.boolean(),
      /** Where this api sent the secret when it was last confirmed; null when it never did. */
      was: SecretDestinationSchema.nullable(),
    }),
  ),
  /** A digest of the destinations above; the form sends it back, so a publish after the page was opened is noticed. */
  shown: z.string(),
  isSet: z.boolean(),
  updatedAt: z.string().nullable(),
  updatedBy: z.string().nullable(),
});
export type SecretPage = z.infer<typeof SecretPageSchema>;

const ShownSchema = z.string().min(1).max(128);

/**
 * apps `secret.set`: stores (or replaces) the value, bound to the destinations the page showed (`shown`); the answer is
 * the page's summary again, without it.
 */
export const SecretSetInputSchema = SecretPageInputSchema.extend({
  value: z.string().min(SECRET_VALUE_MIN_CHARS).max(SECRET_VALUE_MAX_CHARS),
  shown: ShownSchema,
});

/** apps `secret.confirm`: binds the value already set to the destinations the page showed (`shown`). */
export const SecretConfirmInputSchema = SecretPageInputSchema.extend({ shown: ShownSchema });

export const AiKeyTargetSchema = z.object({
  scope: z.enum(AI_KEY_SCOPES),
  /** The app, for scope tool. */
  address: AddressSchema.optional(),
});

/** apps `ai-key.page`: what the AI key page shows for one scope. */
export const AiKeyPageSchema = z.object({
  scope: z.enum(AI_KEY_SCOPES),
  address: z.string().nullable(),
  /** Who pays: the person's name, the organization's name, or the app's name. */
  owner: z.string(),
  providers: z.array(z.object({ name: z.string(), url: z.string() })),
  keys: z.array(z.object({ provider: z.string(), addedAt: z.string(), addedBy: z.string() })),
});
export type AiKeyPage = z.infer<typeof AiKeyPageSchema>;

/** apps `ai-key.set`: stores (or replaces) the key of one provider in one scope. */
export const AiKeySetInputSchema = AiKeyTargetSchema.extend({
  provider: z.string().regex(AI_PROVIDER_NAME),
  key: z.string().min(8).max(512),
});

/**
 * apps `reference` (no context: the text is public): the developer reference in Markdown, the same text `service_docs`
 * gives, naming app addresses under this deployment's apps domain. The gateway serves it at /mcp/docs.
 */
export const DeveloperReferenceInputSchema = z.object({ topic: z.enum(DOCS_TOPICS) });
export const DeveloperReferenceSchema = z.object({ markdown: z.string() });
export type DeveloperReference = z.infer<typeof DeveloperReferenceSchema>;

// Domains and the app host. The app host serves a hostname outside its apps domain only when domains says which app
// it is; domains puts an app on a hostname only when apps says the caller may manage that app.

/** apps `app.lookup` (signed ctx): the app at `address` if the caller may manage it (owner, or a manager of its organization); else not_found. */
export const AppLookupInputSchema = z.object({ address: z.string().min(1).max(300) });
export const AppLookupSchema = z.object({
  appId: z.string(),
  address: z.string(),
  name: z.string(),
  accountId: z.string(),
  ownerId: z.string(),
  /** The app's default URL, `<protocol>//<address>.<apps domain>`. */
  url: z.string(),
});
export type AppLookup = z.infer<typeof AppLookupSchema>;

/** domains `host.resolve` (no ctx: the hostname is public): which app a hostname serves, if any. */
export const HostResolveInputSchema = z.object({ hostname: z.string().min(1).max(253) });
export const HostResolvedSchema = z.object({
  /** The app's address, or null when the hostname serves nothing (unknown, not verified yet). */
  address: z.string().nullable(),
  /** The account the app must belong to (a company domain serves only that company's apps). */
  accountId: z.string().nullable(),
});
export type HostResolved = z.infer<typeof HostResolvedSchema>;

/**
 * domains `domain.progress` (signed ctx): where a bought domain (`bought`) or an app's custom hostname (`custom`) of the
 * caller's account is on its way to live, from the domains service's own stage data. not_found when it is not (or no
 * longer) the account's. The gateway follows buy_domain and custom_domain as MCP tasks with it.
 */
export const DomainProgressInputSchema = z.object({
  kind: z.enum(["bought", "custom"]),
  name: z.string().min(1).max(253),
});
export const DomainProgressSchema = z.object({
  name: z.string(),
  /** working: on its way (see stage); live: serving; failed: it will not get there (a registration that failed). */
  state: z.enum(["working", "live", "failed"]),
  stage: z.string(),
  /** Where it is and what happens next, in plain words (the records to add while DNS is awaited). */
  text: z.string(),
  /** The app it serves, when it serves one. */
  address: z.string().nullable(),
  updatedAt: z.string(),
  /** The tool's own structured answer as of now (buy_domain's or custom_domain's output). */
  data: z.record(z.string(), z.unknown()),
});
export type DomainProgress = z.infer<typeof DomainProgressSchema>;

/** The body of `broadcast.domains.host.changed`. */
export const HostChangedSchema = z.object({ hostname: z.string() });

// The dashboard's page of one app (gateway /dashboard/apps/<address>). Its actions are tool calls; this is the read
// that no tool answers without changing something (the people an app is shared with, its versions, its secrets).

/** apps `dashboard.app` (signed ctx): the app at `address` if the caller owns it; anyone else's reads as not_found. */
export const DashboardAppInputSchema = z.object({ address: AddressSchema });
export const DashboardAppSchema = z.object({
  address: z.string(),
  name: z.string(),
  url: z.string(),
  visibility: VisibilitySchema,
  aiDiscoverable: z.boolean(),
  paused: z.boolean(),
  /** Lower-cased emails, sorted. */
  people: z.array(z.string()),
  currentVersion: z.number().int().nullable(),
  /** ISO 8601: the last publish or rollback. */
  updatedAt: z.string(),
  /** Newest first. */
  versions: z.array(
    z.object({
      version: z.number().int(),
      current: z.boolean(),
      publishedAt: z.string(),
      publishedBy: z.string(),
      /** The client it was published from (an AI client's name, or the dashboard); null when not recorded. */
      publishedVia: z.object({ kind: z.string(), name: z.string() }).nullable().optional(),
      fileCount: z.number().int(),
    }),
  ),
  /** Secret names the current version's APIs use or that have a value, sorted, each with whether a value is set. */
  secrets: z.array(z.object({ name: z.string(), isSet: z.boolean() })),
});
export type DashboardApp = z.infer<typeof DashboardAppSchema>;

/** apps `dashboard.version` (signed ctx, who may manage the app): one version and its files (paths, never contents). */
export const DASHBOARD_VERSION_FILES_MAX = 500;
export const DashboardVersionInputSchema = z.object({ address: AddressSchema, version: z.number().int().min(1) });
export const DashboardVersionSchema = z.object({
  address: z.string(),
  name: z.string(),
  version: z.number().int(),
  current: z.boolean(),
  publishedAt: z.string(),
  publishedBy: z.string(),
  publishedVia: z.object({ kind: z.string(), name: z.string() }).nullable(),
  fileCount: z.number().int(),
  totalBytes: z.number().int(),
  /** Sorted by path; at most DASHBOARD_VERSION_FILES_MAX (fileCount says how many there are). */
  files: z.array(z.object({ path: z.string(), size: z.number().int(), contentType: z.string() })),
  /** A non-current version's preview on its own origin (the app host serves it to the owner only). */
  previewUrl: z.string().optional(),
});
export type DashboardVersion = z.infer<typeof DashboardVersionSchema>;

/**
 * orgs `seats.used` (no context: a count, nothing secret): the seats an organization uses now, its members and open
 * invitations, as the seats limit counts them. Billing asks it for a Team checkout's default seats.
 */
export const SeatsUsedInputSchema = z.object({ accountId: z.string().min(1) });
export const SeatsUsedSchema = z.object({ members: z.number().int().min(0), invitations: z.number().int().min(0) });
export type SeatsUsed = z.infer<typeof SeatsUsedSchema>;

// The dashboard's logs and data pages (gateway /dashboard/apps/<address>/logs and /data). Reads the tools do not give
// (paging, search, one document, a file's bytes) and the deletes of one document or file. Each checks in the service
// who may: the logs as tool_logs (the owner only), the data as tool_data (the owner and the organization's managers).

const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** apps `dashboard.logs` (signed ctx, the app's owner): a page of log lines, or the lines after `after` (the live tail). */
export const DashboardLogsInputSchema = z.object({
  address: AddressSchema,
  /** This level or more severe. */
  level: z.enum(LOG_LEVELS).optional(),
  /** Lines whose text contains this (any case). */
  search: z.string().max(200).optional(),
  /** Uncaught errors only (the app host's word about a request that threw). */
  uncaught: z.boolean().optional(),
  /** The newest lines older than this line id (paging back). */
  before: z.number().int().positive().optional(),
  /** Lines newer than this line id, oldest first (the live tail). */
  after: z.number().int().min(0).optional(),
  limit: z.number().int().min(1).max(200).default(100),
});
export const DashboardLogsSchema = z.object({
  address: z.string(),
  /** Oldest first. */
  lines: z.array(z.object({ id: z.number().int(), time: z.string(), level: z.enum(LOG_LEVELS), message: z.string() })),
  /** Older matching lines exist (page back with `before` = the first line's id). */
  more: z.boolean(),
  /** The newest line id of the app (any level): a tail started now continues after it. */
  newest: z.number().int(),
});
export type DashboardLogs = z.infer<typeof DashboardLogsSchema>;

const CollectionNameSchema = z.string().min(1).max(64);
const DocumentIdSchema = z.string().min(1).max(64);

/** apps `dashboard.documents` (signed ctx, owner or manager): a page of a collection's documents, newest first. */
export const DashboardDocumentsInputSchema = z.object({
  address: AddressSchema,
  collection: CollectionNameSchema,
  /** The previous page's `next`. */
  after: z.string().max(1000).optional(),
  limit: z.number().int().min(1).max(100).default(25),
});
export const DashboardDocumentSchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** Email of the signed-in viewer who added it; null when added without signing in. */
  createdBy: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
});
export type DashboardDocument = z.infer<typeof DashboardDocumentSchema>;
export const DashboardDocumentsSchema = z.object({
  address: z.string(),
  collection: z.string(),
  documents: z.array(DashboardDocumentSchema),
  /** The cursor of the next page; null on the last. */
  next: z.string().nullable(),
});
export type DashboardDocuments = z.infer<typeof DashboardDocumentsSchema>;

/** apps `dashboard.document` and `dashboard.document.delete` (signed ctx, owner or manager). */
export const DashboardDocumentInputSchema = z.object({
  address: AddressSchema,
  collection: CollectionNameSchema,
  id: DocumentIdSchema,
});
export const DashboardDocumentAnswerSchema = z.object({
  address: z.string(),
  collection: z.string(),
  document: DashboardDocumentSchema,
});
export const DashboardDocumentDeletedSchema = z.object({
  address: z.string(),
  collection: z.string(),
  id: z.string(),
});

const BucketNameSchema = z.string().min(1).max(64);
export const DashboardFileSchema = z.object({
  id: z.string(),
  name: z.string(),
  contentType: z.string(),
  size: z.number().int(),
  createdAt: z.string(),
  /** Email of the signed-in viewer who uploaded it; null when uploaded without signing in. */
  createdBy: z.string().nullable(),
});
export type DashboardFile = z.infer<typeof DashboardFileSchema>;

/** apps `dashboard.files` (signed ctx, owner or manager, as tool_data): a page of a bucket's files, newest first. */
export const DashboardFilesInputSchema = z.object({
  address: AddressSchema,
  bucket: BucketNameSchema,
  after: z.string().max(1000).optional(),
  limit: z.number().int().min(1).max(100).default(25),
});
export const DashboardFilesSchema = z.object({
  address: z.string(),
  bucket: z.string(),
  files: z.array(DashboardFileSchema),
  next: z.string().nullable(),
});
export type DashboardFiles = z.infer<typeof DashboardFilesSchema>;

/** apps `dashboard.file` and `dashboard.file.delete` (signed ctx, owner or manager). */
export const DashboardFileInputSchema = z.object({
  address: AddressSchema,
  bucket: BucketNameSchema,
  id: DocumentIdSchema,
});
/**
 * One file with its preview: an image (PNG, JPEG, GIF, WebP) up to 512 KB as base64, or the start of a text file as
 * text; none for anything else.
 */
export const DashboardFileAnswerSchema = z.object({
  address: z.string(),
  bucket: z.string(),
  file: DashboardFileSchema,
  preview: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("image"), base64: z.string() }),
    z.object({ kind: z.literal("text"), text: z.string(), cut: z.boolean() }),
    z.object({ kind: z.literal("none") }),
  ]),
});
export type DashboardFileAnswer = z.infer<typeof DashboardFileAnswerSchema>;
export const DashboardFileDeletedSchema = z.object({ address: z.string(), bucket: z.string(), id: z.string() });

/**
 * Deleting an account (the gateway's /dashboard/settings/delete). Every method takes the user being deleted and refuses
 * unless the signed ctx is that very user. orgs `account.deletion` says what would happen (or why not);
 * apps `account.delete` deletes their apps in `accountIds` (the accounts only they belong to) and their own AI keys;
 * orgs `account.delete` moves their apps in organizations to each owner and ends every membership. Each is idempotent.
 */
export const AccountDeletionInputSchema = z.object({ userId: z.string().min(1) });
export const AccountDeletionPlanSchema = z.object({
  /** Why the account cannot be deleted now (in words for a person, with the link), or null. */
  refusal: z.string().nullable(),
  /** Accounts whose only member is this person (their personal account, an organization nobody else joined). */
  soloAccounts: z.array(z.object({ id: z.string(), name: z.string(), kind: z.enum(["personal", "company"]) })),
  /** Organizations they belong to with others: their apps there move to `owner`. */
  memberships: z.array(
    z.object({ accountId: z.string(), name: z.string(), role: z.enum(ORG_ROLES), ownerEmail: z.string() }),
  ),
});
export type AccountDeletionPlan = z.infer<typeof AccountDeletionPlanSchema>;
export const AccountAppsDeleteInputSchema = z.object({
  userId: z.string().min(1),
  accountIds: z.array(z.string().min(1)).max(100),
});
/** apps `account.delete`/`account.apps`: the addresses of the apps deleted (or that would be), kept reserved. */
export const AccountAppsSchema = z.object({ apps: z.array(OwnedAppSchema) });
export type AccountApps = z.infer<typeof AccountAppsSchema>;
/** orgs `account.delete`: the organizations left, with the apps that moved to each owner. */
export const AccountLeftSchema = z.object({
  left: z.array(z.object({ name: z.string(), ownerEmail: z.string(), apps: z.array(OwnedAppSchema) })),
});
