import { ai_key, buildQuestion, ToolError, plural, type AiKeyOutput } from "@hatch/contracts";
import { bindTool, consumeConfirm, type ToolOutcome } from "@hatch/platform";
import { aiKeyPageUrl, deleteAiKey, keysOf, resolveKeyOwner, visibleKeys, type KeyOwner } from "../ai/keys.ts";
import type { AppsContext } from "../context.ts";
import { confirmUses } from "../db/schema.ts";

/** How the AI names the key to the user. */
function whose(owner: KeyOwner): string {
  if (owner.scope === "mine") return "your own";
  if (owner.scope === "company") return "the organization's";
  return `the app ${owner.app!.address}'s own`;
}

/** The keys the user can see, one line each, as the text says them. */
function keyList(keys: AiKeyOutput["keys"]): string {
  if (keys.length === 0) return "No AI keys are saved yet.";
  const line = (k: AiKeyOutput["keys"][number]) =>
    `- ${k.provider}: ${k.scope === "tool" ? `the app ${k.address}'s` : k.scope === "mine" ? "yours" : "the organization's"}, added ${k.addedAt.slice(0, 10)} by ${k.addedBy}`;
  return `${plural(keys.length, "AI key")} saved:\n${keys.map(line).join("\n")}`;
}

/**
 * ai_key: the dashboard page where the user adds a provider key (never through the chat), or deleting one after the
 * user confirms. Who may: their own keys; the company's (owner or admin, in a company account); an app's (its owner
 * or a manager of its organization).
 */
export function aiKeyTool(apps: AppsContext) {
  return bindTool(ai_key, async ({ ctx, input, answer, confirmation }): Promise<ToolOutcome<AiKeyOutput>> => {
    const providers = [...apps.config.aiProviders.keys()];
    if (input.provider && !apps.config.aiProviders.has(input.provider)) {
      throw new ToolError(
        "invalid_input",
        `Hatch does not offer the AI provider "${input.provider}". Known providers: ${providers.join(", ")}.`,
      );
    }
    const owner = await resolveKeyOwner(apps.db, ctx, input.scope, input.address);

    if (input.action === "link") {
      const url = aiKeyPageUrl(apps.config.gatewayUrl, owner.scope, owner.app?.address, input.provider);
      const keys = await visibleKeys(apps.db, ctx);
      const message = `Open this page to add ${whose(owner)} ${input.provider ?? "AI provider"} key, then tell me when it is saved: ${url}`;
      return {
        text: `Give the user this link to add ${whose(owner)} ${input.provider ?? "AI provider"} key in their browser (never ask for the key in the chat): ${url}\n${keyList(keys)}`,
        data: {
          status: "link",
          url,
          keys,
          userAction: { kind: "open_link", message, fields: [], url, expiresAt: null },
        },
      };
    }

    const existing = await keysOf(apps.db, owner);
    if (!input.provider) {
      const have = existing.length
        ? `Keys of this scope: ${existing.map((k) => k.provider).join(", ")}.`
        : "There are no keys of this scope.";
      throw new ToolError("invalid_input", `Give provider to say which key to delete. ${have}`);
    }
    if (!existing.some((k) => k.provider === input.provider)) {
      const have = existing.length
        ? `Its keys are for: ${existing.map((k) => k.provider).join(", ")}.`
        : "There are none.";
      throw new ToolError("not_found", `There is no ${input.provider} key in ${whose(owner)} keys. ${have}`);
    }
    if (!confirmation) {
      return {
        ask: buildQuestion(
          apps.keys.confirm,
          { sub: ctx.sub, tool: "ai_key", input },
          {
            message: `Delete ${whose(owner)} ${input.provider} AI key? Apps that pay with it can make no AI calls with ${input.provider} until a new key is added.`,
            properties: { confirm: { type: "boolean", title: `Yes, delete the ${input.provider} key` } },
            required: ["confirm"],
            fallback: "link",
            data: { url: null, keys: await visibleKeys(apps.db, ctx) },
          },
        ),
      };
    }
    if (answer?.confirm !== true) {
      const message = `The user chose not to delete the ${input.provider} key.`;
      return {
        text: `${message} Nothing changed.`,
        data: {
          status: "needs_user",
          url: null,
          keys: await visibleKeys(apps.db, ctx),
          userAction: { kind: "ask_user", message, fields: [], url: null, expiresAt: null },
        },
      };
    }
    await apps.db.transaction(async (tx) => {
      await consumeConfirm(tx, confirmUses, confirmation);
      if (!(await deleteAiKey(tx, ctx, owner, input.provider!)))
        throw new ToolError("not_found", `The ${input.provider} key was already deleted.`);
    });
    apps.logger.info("AI key deleted", { scope: owner.scope, owner: owner.ownerId, provider: input.provider });
    return {
      text: `Deleted ${whose(owner)} ${input.provider} AI key.`,
      data: { status: "deleted", url: null, keys: await visibleKeys(apps.db, ctx) },
    };
  });
}
