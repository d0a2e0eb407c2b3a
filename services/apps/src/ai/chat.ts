import { describeIssues, newEvent } from "@hatch/contracts";
import { AI_LIMITS, AiChatRequestSchema, type AiChatReply, type AiChatRequest } from "../spec/server-code.ts";
import { writeEvent } from "@hatch/platform";
import type { AppsContext } from "../context.ts";
import { DataError } from "../http/answers.ts";
import { ViewerRateLimit } from "../http/caller.ts";
import { outbox } from "../db/schema.ts";
import type { OutboundCaller } from "../http/outbound.ts";
import type { HostedApp } from "../http/site.ts";
import { openKeyFor, type OpenedKey } from "./keys.ts";

// hatch.ai.chat / env.ai.chat: one chat completion from an OpenAI-compatible provider, paid by the app's key choice.
// The key goes into the Authorization header and nowhere else: not into an answer, an error, a log line or an event.
// Provider answers are read for the few fields Hatch passes on; their bodies are never forwarded (a refusal of a key
// often quotes part of it).

export interface AiChatOptions {
  /** Tests shorten the wait; default AI_LIMITS.timeoutSeconds. */
  timeoutMs?: number;
}

/** The largest provider answer read (a chat completion is a few KB; a runaway one is cut off). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export type AiChat = (app: HostedApp, request: AiChatRequest, caller: OutboundCaller) => Promise<AiChatReply>;

export function createAiChat(apps: AppsContext, options: AiChatOptions = {}): AiChat {
  const timeoutMs = options.timeoutMs ?? AI_LIMITS.timeoutSeconds * 1000;
  const log = apps.logger.child({ component: "ai-chat" });
  const limiter = new ViewerRateLimit(apps.rate, {
    perMinute: AI_LIMITS.callsPerViewerPerMinute,
    scope: "ai",
    log,
    refusal: (wait) =>
      `Too many AI calls: at most ${AI_LIMITS.callsPerViewerPerMinute} a minute per viewer of this app. Try again in ${wait} s.`,
  });

  return async (app, request, caller) => {
    const parsed = AiChatRequestSchema.safeParse(request);
    if (!parsed.success) throw new DataError("invalid", `hatch.ai.chat: ${describeIssues(parsed.error)}`);
    const input = parsed.data;
    if (app.ai.choice === "none")
      throw new DataError("forbidden", "AI calls are off for this app; its owner picks a key with tool_ai.");
    await limiter.take(`${app.id} ${caller.viewer ? `u:${caller.viewer.sub}` : (caller.rateKey ?? "anonymous")}`);
    if (app.ai.choice === "company") await checkCompanyTokens(apps, app.accountId);
    const opened = await openKeyFor(apps, app, input.provider);
    const reply = await callProvider(opened, input, timeoutMs, log);
    try {
      await writeEvent(apps.db, outbox, usageEvent(app, caller, opened, reply));
    } catch (error) {
      // The provider has answered (and charged): the viewer gets the answer; the missing record is the operator's to see.
      log.error("AI usage event not written", { app: app.address, provider: opened.provider, error });
    }
    return reply;
  };
}

/** The company's key pays only up to the plan's AI tokens a month (counted by billing from apps.ai.used). */
async function checkCompanyTokens(apps: AppsContext, accountId: string): Promise<void> {
  const entitlements = await apps.entitlements?.get(accountId);
  const limit = entitlements?.limits.companyAiTokensPerMonth;
  if (!entitlements || limit === null || limit === undefined) return;
  const used = entitlements.companyAiTokensThisMonth ?? 0;
  if (used < limit) return;
  const allowed =
    limit === 0
      ? "does not include AI calls through the company's key"
      : `includes ${limit.toLocaleString("en-US")} AI tokens a month through the company's key, and they are used up`;
  throw new DataError(
    "needs_payment",
    `This organization's ${entitlements.plan} plan ${allowed}. An admin can upgrade at ${entitlements.settingsUrl}, or the app's owner can choose another key with tool_ai.`,
  );
}

/** POST {base}/chat/completions in the OpenAI wire format, the provider's failures turned into DataErrors. */
async function callProvider(
  opened: OpenedKey,
  input: AiChatRequest,
  timeoutMs: number,
  log: AppsContext["logger"],
): Promise<AiChatReply> {
  const body: Record<string, unknown> = { model: input.model, messages: input.messages, stream: false };
  if (input.temperature !== undefined) body.temperature = input.temperature;
  if (input.maxTokens !== undefined) body.max_tokens = input.maxTokens;
  const name = opened.provider;
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${opened.baseUrl}/chat/completions`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        Authorization: `Bearer ${opened.key}`,
      },
      body: JSON.stringify(body),
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await readCapped(response);
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === "TimeoutError";
    log.warn("AI provider not reached", { provider: name, timedOut });
    throw new DataError(
      "unavailable",
      timedOut
        ? `The AI provider ${name} did not answer within ${Math.round(timeoutMs / 1000)} s. Try again, or ask for fewer tokens (maxTokens).`
        : `The AI provider ${name} could not be reached. Try again in a moment.`,
      { "Retry-After": "10" },
    );
  }
  if (!response.ok) throw providerRefusal(name, input.model, response, text, log);
  const reply = parseCompletion(text, input.model);
  if (!reply) {
    log.warn("AI provider answer unreadable", { provider: name, status: response.status });
    throw new DataError(
      "unavailable",
      `The AI provider ${name} answered in a shape Hatch cannot read (not an OpenAI-style chat completion).`,
    );
  }
  // Should a provider ever repeat the key back, it still never reaches the page.
  return {
    ...reply,
    content: reply.content.replaceAll(opened.key, "[secret]"),
    model: reply.model.includes(opened.key) ? input.model : reply.model,
  };
}

async function readCapped(response: Response): Promise<string> {
  const bytes = await response.arrayBuffer();
  if (bytes.byteLength > MAX_ANSWER_BYTES) throw new Error("AI provider answer too large");
  return new TextDecoder().decode(bytes);
}

/** A short identifier the provider gave its error (e.g. context_length_exceeded): safe to pass on, unlike its message. */
function errorCodeOf(text: string): string | null {
  try {
    const error = (JSON.parse(text) as { error?: { code?: unknown; type?: unknown } }).error;
    const code = typeof error?.code === "string" ? error.code : typeof error?.type === "string" ? error.type : null;
    return code && /^[a-z][a-z0-9_.-]{0,63}$/i.test(code) ? code : null;
  } catch {
    return null;
  }
}

function providerRefusal(
  name: string,
  model: string,
  response: Response,
  text: string,
  log: AppsContext["logger"],
): DataError {
  const status = response.status;
  const code = errorCodeOf(text);
  const said = code ? ` (${code})` : "";
  log.warn("AI provider refused", { provider: name, status, code });
  if (status === 401 || status === 403) {
    return new DataError(
      "forbidden",
      `The AI provider ${name} refused this app's key (HTTP ${status}${said}). Its owner adds a new ${name} key with ai_key.`,
    );
  }
  if (status === 429) {
    const retry = response.headers.get("retry-after");
    const wait = retry && /^\d{1,5}$/.test(retry) ? retry : "30";
    return new DataError(
      "limit_exceeded",
      `The AI provider ${name} says the key's rate limit or quota is used up${said}. Try again in ${wait} s, or check the plan with ${name}.`,
      { "Retry-After": wait },
    );
  }
  if (status === 404)
    return new DataError(
      "invalid",
      `The AI provider ${name} does not know the model "${model}"${said}. Use one of its model names.`,
    );
  if (status >= 400 && status < 500) {
    return new DataError(
      "invalid",
      `The AI provider ${name} refused the request (HTTP ${status}${said}). Check model, messages, temperature and maxTokens.`,
    );
  }
  return new DataError("unavailable", `The AI provider ${name} failed (HTTP ${status}). Try again in a moment.`, {
    "Retry-After": "10",
  });
}

function parseCompletion(text: string, asked: string): AiChatReply | null {
  let data: {
    model?: unknown;
    choices?: { message?: { content?: unknown } }[];
    usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
  };
  try {
    data = JSON.parse(text);
  } catch {
    return null;
  }
  const content = data?.choices?.[0]?.message?.content;
  if (typeof content !== "string") return null;
  const count = (n: unknown) => (typeof n === "number" && Number.isFinite(n) && n >= 0 ? Math.floor(n) : 0);
  return {
    content,
    model: typeof data.model === "string" && data.model.length <= 200 ? data.model : asked,
    usage: { inputTokens: count(data.usage?.prompt_tokens), outputTokens: count(data.usage?.completion_tokens) },
  };
}

/** `apps.ai.used`: billing counts the tokens; the viewer is the actor when there is one. Never in the activity log. */
function usageEvent(app: HostedApp, caller: OutboundCaller, opened: OpenedKey, reply: AiChatReply) {
  const event = newEvent("apps", null, {
    entity: "ai",
    verb: "used",
    summary: `AI call on ${app.address}: ${reply.model}, ${reply.usage.inputTokens} + ${reply.usage.outputTokens} tokens`,
    app: app.address,
    account: app.accountId,
    org: null,
    details: {
      provider: opened.provider,
      model: reply.model,
      inputTokens: reply.usage.inputTokens,
      outputTokens: reply.usage.outputTokens,
      choice: app.ai.choice,
      payer: opened.payer,
      source: caller.source,
    },
  });
  const viewer = caller.viewer;
  return viewer
    ? { ...event, actor: { userId: viewer.sub, email: viewer.email, name: viewer.name ?? viewer.email } }
    : event;
}
