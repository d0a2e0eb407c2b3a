import {
  httpStatusOf,
  isAskReply,
  isToolError,
  randomId,
  type Question,
  type ToolContract,
  type ToolOutput,
} from "@hatch/contracts";
import { type Bus, type Logger } from "@hatch/platform";
import type { z } from "zod";
import { forPeople } from "./words.ts";
import type { PublicUser } from "../../auth/index.ts";
import type { AccountSessions } from "../../mcp/accounts.ts";
import { callService, websiteCaller, type CallerInfo } from "../../services.ts";

// Every action on the dashboard is the tool itself, sent over the bus as `tools.<service>.<tool>` with a ctx signed
// for the browser's person (account, org, role and permissions resolved as for an AI's call), so the service checks
// permissions and writes its event exactly as for the tool. The ctx's client says where it happened: the activity log
// shows it as "on the dashboard".

/** The ctx client of every dashboard call (orgs' activity log and org_activity name it "on the dashboard"). */
export const DASHBOARD_CLIENT = { kind: "other", name: "dashboard" } as const;

export interface DashboardCallDeps {
  bus: Bus;
  contextKey: Buffer;
  accounts: AccountSessions;
  logger: Logger;
}

export type ToolAnswer<C extends ToolContract> =
  | { kind: "done"; text: string; data: ToolOutput<C> }
  | { kind: "ask"; question: Question }
  | { kind: "refused"; code: string; message: string };

/**
 * Calls one tool for the signed-in person. The input is checked against the tool's contract first (defaults filled in,
 * as the MCP endpoint does); a refusal carries the service's own message, which names what to do next.
 */
export async function callTool<C extends ToolContract>(
  deps: DashboardCallDeps,
  user: PublicUser,
  contract: C,
  input: z.input<C["input"]>,
  extra: { answer?: Record<string, unknown>; confirm?: string } = {},
): Promise<ToolAnswer<C>> {
  const parsed = contract.input.safeParse(input);
  if (!parsed.success) return { kind: "refused", code: "invalid_input", message: inputProblem(parsed.error, input) };
  const requestId = randomId(12);
  const caller: CallerInfo = websiteCaller(user, {
    scope: contract.class === "read" ? "read" : "write",
    client: DASHBOARD_CLIENT.name,
    requestId,
    // The account the switcher shows (account-choice.ts); orgs checks the person belongs to it.
    account: (user as { account?: string }).account,
  });
  try {
    const reply = await callService(deps, contract, caller, { input: parsed.data, ...extra });
    if (!reply.ok) return { kind: "refused", code: reply.error.code, message: forPeople(reply.error.message) };
    if (isAskReply(reply)) return { kind: "ask", question: { ...reply.ask, message: forPeople(reply.ask.message) } };
    return { kind: "done", text: forPeople(reply.result.text), data: reply.result.data as ToolOutput<C> };
  } catch (error) {
    if (isToolError(error) && error.code !== "internal")
      return { kind: "refused", code: error.code, message: forPeople(error.message) };
    deps.logger.error("dashboard tool call failed", { tool: contract.name, rid: requestId, error });
    return {
      kind: "refused",
      code: "internal",
      message: `Something went wrong in Hatch. Reload the page to see the current state; if it keeps failing, report request id ${requestId}.`,
    };
  }
}

/**
 * What was wrong with a form, in words for a person: the value that was refused and why, never the input's schema
 * path ("emails.1: …").
 */
function inputProblem(error: z.ZodError, input: unknown): string {
  const issue = error.issues[0];
  let value: unknown = input;
  for (const key of issue?.path ?? []) value = value && typeof value === "object" ? (value as never)[key] : undefined;
  const why = (issue?.message ?? "This is not valid").replace(/^Invalid input: /, "");
  const typed = typeof value === "string" && value ? `"${value}": ` : "";
  return `${typed}${why}. Nothing was changed.`;
}

/** A tool's answer when the page needs its data: the data, or throws the refusal (the page shows it). */
export async function readTool<C extends ToolContract>(
  deps: DashboardCallDeps,
  user: PublicUser,
  contract: C,
  input: z.input<C["input"]>,
): Promise<ToolOutput<C>> {
  const answer = await callTool(deps, user, contract, input);
  if (answer.kind === "done") return answer.data;
  if (answer.kind === "refused") throw new Refusal(answer.code, answer.message);
  throw new Refusal("internal", `${contract.name} asked a question where none was expected.`);
}

/** A refusal to show on the page, with its code's HTTP status (httpStatusOf). */
export class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  get status(): number {
    return httpStatusOf(this.code);
  }
}
