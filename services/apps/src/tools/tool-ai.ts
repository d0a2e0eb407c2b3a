import { bindTool, consumeConfirm, type ToolOutcome } from "@hatch/platform";
import {
  buildQuestion,
  tool_ai,
  ToolError,
  type AiKeyChoice,
  type CallContext,
  type ToolAiOutput,
} from "@hatch/contracts";
import { eq } from "drizzle-orm";
import { aiKeyPageUrl, COMPANY_KEY_ROLES, hasKey } from "../ai/keys.ts";
import { notFound, requireManagedApp, type AppRow } from "../apps-repo.ts";
import type { AppsContext } from "../context.ts";
import { appsTable, confirmUses } from "../db/schema.ts";
import { appEvent } from "../events.ts";

const WORDS: Record<AiKeyChoice, string> = {
  company: "the organization's AI key",
  mine: "your own AI key",
  tool: "the app's own AI key",
  none: "no AI key",
};

/**
 * A warning whenever the choice makes the user or the company pay for someone else's use: anyone but the person
 * choosing can open the app (it is not private, or it is another person's app).
 */
function costWarningOf(app: AppRow, value: AiKeyChoice, ctx: CallContext): string | null {
  if (value === "none") return null;
  if (app.visibility === "private" && app.ownerId === ctx.sub) return null;
  const who =
    app.visibility === "public"
      ? "anyone with the link"
      : app.visibility === "private"
        ? "its owner"
        : app.visibility === "org"
          ? "everyone in the organization"
          : "the people it is shared with";
  const payer =
    value === "mine" ? "You pay" : value === "company" ? "The organization pays" : "Whoever owns the app's key pays";
  return `${payer} for every AI call on ${app.address} made by ${who}, through ${WORDS[value].replace("your own", "your")}: provider charges can add up.`;
}

/** tool_ai: which key pays for an app's AI calls; a choice that spends money on other people's use asks the user first. */
export function toolAiTool(apps: AppsContext) {
  return bindTool(tool_ai, async ({ ctx, input, answer, confirmation }): Promise<ToolOutcome<ToolAiOutput>> => {
    const app = await requireManagedApp(apps.db, ctx, input.address, { action: "choose which AI key pays for it" });
    const value = input.value;
    if (value === "company") {
      if (ctx.account !== app.accountId) {
        throw new ToolError(
          "forbidden",
          `${app.address} belongs to another account than the one you act in now. Act in its organization to choose its key.`,
        );
      }
      if (ctx.accountKind !== "company")
        throw new ToolError(
          "invalid_input",
          `${app.address} is in a personal account, which has no company key. Choose mine or tool.`,
        );
      // The organization's money: the same people who may add its key decide which apps spend it.
      if (!COMPANY_KEY_ROLES.includes(ctx.role ?? "")) {
        throw new ToolError(
          "forbidden",
          `Only the organization's owner or an admin may let its AI key pay for ${app.address}. Ask one of them, or choose mine or tool.`,
        );
      }
    }
    const payerId = value === "mine" ? ctx.sub : null;
    const ownerId = value === "company" ? app.accountId : value === "mine" ? ctx.sub : app.id;
    const keyAvailable = value !== "none" && (await hasKey(apps.db, value, ownerId));
    const costWarning = costWarningOf(app, value, ctx);
    const unchanged = app.aiChoice === value && app.aiPayerId === payerId;
    const base = { address: app.address, value, keyAvailable, costWarning };

    // A client that can show forms asks the user itself: there the AI's own acceptCost counts for nothing.
    const accepted =
      confirmation !== undefined
        ? answer?.acceptCost === true
        : !ctx.client.elicitation.form && input.acceptCost === true;
    // Asked even when the choice is already in place: it may have been made before it could cost money (the app was
    // private, then shared), and a call that confirms it is the user's chance to hear what it costs.
    if (costWarning && !accepted) {
      if (confirmation) {
        const message = unchanged
          ? `The user did not accept the cost. ${app.address} still uses ${WORDS[value]}, chosen before it could cost money; value none stops its AI calls.`
          : `The user did not accept the cost, so ${app.address} keeps ${WORDS[app.aiChoice]}.`;
        return {
          text: `${message} Nothing changed.`,
          data: {
            status: "needs_user",
            ...base,
            userAction: { kind: "ask_user", message, fields: [], url: null, expiresAt: null },
          },
        };
      }
      return {
        ask: buildQuestion(
          apps.keys.confirm,
          { sub: ctx.sub, tool: "tool_ai", input },
          {
            message: `${costWarning} Do you accept?`,
            properties: {
              acceptCost: {
                type: "boolean",
                title: "Yes, I accept this cost",
                description: "true only if the user accepts paying for other people's AI calls on this app",
              },
            },
            required: ["acceptCost"],
            fallback: "ask_ai",
            data: base,
          },
        ),
      };
    }

    if (!unchanged) {
      await apps.db.transaction(async (tx) => {
        if (confirmation) await consumeConfirm(tx, confirmUses, confirmation);
        const [locked] = await tx
          .select({ id: appsTable.id })
          .from(appsTable)
          .where(eq(appsTable.id, app.id))
          .for("update");
        if (!locked) throw notFound(input.address);
        await tx
          .update(appsTable)
          .set({ aiChoice: value, aiPayerId: payerId, updatedAt: new Date() })
          .where(eq(appsTable.id, app.id));
        await appEvent(tx, ctx, "ai_choice_changed", app, {
          from: app.aiChoice,
          to: value,
          summary: `AI calls paid by ${WORDS[value].replace("your own", "their own")}`,
        });
      });
      apps.logger.info("AI key choice changed", { address: app.address, from: app.aiChoice, to: value });
    }
    // A warning the user just accepted is not repeated in the text.
    return {
      text: resultText(apps, app.address, value, keyAvailable, accepted ? null : costWarning),
      data: { status: "updated", ...base },
    };
  });
}

function resultText(
  apps: AppsContext,
  address: string,
  value: AiKeyChoice,
  keyAvailable: boolean,
  costWarning: string | null,
): string {
  if (value === "none") return `${address} now makes no AI calls: hatch.ai.chat and env.ai.chat are refused.`;
  const lines = [`${address} now pays for its AI calls (hatch.ai.chat, env.ai.chat) with ${WORDS[value]}.`];
  if (!keyAvailable) {
    const url = aiKeyPageUrl(apps.config.gatewayUrl, value, value === "tool" ? address : null);
    lines.push(`No such key has been added yet, so AI calls fail until the user adds one on this page: ${url}`);
  }
  if (costWarning) lines.push(`Tell the user: ${costWarning}`);
  return lines.join(" ");
}
