import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { inputHash, QuestionSchema, type Question } from "@hatch/contracts";
import { z } from "zod";

// The `requestState` of a 2026-07-28 `input_required` answer: what a question to the user needs when the client calls
// again with the answer, sealed with AES-256-GCM under a key derived from the deployment secret. Sealed, not only
// signed: the question carries the service's confirm token and names (members, apps) the client has no use for. It is
// bound to the user and the grant (checked against the bearer of the call that brings it back), the tool, the exact
// arguments (a hash) and an expiry, so any gateway copy can finish the call and nobody else can.
// The same sealing carries a page offered by URL-mode input (secret, key and card pages): the tool has already done its
// part, so the state holds its result, which the call that brings the user's choice back returns.

/** How long a question waits for its answer (the service's confirm token has its own, equal expiry). */
export const REQUEST_STATE_TTL_SECONDS = 600;

const StateSchema = z.object({
  v: z.literal(1),
  sub: z.string(),
  grant: z.string(),
  tool: z.string(),
  /** sha256 of the canonical JSON of the validated arguments. */
  h: z.string(),
  exp: z.number(),
  /** A question to the user (form), or… */
  question: QuestionSchema.optional(),
  /** …a page offered to the user (URL mode): the tool's result, returned once the user has chosen. */
  offer: z
    .object({
      url: z.string(),
      message: z.string(),
      result: z.object({
        content: z.array(z.record(z.string(), z.unknown())),
        structuredContent: z.record(z.string(), z.unknown()).optional(),
      }),
    })
    .optional(),
});
export type SealedQuestion = z.infer<typeof StateSchema>;
export type SealedOffer = NonNullable<SealedQuestion["offer"]>;

export interface QuestionBinding {
  sub: string;
  grant: string;
  tool: string;
  input: unknown;
}

/** Why a requestState was refused; never shown to the client beyond "invalid or expired". */
export type StateRefusal = "malformed" | "expired" | "user" | "tool" | "arguments";

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The version prefix of the wire string, so a later format can be told apart. */
const PREFIX = "h1.";

export function sealQuestion(
  key: Buffer,
  binding: QuestionBinding,
  question: Question,
  nowMs = Date.now(),
  ttlSeconds = REQUEST_STATE_TTL_SECONDS,
): string {
  return seal(key, { ...bound(binding, nowMs, ttlSeconds), question });
}

/** The state of a page offered by URL-mode input: the tool's result waits in it for the user's choice. */
export function sealOffer(
  key: Buffer,
  binding: QuestionBinding,
  offer: SealedOffer,
  nowMs = Date.now(),
  ttlSeconds = REQUEST_STATE_TTL_SECONDS,
): string {
  return seal(key, { ...bound(binding, nowMs, ttlSeconds), offer });
}

function bound(binding: QuestionBinding, nowMs: number, ttlSeconds: number): SealedQuestion {
  return {
    v: 1,
    sub: binding.sub,
    grant: binding.grant,
    tool: binding.tool,
    h: inputHash(binding.input),
    exp: Math.floor(nowMs / 1000) + ttlSeconds,
  };
}

function seal(key: Buffer, state: SealedQuestion): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(state), "utf8"), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** Opens a sealed state: integrity and expiry only (who may use it is `checkBinding`'s). */
export function openQuestion(key: Buffer, wire: string, nowMs = Date.now()): SealedQuestion | StateRefusal {
  if (typeof wire !== "string" || !wire.startsWith(PREFIX) || wire.length > 64_000) return "malformed";
  const raw = Buffer.from(wire.slice(PREFIX.length), "base64url");
  if (raw.length <= IV_BYTES + TAG_BYTES) return "malformed";
  let text: string;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    return "malformed";
  }
  let parsed: ReturnType<typeof StateSchema.safeParse>;
  try {
    parsed = StateSchema.safeParse(JSON.parse(text));
  } catch {
    return "malformed";
  }
  if (!parsed.success || (parsed.data.question === undefined) === (parsed.data.offer === undefined)) return "malformed";
  if (parsed.data.exp * 1000 <= nowMs) return "expired";
  return parsed.data;
}

/** The state answers this call: same user, same grant, same tool, same arguments. */
export function checkBinding(state: SealedQuestion, binding: QuestionBinding): StateRefusal | null {
  if (state.sub !== binding.sub || state.grant !== binding.grant) return "user";
  if (state.tool !== binding.tool) return "tool";
  if (state.h !== inputHash(binding.input)) return "arguments";
  return null;
}
