import { bindTool, consumeConfirm, type ToolOutcome } from "@hatch/platform";
import { buildQuestion, placementText, tool_secret, type ToolSecretOutput } from "@hatch/contracts";
import { requireManagedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { confirmUses } from "../db/schema.ts";
import { destinationText, unconfirmedUses } from "../secrets/destinations.ts";
import { deleteSecret, secretStatus, type SecretStatus } from "../secrets/store.ts";
import { apisUsing, type SecretUse } from "../secrets/usage.ts";

// tool_secret: the value never passes through here. `link` gives the dashboard page where the owner (or a manager of
// the app's organization) types it, or confirms where it goes after a publish moved an api's destination (until then
// that api gets no value, and the answer says which and where); `delete` removes it after the user confirms.

/** The dashboard page of one secret of one app (gateway/src/pages/secret-page.ts). */
export function secretPageUrl(gatewayUrl: string, address: string, name: string): string {
  return `${gatewayUrl}/dashboard/apps/${encodeURIComponent(address)}/secrets/${encodeURIComponent(name)}`;
}

export function toolSecretTool(apps: AppsContext) {
  return bindTool(tool_secret, async ({ ctx, input, answer, confirmation }): Promise<ToolOutcome<ToolSecretOutput>> => {
    const app = await requireManagedApp(apps.db, ctx, input.address, { action: "set its secrets" });
    const [status, uses] = await Promise.all([
      secretStatus(apps.db, app.id, input.name),
      apisUsing(apps, app, input.name),
    ]);
    const base = { address: app.address, name: input.name, referencedBy: uses.map((u) => u.name) };
    if (input.action === "link") return link(apps, app, input.name, status, uses);

    if (!status.isSet) {
      return {
        text: `${input.name} has no value in ${app.address}, so there is nothing to delete.`,
        data: { status: "deleted", ...base, url: null, isSet: false },
      };
    }
    if (!confirmation) {
      const users = uses.length ? ` The app's ${names(uses)} will stop working until a new value is set.` : "";
      return {
        ask: buildQuestion(
          apps.keys.confirm,
          { sub: ctx.sub, tool: "tool_secret", input },
          {
            message: `Delete the secret ${input.name} of "${app.name}" (${app.address})? Its value cannot be recovered.${users}`,
            properties: { confirm: { type: "boolean", title: `Yes, delete ${input.name}` } },
            required: ["confirm"],
            fallback: "link",
            data: { ...base, url: null, isSet: true },
          },
        ),
      };
    }
    if (answer?.confirm !== true) {
      const userAction = {
        kind: "ask_user" as const,
        message: `The user chose to keep ${input.name}.`,
        fields: [],
        url: null,
        expiresAt: null,
      };
      return {
        text: `The user did not confirm, so ${input.name} was kept.`,
        data: { status: "needs_user", ...base, url: null, isSet: true, userAction },
      };
    }
    const deleted = await apps.db.transaction(async (tx) => {
      await consumeConfirm(tx, confirmUses, confirmation);
      const locked = await requireManagedApp(tx, ctx, input.address);
      return deleteSecret(tx, ctx, locked, input.name);
    });
    const text = deleted
      ? `Deleted ${input.name} from ${app.address}.${uses.length ? ` Calls to ${names(uses)} fail until a new value is set (tool_secret action link).` : ""}`
      : `${input.name} was already gone from ${app.address}; nothing else changed.`;
    return { text, data: { status: "deleted", ...base, url: null, isSet: false } };
  });
}

function link(
  apps: AppsContext,
  app: AppRow,
  name: string,
  status: SecretStatus,
  uses: SecretUse[],
): ToolOutcome<ToolSecretOutput> {
  const url = secretPageUrl(apps.config.gatewayUrl, app.address, name);
  const now = status.isSet
    ? `A value is set (by ${status.updatedBy}, ${status.updatedAt}); the page replaces it.`
    : "No value is set yet.";
  const usedBy = uses.length
    ? `Used by ${names(uses)}.`
    : `No api in the current version's service.json uses ${name} yet: publish one that does (service_docs topic service_json, Declared APIs).`;
  const waiting = status.isSet ? unconfirmedUses(status.destinations, uses) : [];
  const referencedBy = uses.map((u) => u.name);
  if (waiting.length > 0) {
    const what = waiting.map((w) =>
      w.was
        ? `api ${w.api} now goes to ${destinationText(w)} (it was ${destinationText(w.was)})`
        : `api ${w.api} goes to ${destinationText(w)}, which was never confirmed`,
    );
    const message = `Open this page and confirm where ${name} of ${app.name} is sent, then tell your AI it is done.`;
    return {
      text:
        `${name} is not sent to ${waiting.map((w) => `api ${w.api}`).join(", ")} of ${app.address}: ${what.join("; ")}. ` +
        `Its calls fail until the owner confirms the new destination. Give the user this link to confirm it in their browser: ${url}\n${now} ${usedBy}`,
      data: {
        status: "link",
        address: app.address,
        name,
        url,
        isSet: true,
        referencedBy,
        unconfirmed: waiting.map((w) => ({
          api: w.api,
          url: w.url,
          in: placementText(w.in),
          was: w.was ? { url: w.was.url, in: placementText(w.was.in) } : null,
        })),
        userAction: { kind: "open_link", message, fields: [], url, expiresAt: null },
      },
    };
  }
  const message = `Open this page and type the value of ${name} for ${app.name} there, then tell your AI it is set.`;
  return {
    text: `Give the user this link to set ${name} for ${app.address} in their browser (never ask them for the value): ${url}\n${now} ${usedBy}`,
    data: {
      status: "link",
      address: app.address,
      name,
      url,
      isSet: status.isSet,
      referencedBy,
      userAction: { kind: "open_link", message, fields: [], url, expiresAt: null },
    },
  };
}

const names = (uses: SecretUse[]) => uses.map((u) => `api ${u.name}`).join(", ");
