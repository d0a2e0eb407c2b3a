import {
  checkReadiness,
  createRateCounter,
  LeasedRateCounter,
  leaseHotKeys,
  decodeJson,
  encodeJson,
  metricsResponse,
  type Bus,
  type BusSubscription,
  type Database,
  type Logger,
} from "@hatch/platform";
import { deriveKey, rpcMethods, subjects, VerificationMailSentSchema } from "@hatch/contracts";
import { Elysia, type AnyElysia } from "elysia";
import { createAuth, type Auth, type PublicUser } from "./auth/index.ts";
import type { GatewayConfig } from "./config.ts";
import { createConfirmations, type Confirmations } from "./confirm/index.ts";
import { checkHealth } from "./health.ts";
import { listenOptions } from "./listen.ts";
import { AccountSessions } from "./mcp/accounts.ts";
import { createMcpEndpoint, type McpEndpoint } from "./mcp/endpoint.ts";
import { callServiceRpc, retryOnceOnNoResponders, type ServiceClientDeps, websiteCaller } from "./services.ts";
import { dropSessionsOnOrgEvents } from "./mcp/session-events.ts";
import { aiKeyPages } from "./pages/ai-key-page.ts";
import { billingPages } from "./pages/billing-page.ts";
import { dashboardPages, notFoundPage } from "./pages/dashboard/index.ts";
import { noticeCookies } from "./pages/notice.ts";
import { invitePages } from "./pages/invite.ts";
import { outboxPage } from "./pages/outbox.ts";
import { secretPages } from "./pages/secret-page.ts";
import { stripeWebhookHandler } from "./pages/stripe-webhook.ts";
import { createAppSignIn } from "./pages/app-signin.ts";
import { appsReference, docsResponse } from "./pages/docs.ts";
import { renderInstallPage, rulesResponse } from "./pages/install.ts";
import { htmlResponse } from "./pages/layout.ts";
import { announceViewerChanged, answerViewerChecks } from "./viewer-check.ts";
import { websiteClaims } from "./website-claims.ts";

export const GATEWAY_VERSION = "0.1.0";
const SWEEP_EVERY_MS = 10 * 60_000;

export const GATEWAY_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

export interface GatewayOptions {
  config: GatewayConfig;
  bus: Bus;
  db: Database;
  logger: Logger;
  /** Injected in tests that serve Client ID Metadata Documents locally. */
  fetchClientMetadata?: typeof fetch;
}

export interface Gateway {
  app: AnyElysia;
  auth: Auth;
  mcp: McpEndpoint;
  accounts: AccountSessions;
  /** Questions kept for the dashboard confirm page (`/confirm/:id`). */
  confirmations: Confirmations;
  /** The housekeeping the gateway runs every 10 minutes: expired auth rows and confirmations. */
  sweep(): Promise<void>;
  /** Serves HTTP with the gateway's connection settings (listen.ts); returns Bun's server. */
  listen(where: { port: number; hostname: string }): ReturnType<typeof Bun.serve>;
  /** From now on `/readyz` answers 503 (a SIGTERM came): load balancers stop sending requests here. */
  beginDrain(): void;
  close(): Promise<void>;
}

/** The gateway's HTTP surface: OAuth and pages, `/mcp`, the install and rules pages, `/healthz`. */
export function createGateway(options: GatewayOptions): Gateway {
  const { config, bus, logger } = options;
  const contextKey = deriveKey(config.secret, "ctx");
  // Account lookups (orgs session.resolve) are sent once more on "no responders", as service calls are (services.ts).
  const accounts = new AccountSessions(retryOnceOnNoResponders(bus), contextKey);
  /** How every part of the gateway reaches a service (services.ts). */
  const services: ServiceClientDeps = { bus, contextKey, accounts };
  // Tool call limits and sign-in throttles count here: shared by every gateway copy on NATS, in memory in dev.
  const rateCounter = createRateCounter(bus, undefined, undefined, logger);
  /** Set on SIGTERM (beginDrain): /readyz answers 503 from then on. */
  let draining = false;
  /** A mail about the person's own sign-in: the context names the person only (no account to resolve). */
  const signInMail =
    (method: string) =>
    async (user: PublicUser, token: string): Promise<"smtp" | "outbox"> =>
      (
        await callServiceRpc(
          services,
          "orgs",
          method,
          { token },
          VerificationMailSentSchema,
          websiteCaller(user, { scope: "write", client: "Hatch website" }),
          { account: false },
        )
      ).delivery;
  const auth = createAuth({
    rateCounter,
    config,
    db: options.db,
    logger,
    fetchClientMetadata: options.fetchClientMetadata,
    // The personal account exists from sign-up on, so whoami never races its creation.
    onUserCreated: async (user) => {
      await accounts
        .resolve(websiteClaims(user, { scope: "read", client: "signup", grant: "signup", rid: "signup" }), {
          requestId: `signup-${user.id}`,
          traceparent: "",
        })
        .catch((error: unknown) => logger.warn("account not created at sign-up; it will be on first use", { error }));
    },
    sendVerificationMail: signInMail(rpcMethods.orgs.sendVerificationMail),
    sendPasswordResetMail: signInMail(rpcMethods.orgs.sendPasswordResetMail),
    onGrantRevoked: (grantId) => bus.publish(subjects.grantRevoked, encodeJson({ grantId })),
    // Sign-out ends every app session of that browser: app hosts drop their cached answer before the page answers.
    onSessionEnded: (session) => announceViewerChanged(bus, logger, { session }, true),
    onUserChanged: (sub) => announceViewerChanged(bus, logger, { sub }, true),
  });
  const confirmations = createConfirmations({
    db: options.db,
    bus,
    baseUrl: config.baseUrl,
    auth,
    calls: services,
    logger,
  });
  // Every tool call counts against its grant and its user: hot keys, leased from the shared count so a call does not
  // wait on NATS (shared/platform/src/rate/leased.ts says how no count is lost across copies and the limit still holds).
  const toolCallCounter = leaseHotKeys(rateCounter, (error) => logger.warn("tool call rate lease failed", { error }));
  const toolCallLimits = {
    counter: toolCallCounter,
    perGrant: config.toolCallsPerMinutePerGrant,
    perUser: config.toolCallsPerMinutePerUser,
  };
  const mcp = createMcpEndpoint({
    config,
    auth,
    bus,
    contextKey,
    accounts,
    confirmations,
    logger,
    version: GATEWAY_VERSION,
    toolCallLimits,
  });
  const appSignIn = createAppSignIn({ config, auth, bus, contextKey, accounts, db: options.db, logger });
  // /mcp/docs: apps' text, kept a few minutes per topic (a cache only: any copy asks apps when it has none).
  const referenceCache = appsReference(bus, logger);
  const reference = (topic: Parameters<typeof referenceCache.get>[0]) => referenceCache.get(topic);
  const stripeWebhook = stripeWebhookHandler({ secret: config.stripeWebhookSecret, bus, logger });

  // Another gateway instance revoked a grant: forget any cached copy here too.
  const revoked: BusSubscription = bus.subscribe(subjects.grantRevoked, (msg) => {
    const { grantId } = decodeJson(msg.data) as { grantId?: unknown };
    if (typeof grantId === "string") auth.forgetGrant(grantId);
  });

  // Orgs events about members and organizations: drop those people's cached sessions at once (and tell app hosts).
  const sessionEvents = dropSessionsOnOrgEvents(bus, accounts, logger);
  // App hosts ask who an app viewer's browser session is now (signed questions only).
  const viewerChecks = answerViewerChecks({
    bus,
    db: options.db,
    accounts,
    viewerKey: deriveKey(config.secret, "viewer-ticket"),
    logger,
  });

  // The one-time words a dashboard page shows after a form that worked (pages/notice.ts).
  const notices = noticeCookies(deriveKey(config.secret, "dashboard-notice"), config.secureCookies);

  const sweep = async () => {
    const removed = await auth.sweepExpired();
    const confirmationsRemoved = await confirmations.sweep();
    logger.debug("expired rows removed", { ...removed, confirmations: confirmationsRemoved });
  };
  const sweeping = setInterval(() => {
    sweep().catch((error: unknown) => logger.warn("sweeping expired rows failed", { error }));
  }, SWEEP_EVERY_MS);
  sweeping.unref();

  const app = new Elysia()
    // A path nothing serves: a styled page with a way back (signed in: to the dashboard).
    .onError(async ({ code, request }) => {
      if (code !== "NOT_FOUND") return;
      const state = await auth.pages.state(request).catch(() => null);
      return notFoundPage(state);
    })
    .use(auth.routes)
    .use(confirmations.routes)
    .use(invitePages({ auth, bus, contextKey, accounts, logger }))
    .use(secretPages({ auth, bus, contextKey, accounts, logger, notices }))
    .use(aiKeyPages({ auth, bus, contextKey, accounts, logger, notices }))
    .use(billingPages({ auth, bus, contextKey, accounts, logger }))
    .use(
      dashboardPages({
        auth,
        bus,
        contextKey,
        accounts,
        logger,
        baseUrl: config.baseUrl,
        notices,
        db: options.db,
      }),
    )
    .use(outboxPage({ auth, bus, contextKey, accounts, logger, baseUrl: config.baseUrl, enabled: config.devPages }))
    // Prometheus: with METRICS_TOKEN, for that bearer only; without it, only in `bun run dev` (SECURITY.md).
    .get("/metrics", ({ request }) =>
      config.metricsToken || config.devPages
        ? metricsResponse(request, config.metricsToken ?? undefined, logger)
        : new Response(
            "Metrics are off: set METRICS_TOKEN and scrape /metrics with Authorization: Bearer <METRICS_TOKEN>.\n",
            { status: 404 },
          ),
    )
    // Probes: /livez says the process answers (restart it if not); /readyz says it should get requests (not while it
    // drains, nor while its NATS or database is away). /healthz asks every service too (a person's view).
    .get("/livez", () => new Response("ok\n", { headers: { "content-type": "text/plain; charset=utf-8" } }))
    .get("/readyz", async ({ set }) => {
      const readiness = await checkReadiness(bus, options.db, draining);
      set.status = readiness.ready ? 200 : 503;
      return readiness;
    })
    .get("/healthz", async ({ set }) => {
      const report = await checkHealth(bus, GATEWAY_VERSION);
      set.status = report.status === "ok" ? 200 : 503;
      return report;
    })
    // Raw body: Stripe signs the exact bytes it sent.
    .post("/webhooks/stripe", ({ request }) => stripeWebhook(request), { parse: "none" })
    .get("/apps/signin", ({ request }) => appSignIn.show(request))
    .post("/apps/signin/switch", ({ request }) => appSignIn.switchAccount(request), { parse: "none" })
    .post("/apps/signin/consent", ({ request }) => appSignIn.consent(request), { parse: "none" })
    .get("/mcp/docs", ({ request }) => docsResponse(request, false, reference))
    .get("/mcp/docs.md", ({ request }) => docsResponse(request, true, reference))
    .get("/mcp/rules", ({ query }) => rulesResponse(typeof query.for === "string" ? query.for : null))
    .all(
      "/mcp",
      ({ request }) => {
        const wantsPage =
          request.method === "GET" &&
          !request.headers.get("mcp-session-id") &&
          (request.headers.get("accept") ?? "").includes("text/html");
        return wantsPage
          ? htmlResponse(renderInstallPage(config.mcpUrl, new URL(request.url).searchParams))
          : mcp.handle(request);
      },
      { parse: "none" },
    );

  return {
    app,
    auth,
    mcp,
    accounts,
    confirmations,
    sweep,
    listen(where) {
      app.listen(listenOptions(config, where));
      return app.server!;
    },
    beginDrain() {
      draining = true;
    },
    async close() {
      draining = true;
      clearInterval(sweeping);
      revoked.unsubscribe();
      confirmations.outcomes.close();
      // Drained: a viewer check routed here before is still answered.
      await viewerChecks.drain();
      for (const sub of sessionEvents) sub.unsubscribe();
      await mcp.close();
      // Unspent leases go back to the shared count before the bus is drained.
      if (toolCallCounter instanceof LeasedRateCounter) await toolCallCounter.flush().catch(() => undefined);
      toolCallCounter.close();
      rateCounter.close();
    },
  };
}
