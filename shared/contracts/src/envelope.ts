import { z } from "zod";
import { ERROR_CODES } from "./errors.ts";

/** What the gateway sends to `tools.<service>.<tool>`: the signed caller context and the validated input. */
export const CallRequestSchema = z.object({
  ctx: z.string().min(1),
  input: z.unknown(),
  /** The user's answer to a question the service asked, with the confirm token it gave. */
  answer: z.record(z.string(), z.unknown()).optional(),
  confirm: z.string().optional(),
  /**
   * Input keys the caller's contract marks `ignorable` (added later; without them the tool does what it did before):
   * a copy whose contract does not know one drops it instead of refusing the call (a rolling deploy).
   */
  ignorable: z.array(z.string()).optional(),
});
export type CallRequest = z.infer<typeof CallRequestSchema>;

/** A flat form: the only shape MCP form elicitation accepts (primitive properties, no nesting). */
export const QuestionFieldSchema = z.object({
  type: z.enum(["string", "number", "integer", "boolean"]),
  title: z.string().optional(),
  description: z.string().optional(),
  enum: z.array(z.string()).optional(),
  default: z.union([z.string(), z.number(), z.boolean()]).optional(),
});
export const QuestionSchema = z.object({
  message: z.string(),
  schema: z.object({
    type: z.literal("object"),
    properties: z.record(z.string(), QuestionFieldSchema),
    required: z.array(z.string()).optional(),
  }),
  /** Single-use token bound to user, tool, exact input and expiry. */
  confirm: z.string(),
  /** Where the signed-in user can answer in a browser when the client cannot show a form. */
  link: z.string().optional(),
  /**
   * When the client cannot show a form: `link` = the gateway keeps the question and gives the user a dashboard
   * page to answer it (deletes, purchases, removals); `ask_ai` (default) = the AI asks the user and calls again.
   */
  fallback: z.enum(["link", "ask_ai"]).optional(),
  /** ISO 8601 expiry of the confirm token. */
  expiresAt: z.string().optional(),
  /**
   * The rest of the tool's structured result while it waits for the user (e.g. `{ address }`); the gateway
   * adds `status: "needs_user"` and `userAction`, and the whole must match the tool's output schema.
   */
  data: z.record(z.string(), z.unknown()).optional(),
});
export type Question = z.infer<typeof QuestionSchema>;

export const CallErrorSchema = z.object({ code: z.enum(ERROR_CODES), message: z.string() });
export type CallError = z.infer<typeof CallErrorSchema>;

const ResultReplySchema = z.object({
  ok: z.literal(true),
  result: z.object({ text: z.string(), data: z.record(z.string(), z.unknown()) }),
});
const AskReplySchema = z.object({ ok: z.literal(true), ask: QuestionSchema });
/**
 * With an error reply, what this copy reads when the call was in a version it does not (a rolling deploy): the caller
 * signs its context again in the newest of `ctx` it knows and resends.
 */
export const AcceptsSchema = z.object({ ctx: z.array(z.number().int()) });
export type Accepts = z.infer<typeof AcceptsSchema>;
const ErrorReplySchema = z.object({ ok: z.literal(false), error: CallErrorSchema, accepts: AcceptsSchema.optional() });
export const CallReplySchema = z.union([ResultReplySchema, AskReplySchema, ErrorReplySchema]);
export type CallReply = z.infer<typeof CallReplySchema>;
export type AskReply = z.infer<typeof AskReplySchema>;

export function isAskReply(reply: CallReply): reply is AskReply {
  return reply.ok && "ask" in reply;
}

/** Internal request-reply between the gateway and services: `rpc.<service>.<method>`. */
export const RpcRequestSchema = z.object({ ctx: z.string().optional(), input: z.unknown() });
export const RpcReplySchema = z.union([
  z.object({ ok: z.literal(true), result: z.unknown() }),
  z.object({ ok: z.literal(false), error: CallErrorSchema, accepts: AcceptsSchema.optional() }),
]);
export type RpcReply = z.infer<typeof RpcReplySchema>;

/** Header names that travel with every bus message. */
export const HEADER_REQUEST_ID = "hatch-request-id";
export const HEADER_TRACEPARENT = "traceparent";
