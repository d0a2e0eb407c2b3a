import { bindTool, createLogger, startService, type RunningService } from "@hatch/platform";
import {
  buildQuestion,
  CONFIRM_TTL_SECONDS,
  delete_tool,
  deriveKey,
  publish,
  share,
  TOOL_CONTRACTS,
  ToolError,
  type ConfirmClaims,
  type Question,
} from "@hatch/contracts";
import { TEST_SECRET, type TestHatch } from "./hatch.ts";

// A stand-in apps service on the real bus that asks the user the way the apps issue will: delete_tool and
// share-to-public want the user's own answer in a browser when no form can be shown (fallback "link");
// publish asks for the new app's name and visibility, which the AI may ask for (fallback "ask_ai").
// Single use is an in-memory set here; the real service records used tokens in its own table.

export const STAND_IN_CONFIRM_KEY = deriveKey(TEST_SECRET, "test:confirm");

/** Addresses whose delete question is already expired when asked (minutes, or days for the sweep). */
export const EXPIRED_ADDRESS = "expired-app";
export const ANCIENT_ADDRESS = "ancient-app";

export interface StandInCall {
  tool: string;
  user: string;
  input: unknown;
  answer?: Record<string, unknown>;
  confirmed: boolean;
}

export interface StandInApps {
  /** Every call the service received, in order. */
  readonly calls: StandInCall[];
  /** What it really did: only after a valid confirmation it had not seen before. */
  readonly acted: { tool: string; user: string; input: unknown; answer: Record<string, unknown> }[];
  /** Every question it asked, in order. */
  readonly asked: Question[];
  reset(): void;
  stop(): Promise<void>;
}

export async function startStandInApps(hatch: TestHatch): Promise<StandInApps> {
  const calls: StandInCall[] = [];
  const acted: StandInApps["acted"] = [];
  const asked: Question[] = [];
  const used = new Set<string>();

  const ask = (
    user: string,
    tool: string,
    input: unknown,
    options: Parameters<typeof buildQuestion>[2],
    nowMs = Date.now(),
  ) => {
    const question = buildQuestion(STAND_IN_CONFIRM_KEY, { sub: user, tool, input }, options, nowMs);
    asked.push(question);
    return { ask: question };
  };
  /** The action itself: once per token, and only with the answer the question wanted. */
  const act = (
    tool: string,
    user: string,
    input: unknown,
    answer: Record<string, unknown>,
    confirmation: ConfirmClaims | undefined,
  ) => {
    if (!confirmation)
      throw new ToolError("invalid_input", "An answer needs the confirm token that came with the question.");
    if (used.has(confirmation.id))
      throw new ToolError("conflict", "This confirmation was already used. Nothing was changed.");
    used.add(confirmation.id);
    acted.push({ tool, user, input, answer });
  };

  const service: RunningService = await startService({
    name: "apps",
    version: "test",
    bus: hatch.bus,
    contextKey: deriveKey(TEST_SECRET, "ctx"),
    confirmKey: STAND_IN_CONFIRM_KEY,
    contracts: TOOL_CONTRACTS,
    logger: createLogger({ level: "silent" }),
    tools: [
      bindTool(delete_tool, async ({ ctx, input, answer, confirmation }) => {
        calls.push({ tool: "delete_tool", user: ctx.sub, input, answer, confirmed: confirmation !== undefined });
        if (!answer) {
          const ageMs =
            input.address === EXPIRED_ADDRESS
              ? (CONFIRM_TTL_SECONDS + 60) * 1000
              : input.address === ANCIENT_ADDRESS
                ? 2 * 86_400_000
                : 0;
          const message = `Delete ${input.address}? This cannot be undone.`;
          const options = {
            message,
            properties: { confirm: { type: "boolean" as const, title: `Yes, delete ${input.address}` } },
            required: ["confirm"],
            fallback: "link" as const,
            data: { address: input.address },
          };
          return ask(ctx.sub, "delete_tool", input, options, Date.now() - ageMs);
        }
        if (answer.confirm !== true)
          throw new ToolError("invalid_input", "The user did not confirm the delete. Nothing was changed.");
        act("delete_tool", ctx.sub, input, answer, confirmation);
        return { text: `Deleted ${input.address}.`, data: { status: "deleted" as const, address: input.address } };
      }),
      bindTool(share, async ({ ctx, input, answer, confirmation }) => {
        calls.push({ tool: "share", user: ctx.sub, input, answer, confirmed: confirmation !== undefined });
        if (input.visibility !== "public")
          return { text: `Updated ${input.address}.`, data: { status: "updated" as const, address: input.address } };
        if (!answer) {
          const properties = {
            aiDiscoverable: { type: "boolean" as const, title: "Let AI assistants find it" },
            note: { type: "string" as const, title: "Note for the log" },
            days: { type: "integer" as const, title: "Days to stay public" },
          };
          return ask(ctx.sub, "share", input, {
            message: `Make ${input.address} public? Anyone with the link can open it.`,
            properties,
            fallback: "link",
            data: { address: input.address },
          });
        }
        act("share", ctx.sub, input, answer, confirmation);
        const aiDiscoverable = answer.aiDiscoverable === true;
        return {
          text: `${input.address} is public now${aiDiscoverable ? " and AI assistants can find it" : ""}.`,
          data: { status: "updated" as const, address: input.address, visibility: "public" as const, aiDiscoverable },
        };
      }),
      bindTool(publish, async ({ ctx, input, answer, confirmation }) => {
        calls.push({ tool: "publish", user: ctx.sub, input, answer, confirmed: confirmation !== undefined });
        const chosen =
          answer ?? (input.name && input.visibility ? { name: input.name, visibility: input.visibility } : undefined);
        if (!chosen) {
          const properties = {
            name: { type: "string" as const, title: "App name", description: "The app's name" },
            visibility: {
              type: "string" as const,
              title: "Who can open it",
              enum: ["private", "org", "people", "public"],
            },
          };
          return ask(ctx.sub, "publish", input, {
            message: "What should the new app be called, and who may open it?",
            properties,
            required: ["name", "visibility"],
            fallback: "ask_ai",
          });
        }
        if (answer) act("publish", ctx.sub, input, answer, confirmation);
        else acted.push({ tool: "publish", user: ctx.sub, input, answer: chosen });
        const address = String(chosen.name)
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, "-");
        return {
          text: `Published ${address} (${String(chosen.visibility)}).`,
          data: { status: "published" as const, address, url: `http://${address}.localhost/`, version: 1 },
        };
      }),
    ],
  });

  return {
    calls,
    acted,
    asked,
    reset() {
      calls.length = 0;
      acted.length = 0;
      asked.length = 0;
    },
    stop: () => service.stop(),
  };
}
