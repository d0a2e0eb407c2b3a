import type { ServiceName } from "./tools/define.ts";

/** Bus subjects, before the deployment prefix (architecture, "Bus conventions"). */
export const subjects = {
  tool: (service: ServiceName, tool: string) => `tools.${service}.${tool}`,
  rpc: (service: ServiceName, method: string) => `rpc.${service}.${method}`,
  /**
   * Published by a gateway that revoked a grant, so every gateway instance drops its cached copy. A broadcast, not an
   * event: under `events.` it landed in the EVENTS stream, where every event consumer found it unreadable.
   */
  grantRevoked: "broadcast.gateway.grant.revoked",
  /**
   * An app changed (publish, rollback, share, delete, pause): every apps instance drops its cached copy. Plain
   * publish-subscribe, no queue group (all instances must hear it) and not a JetStream event (a missed message
   * only lasts until the app host's short cache TTL).
   */
  appsCacheInvalidate: "broadcast.apps.cache.invalidate",
  /**
   * A Hatch browser session ended (sign-out, switching accounts) or a person's membership changed: every app host
   * drops its cached answer about that viewer (viewer-ticket.ts `ViewerChangedSchema`). Plain publish-subscribe
   * like the one above: one missed only lasts until the app host's 30 s cache runs out.
   */
  viewerChanged: "broadcast.gateway.viewer.changed",
  /**
   * A document of an app's collection was added, updated or removed: every app host passes it to its open
   * `subscribe` streams of that collection. Plain publish-subscribe: live updates are best effort, and a page that
   * missed one sees the change on its next list.
   */
  appsDataChanged: "broadcast.apps.data.changed",
  /**
   * A hostname started or stopped serving an app (a custom domain verified or disconnected, a company domain set or
   * removed): every app host drops its cached answer for it (internal-rpc.ts `HostChangedSchema`). Plain
   * publish-subscribe: one missed only lasts until the app host's short cache runs out.
   */
  domainsHostChanged: "broadcast.domains.host.changed",
} as const;

/** Internal methods, per service. */
export const rpcMethods = {
  orgs: {
    /** Resolves (and on first contact creates) the account a user acts as. */
    resolveSession: "session.resolve",
    /** Every account the signed-in person belongs to (the dashboard's account switcher). */
    sessionAccounts: "session.accounts",
    /** What an invitation link is for (no context: the token is the credential). */
    previewInvitation: "invitation.preview",
    /** The signed-in user accepts an invitation by its link's token. */
    acceptInvitation: "invitation.accept",
    /** The mails kept in the dev outbox addressed to the caller's email (signed ctx; only without SMTP). */
    mailOutbox: "mail.outbox",
    /** Mails the caller (signed ctx) the link that verifies their email; the gateway made the token. */
    sendVerificationMail: "mail.verify-email",
    /** Mails the user of the signed ctx the link that sets a new password; the gateway made the token. */
    sendPasswordResetMail: "mail.password-reset",
    /** An organization's members and open invitations (billing: a Team checkout's default seats). */
    seatsUsed: "seats.used",
    /** What deleting the signed ctx's own account would do, or why it cannot be deleted now (internal-rpc.ts). */
    accountDeletion: "account.deletion",
    /** Deleting the account: their apps in organizations move to each owner, every membership ends, then the person. */
    accountDelete: "account.delete",
  },
  billing: {
    /** What an account may do now (plan, state, limits): services check limits with it (cached briefly). */
    entitlements: "entitlements",
    /** A one-off charge (a domain), idempotent by key. */
    charge: "charge",
    /** Whether the account has a card on file, and where to add one (asked before a purchase's questions). */
    card: "card",
    /** A payment provider's event the gateway verified. */
    webhook: "webhook",
    /** The billing settings page (/dashboard/billing): plan, state, card, usage of the person's account. */
    settings: "settings",
    /** The provider page a settings button leads to (checkout or portal). */
    settingsLink: "settings.link",
    /** What the person did on the local provider's checkout or portal page (never a card number). */
    localAct: "local.act",
    /** The account's invoices and receipts from the provider, with their lines (/dashboard/billing). */
    receipts: "receipts",
    /** Gives back a one-off charge made with `charge` (a domain whose registration failed), idempotent by its key. */
    refund: "refund",
  },
  domains: {
    /** Which app a hostname outside the apps domain serves (a custom domain, a company domain's subdomain), for the app host. */
    resolveHost: "host.resolve",
    /** Where a bought domain or a custom hostname is on its way to live (signed ctx, the caller's account): MCP tasks. */
    progress: "domain.progress",
    /** How many custom domains an account's apps are on (billing's usage against the plan's limit; a count only). */
    customCount: "custom.count",
  },
  gateway: {
    /** Who a browser session is now, for the app host (see viewer-ticket.ts; the question is signed). */
    viewerCheck: "viewer.check",
  },
  apps: {
    /** The apps one person owns in an account (org_member_update shows them before a removal). */
    listOwned: "owned.list",
    /** The apps the signed ctx's own user owns in accounts only they belong to (the account deletion's list). */
    accountApps: "account.apps",
    /** Deleting the account: those apps (addresses stay reserved) and the person's own AI keys. */
    accountDelete: "account.delete",
    /** Moves every app one person owns in an account to another member, in one transaction. */
    moveOwned: "owned.move",
    /** The developer reference in Markdown (no context: it is public), for the gateway's /mcp/docs. */
    developerReference: "reference",
    /** Where an app is served, for the gateway's viewer sign-in (see viewer-ticket.ts). */
    viewerOrigin: "viewer.origin",
    /** What an account's apps store (documents and files, bytes): billing's storage usage. */
    storage: "storage",
    /** The dashboard's secret page: the app, the secret and the apis that use it (never its value). */
    secretPage: "secret.page",
    /** The dashboard's secret form: stores a value the person typed (the only way a value reaches Hatch). */
    secretSet: "secret.set",
    /** The dashboard's secret page: the person confirms the destinations a new version gave the secret's apis. */
    secretConfirm: "secret.confirm",
    /** The dashboard's AI key page: the scope, the providers Hatch knows, the keys that exist (never a key). */
    aiKeyPage: "ai-key.page",
    /** The dashboard's AI key form: stores a key the person typed. */
    aiKeySet: "ai-key.set",
    /** An app the caller (signed ctx) may manage, by address: domains checks it before putting the app on a hostname. */
    appLookup: "app.lookup",
    /** The dashboard's app page (signed ctx, the app's owner): people, versions, secrets; its actions are tool calls. */
    dashboardApp: "dashboard.app",
    /** The dashboard's page of one version (signed ctx, the app's owner): who published it, how, and its files. */
    dashboardVersion: "dashboard.version",
    /** The dashboard's logs page (signed ctx, the app's owner, as tool_logs): lines by level and text, and the tail. */
    dashboardLogs: "dashboard.logs",
    /** The dashboard's data page (signed ctx, owner or manager, as tool_data): a page of a collection's documents. */
    dashboardDocuments: "dashboard.documents",
    /** One document, whole. */
    dashboardDocument: "dashboard.document",
    /** Deletes one document (the owner's or a manager's decision, whatever the collection's rules). */
    dashboardDocumentDelete: "dashboard.document.delete",
    /** The dashboard's data page: a page of a bucket's files (signed ctx, owner or manager). */
    dashboardFiles: "dashboard.files",
    /** One file with its preview (an image, or the start of a text). */
    dashboardFile: "dashboard.file",
    /** Deletes one file (the owner's or a manager's decision, whatever the bucket's rules). */
    dashboardFileDelete: "dashboard.file.delete",
  },
} as const;
