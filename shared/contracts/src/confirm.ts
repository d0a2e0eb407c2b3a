import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { Question } from "./envelope.ts";
import { openPayload, signPayload } from "./signed.ts";

// Confirm tokens: what a service hands out with a question (`ask`) and checks when the answer comes back.
// A token is bound to the user, the tool, the exact input and an expiry; the service makes it single use by
// recording its id in its own database in the same transaction as the action (see `consumeConfirm`).

export const CONFIRM_TTL_SECONDS = 600;

const ClaimsSchema = z.object({
  v: z.literal(1),
  id: z.string(),
  sub: z.string(),
  tool: z.string(),
  /** sha256 of the canonical JSON of the validated input. */
  h: z.string(),
  exp: z.number(),
});
export type ConfirmClaims = z.infer<typeof ClaimsSchema>;

/** JSON with object keys sorted at every level, so equal inputs hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

export function inputHash(input: unknown): string {
  return createHash("sha256").update(canonicalJson(input)).digest("base64url");
}

export interface ConfirmBinding {
  sub: string;
  tool: string;
  input: unknown;
}

export function issueConfirm(
  key: Buffer,
  binding: ConfirmBinding,
  nowMs = Date.now(),
  ttlSeconds = CONFIRM_TTL_SECONDS,
): { token: string; claims: ConfirmClaims } {
  const claims: ConfirmClaims = {
    v: 1,
    id: randomBytes(16).toString("base64url"),
    sub: binding.sub,
    tool: binding.tool,
    h: inputHash(binding.input),
    exp: Math.floor(nowMs / 1000) + ttlSeconds,
  };
  return { token: signPayload(claims, key), claims };
}

export type ConfirmCheck =
  | { ok: true; claims: ConfirmClaims }
  | { ok: false; reason: "invalid" | "mismatch" | "expired" };

/** Checks signature, binding and expiry. Single use is the caller's part (`consumeConfirm`). Never throws. */
export function checkConfirm(key: Buffer, token: string, binding: ConfirmBinding, nowMs = Date.now()): ConfirmCheck {
  const claims = ClaimsSchema.safeParse(openPayload(token, key));
  if (!claims.success) return { ok: false, reason: "invalid" };
  const c = claims.data;
  if (c.sub !== binding.sub || c.tool !== binding.tool || c.h !== inputHash(binding.input))
    return { ok: false, reason: "mismatch" };
  if (c.exp * 1000 < nowMs) return { ok: false, reason: "expired" };
  return { ok: true, claims: c };
}

/** What a refused confirmation tells the AI; nothing was changed in any of these cases. */
export function confirmProblem(reason: "invalid" | "mismatch" | "expired" | "used"): string {
  switch (reason) {
    case "expired":
      return "The user's confirmation has expired (they have 10 minutes). Call the tool again without an answer to ask them anew. Nothing was changed.";
    case "used":
      return "This confirmation was already used. Call the tool again without an answer to ask the user anew. Nothing was changed.";
    case "mismatch":
      return "This confirmation was given for another user, tool or input. Call the tool again without an answer to ask the user anew. Nothing was changed.";
    case "invalid":
      return "This confirmation is not valid. Call the tool again without an answer to ask the user anew. Nothing was changed.";
  }
}

export interface QuestionOptions {
  message: string;
  properties: Question["schema"]["properties"];
  required?: string[];
  /** When the client cannot show a form: `link` = the user answers on a dashboard page; `ask_ai` = the AI asks. */
  fallback: "link" | "ask_ai";
  /** The rest of the tool's structured result while it waits (e.g. `{ address }`). */
  data?: Record<string, unknown>;
}

/** Builds a question with a fresh confirm token bound to this user, tool and input. */
export function buildQuestion(
  key: Buffer,
  binding: ConfirmBinding,
  options: QuestionOptions,
  nowMs = Date.now(),
): Question {
  const { token, claims } = issueConfirm(key, binding, nowMs);
  return {
    message: options.message,
    schema: {
      type: "object",
      properties: options.properties,
      ...(options.required ? { required: options.required } : {}),
    },
    confirm: token,
    fallback: options.fallback,
    expiresAt: new Date(claims.exp * 1000).toISOString(),
    ...(options.data ? { data: options.data } : {}),
  };
}
