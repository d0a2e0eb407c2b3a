import {
  createOutboxRelay,
  EntitlementsCache,
  eventStreamFor,
  startService,
  type RunningService,
  type ServiceDeps,
} from "@hatch/platform";
import { rpcMethods, TOOL_CONTRACTS } from "@hatch/contracts";
import { checkDiskStore } from "./blobs/check.ts";
import { createBlobStore } from "./blobs/index.ts";
import { appsRootOrigin, loadAppsConfig } from "./config.ts";
import { appsKeys, appsRateCounter, createSealer, type AppsContext } from "./context.ts";
import { outbox } from "./db/schema.ts";
import { resolveAppRef } from "./apps-repo.ts";
import { listenAppHost, startAppHost, type AppHost, type AppHostOptions } from "./host/server.ts";
import { AppLogWriter } from "./app-logs.ts";
import { receiveUpload } from "./publish/uploads.ts";
import { aiKeyPageRpc, aiKeySetRpc } from "./rpc/ai-key-page.ts";
import { appLookupRpc } from "./rpc/app-lookup.ts";
import { listOwnedRpc, moveOwnedRpc } from "./rpc/owned-apps.ts";
import { accountAppsRpc, accountDeleteRpc } from "./rpc/account-delete.ts";
import { dashboardAppRpc } from "./rpc/dashboard-app.ts";
import { developerReferenceRpc } from "./rpc/developer-reference.ts";
import { dashboardVersionRpc } from "./rpc/dashboard-version.ts";
import {
  dashboardDocumentDeleteRpc,
  dashboardDocumentRpc,
  dashboardDocumentsRpc,
  dashboardFileDeleteRpc,
  dashboardFileRpc,
  dashboardFilesRpc,
  dashboardLogsRpc,
} from "./rpc/dashboard-data.ts";
import { secretConfirmRpc, secretPageRpc, secretSetRpc } from "./rpc/secret-page.ts";
import { viewerOriginRpc } from "./rpc/viewer-origin.ts";
import { accountStorageRpc } from "./rpc/account-storage.ts";
import { resealStaleRows } from "./secrets/rotate.ts";
import { startSweeper } from "./sweep.ts";
import { appsTools } from "./tools/index.ts";

export const APPS_VERSION = "0.2.0";
export const APPS_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** The running apps service; `context` and `host` let the launcher's tests seed apps and flush the stats. */
export interface AppsService extends RunningService {
  readonly context: AppsContext;
  readonly host: AppHost;
}

/** Answers the apps tools on the bus and runs the app host. */
export async function startAppsService(deps: ServiceDeps, hostOptions: AppHostOptions = {}): Promise<AppsService> {
  const loaded = loadAppsConfig(deps.env);
  const keys = appsKeys(deps.secret);
  const entitlements = new EntitlementsCache(deps.bus, deps.logger);
  const store = createBlobStore(loaded);
  // Before the host listens: a copy whose disk lacks the published files would answer every app with 503.
  await checkDiskStore(deps.db, store, loaded.blobDir);
  // The socket first: with APP_PORT 0 (tests) app origins use the port the host really got, so the context is made
  // once, complete, and nothing changes it after start.
  const listener = listenAppHost(loaded);
  const config =
    !deps.env.APPS_DOMAIN && loaded.appPort !== listener.port
      ? { ...loaded, appsDomain: `localhost:${listener.port}` }
      : loaded;
  const outboxRelay = createOutboxRelay({
    db: deps.db,
    table: outbox,
    stream: eventStreamFor(deps.bus),
    logger: deps.logger,
  });
  const ctx: AppsContext = {
    db: deps.db,
    config,
    blobs: store,
    keys,
    sealer: createSealer(config, deps.secret),
    entitlements,
    logger: deps.logger,
    bus: deps.bus,
    outbox: outboxRelay,
    rate: appsRateCounter(deps.bus, deps.logger),
    appLogs: new AppLogWriter(deps.db, deps.logger.child({ component: "server-code" })),
  };
  const host = startAppHost(ctx, {
    listener,
    uploads: (request, token, path) => receiveUpload(ctx, request, token, path),
    ...hostOptions,
  });
  const service = await startService({
    name: "apps",
    version: APPS_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    confirmKey: keys.confirm,
    contracts: TOOL_CONTRACTS,
    tools: appsTools(ctx),
    // An app given by URL or name becomes its address before the tool (and a confirmation) sees the input.
    prepareInput: async (_contract, input, callCtx) => {
      if (!input || typeof input !== "object" || typeof (input as { address?: unknown }).address !== "string")
        return input;
      return { ...input, address: await resolveAppRef(ctx.db, callCtx, (input as { address: string }).address) };
    },
    rpc: {
      [rpcMethods.apps.developerReference]: developerReferenceRpc(ctx),
      [rpcMethods.apps.viewerOrigin]: viewerOriginRpc(ctx),
      [rpcMethods.apps.storage]: accountStorageRpc(ctx),
      [rpcMethods.apps.listOwned]: listOwnedRpc(ctx),
      [rpcMethods.apps.moveOwned]: moveOwnedRpc(ctx),
      [rpcMethods.apps.accountApps]: accountAppsRpc(ctx),
      [rpcMethods.apps.accountDelete]: accountDeleteRpc(ctx),
      [rpcMethods.apps.secretPage]: secretPageRpc(ctx),
      [rpcMethods.apps.secretSet]: secretSetRpc(ctx),
      [rpcMethods.apps.secretConfirm]: secretConfirmRpc(ctx),
      [rpcMethods.apps.aiKeyPage]: aiKeyPageRpc(ctx),
      [rpcMethods.apps.aiKeySet]: aiKeySetRpc(ctx),
      [rpcMethods.apps.appLookup]: appLookupRpc(ctx),
      [rpcMethods.apps.dashboardApp]: dashboardAppRpc(ctx),
      [rpcMethods.apps.dashboardVersion]: dashboardVersionRpc(ctx),
      [rpcMethods.apps.dashboardLogs]: dashboardLogsRpc(ctx),
      [rpcMethods.apps.dashboardDocuments]: dashboardDocumentsRpc(ctx),
      [rpcMethods.apps.dashboardDocument]: dashboardDocumentRpc(ctx),
      [rpcMethods.apps.dashboardDocumentDelete]: dashboardDocumentDeleteRpc(ctx),
      [rpcMethods.apps.dashboardFiles]: dashboardFilesRpc(ctx),
      [rpcMethods.apps.dashboardFile]: dashboardFileRpc(ctx),
      [rpcMethods.apps.dashboardFileDelete]: dashboardFileDeleteRpc(ctx),
    },
    outbox: outboxRelay,
    logger: deps.logger,
  });
  const stopSweeper = startSweeper(deps.db, deps.logger);
  // Rows under an older key are re-sealed in the background: start does not wait, a failure is only logged.
  resealStaleRows(ctx, deps.logger).catch((error: unknown) =>
    deps.logger.error("re-sealing secrets under the current key failed", { error }),
  );
  return {
    name: "apps",
    urls: { appHost: appsRootOrigin(config) },
    context: ctx,
    host,
    async stop() {
      stopSweeper();
      entitlements.close();
      await service.stop();
      await host.stop();
      ctx.rate.close();
    },
  };
}
