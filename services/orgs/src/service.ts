import { seatsUsedRpc } from "./rpc/seats.ts";
import {
  createOutboxRelay,
  EntitlementsCache,
  eventStreamFor,
  startService,
  type RunningService,
  type ServiceDeps,
} from "@hatch/platform";
import { rpcMethods, TOOL_CONTRACTS } from "@hatch/contracts";
import { startActivityConsumer } from "./activity.ts";
import { loadOrgsConfig } from "./config.ts";
import { orgsConfirmKey, type OrgsContext } from "./context.ts";
import { outbox } from "./db/schema.ts";
import { createMailer } from "./mail/mailer.ts";
import { acceptInvitationRpc, previewInvitationRpc } from "./rpc/invitations.ts";
import { mailOutboxRpc, sendPasswordResetMailRpc, sendVerificationMailRpc } from "./rpc/mail.ts";
import { resolveSessionRpc, sessionAccountsRpc } from "./rpc/session.ts";
import { accountDeleteRpc, accountDeletionRpc } from "./rpc/account-delete.ts";
import { orgsTools } from "./tools/index.ts";

export const ORGS_VERSION = "0.2.0";
export const ORGS_MIGRATIONS = new URL("../drizzle", import.meta.url).pathname;

/** Answers the orgs tools and rpc methods, relays its events, sends its mail and keeps the activity log. */
export async function startOrgsService(deps: ServiceDeps): Promise<RunningService> {
  const config = loadOrgsConfig(deps.env);
  const logger = deps.logger;
  if (!config.smtp && deps.env.NODE_ENV === "production") {
    logger.warn(
      "SMTP_URL is not set: invitation and verification emails are not sent, only kept for the dev outbox (which only `bun run dev` serves)",
    );
  }
  const mailer = createMailer({ db: deps.db, config, logger });
  const orgs: OrgsContext = {
    db: deps.db,
    config,
    bus: deps.bus,
    contextKey: deps.contextKey,
    confirmKey: orgsConfirmKey(deps.secret),
    mailer,
    logger,
    entitlements: new EntitlementsCache(deps.bus, logger),
  };
  const service = await startService({
    name: "orgs",
    version: ORGS_VERSION,
    bus: deps.bus,
    contextKey: deps.contextKey,
    confirmKey: orgs.confirmKey,
    contracts: TOOL_CONTRACTS,
    tools: orgsTools(orgs),
    rpc: {
      [rpcMethods.orgs.resolveSession]: resolveSessionRpc(deps.db),
      [rpcMethods.orgs.sessionAccounts]: sessionAccountsRpc(deps.db),
      [rpcMethods.orgs.previewInvitation]: previewInvitationRpc(orgs),
      [rpcMethods.orgs.acceptInvitation]: acceptInvitationRpc(orgs),
      [rpcMethods.orgs.mailOutbox]: mailOutboxRpc(orgs),
      [rpcMethods.orgs.sendVerificationMail]: sendVerificationMailRpc(orgs),
      [rpcMethods.orgs.sendPasswordResetMail]: sendPasswordResetMailRpc(orgs),
      [rpcMethods.orgs.seatsUsed]: seatsUsedRpc(orgs),
      [rpcMethods.orgs.accountDeletion]: accountDeletionRpc(orgs),
      [rpcMethods.orgs.accountDelete]: accountDeleteRpc(orgs),
    },
    outbox: createOutboxRelay({ db: deps.db, table: outbox, stream: eventStreamFor(deps.bus), logger }),
    logger,
  });
  const activity = startActivityConsumer(orgs);
  mailer.start();
  return {
    name: "orgs",
    async stop() {
      await service.stop();
      await activity.stop();
      await mailer.stop();
      orgs.entitlements?.close();
    },
  };
}
