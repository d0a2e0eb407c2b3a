import { buildQuestion, type CallContext, type ConfirmClaims, type Question } from "@hatch/contracts";
import { checkMayMakePublic } from "./apps-repo.ts";
import type { AppsContext } from "./context.ts";

/** What the caller of `gateMakePublic` does next. */
export type PublicGate = { go: true } | { ask: Question } | { declined: true };

export interface MakePublicRequest {
  ctx: CallContext;
  tool: "share" | "publish";
  /** The exact tool input: the confirm token is bound to it. */
  input: unknown;
  answer?: Record<string, unknown>;
  confirmation?: ConfirmClaims;
  /** The app as the user will read it in the question, e.g. `"Todo" (https://todo.example.net)`. */
  subject: string;
  /** The tool's result fields while it waits for the user (they must fit its output schema). */
  data: Record<string, unknown>;
  /** True when the user chose "public" themselves in a form the AI cannot fill (publish's name/visibility form). */
  chosenByUser?: boolean;
}

/**
 * The one rule for an app becoming public, whether an existing app is shared (`share`) or a new app is created
 * public (`publish`): in a company it needs owner/admin or `share_public`, and the user confirms it themselves
 * (a form, or a confirm link for clients that cannot show one). The caller spends the confirmation with
 * `consumeConfirm` in the transaction that makes the change.
 */
export function gateMakePublic(app: AppsContext, request: MakePublicRequest): PublicGate {
  checkMayMakePublic(request.ctx);
  if (!request.confirmation) {
    const question = buildQuestion(
      app.keys.confirm,
      { sub: request.ctx.sub, tool: request.tool, input: request.input },
      {
        message: `Make ${request.subject} public? Anyone with the link will be able to open it.`,
        properties: { confirm: { type: "boolean", title: "Yes, make it public" } },
        required: ["confirm"],
        fallback: "link",
        data: request.data,
      },
    );
    return { ask: question };
  }
  return request.answer?.confirm === true || request.chosenByUser ? { go: true } : { declined: true };
}
