import { CONFIRM_TTL_SECONDS, type Question, type ToolContract } from "@hatch/contracts";
import { type Bus, type Database, type Logger } from "@hatch/platform";
import { Elysia } from "elysia";
import type { Auth } from "../auth/index.ts";
import { BodyTooLargeError } from "../auth/errors.ts";
import { errorPage } from "../auth/views.ts";
import type { CallerInfo, ServiceClientDeps } from "../services.ts";
import { htmlResponse } from "../pages/layout.ts";
import { showConfirm, submitConfirm, type ConfirmPagesDeps } from "./pages.ts";
import { createConfirmOutcomes, type ConfirmOutcomes } from "./outcomes.ts";
import { insertConfirmation, sweepConfirmations } from "./store.ts";

// Pending confirmations: when a client cannot show a form and the service wants the user's own answer in a
// browser (deletes, purchases, removals), the gateway keeps the question and links the user to /confirm/<id>.

export interface OpenConfirmation {
  caller: CallerInfo;
  contract: ToolContract;
  /** The validated input, sent again unchanged when the user confirms. */
  input: unknown;
  question: Question;
}

export interface ConfirmationOpener {
  /** Stores the question for the caller's user and returns the page where they answer it. */
  open(request: OpenConfirmation): Promise<{ url: string; expiresAt: string }>;
  /** What the user answered on confirm pages of a grant, told once to its next tool call (outcomes.ts). */
  outcomes?: Pick<ConfirmOutcomes, "take">;
}

export interface Confirmations extends ConfirmationOpener {
  /** `GET` and `POST /confirm/:id`. */
  routes: Elysia;
  /** Deletes confirmations a day past expiry; returns how many. */
  sweep(): Promise<number>;
  outcomes: ConfirmOutcomes;
}

export interface ConfirmationsDeps {
  db: Database;
  /** Tells every gateway copy that a grant has an outcome to report (outcomes.ts). */
  bus: Bus;
  baseUrl: string;
  auth: Pick<Auth, "pages" | "identityForGrant">;
  /** How tool calls reach services; the confirmed answer travels the same way. */
  calls: ServiceClientDeps;
  logger: Logger;
  now?: () => number;
}

export function createConfirmations(deps: ConfirmationsDeps): Confirmations {
  const now = deps.now ?? Date.now;
  const logger = deps.logger.child({ component: "confirm" });
  const outcomes = createConfirmOutcomes({ db: deps.db, bus: deps.bus, logger, now });
  const pageDeps: ConfirmPagesDeps = { db: deps.db, auth: deps.auth, calls: deps.calls, logger, now, outcomes };
  const guarded =
    (handler: (request: Request, id: string) => Promise<Response>) => async (request: Request, id: string) => {
      try {
        return await handler(request, id);
      } catch (error) {
        if (error instanceof BodyTooLargeError) return htmlResponse("Request body too large", { status: 413 });
        logger.error("confirm page failed", { error });
        return htmlResponse(
          errorPage(
            { user: null, csrfToken: "" },
            "Something went wrong",
            "Something went wrong on our side. Nothing was changed. Try again.",
          ),
          { status: 500 },
        );
      }
    };
  const show = guarded((request, id) => showConfirm(pageDeps, request, id));
  const submit = guarded((request, id) => submitConfirm(pageDeps, request, id));

  return {
    async open({ caller, contract, input, question }) {
      const stated = question.expiresAt ? Date.parse(question.expiresAt) : Number.NaN;
      const expiresAt = new Date(Number.isFinite(stated) ? stated : now() + CONFIRM_TTL_SECONDS * 1000);
      const id = await insertConfirmation(deps.db, {
        userId: caller.identity.userId,
        grantId: caller.identity.grantId,
        client: { kind: caller.client.kind, name: caller.client.name },
        service: contract.service,
        tool: contract.name,
        input,
        question,
        expiresAt,
      });
      return { url: `${deps.baseUrl}/confirm/${id}`, expiresAt: expiresAt.toISOString() };
    },
    routes: new Elysia({ name: "hatch-confirm" })
      .get("/confirm/:id", ({ request, params }) => show(request, params.id))
      .post("/confirm/:id", ({ request, params }) => submit(request, params.id), {
        parse: "none",
      }) as unknown as Elysia,
    sweep: () => sweepConfirmations(deps.db, new Date(now())),
    outcomes,
  };
}
