import { AI_LIMITS, type AiChatRequest } from "../spec/server-code.ts";
import type { AppsConfig } from "../config.ts";
import type { Outbound } from "../http/outbound.ts";
import { checkSameOrigin, type DataCaller } from "../http/caller.ts";
import { DataError, json } from "../http/answers.ts";

// POST /_hatch/ai/chat on an app's origin: hatch.ai.chat from the app's own pages. The caller was checked by
// withCaller (may open the app, not paused, data rate limit); the AI limit and the key are aiChat's.

export async function answerAiChat(
  request: Request,
  caller: DataCaller,
  config: Pick<AppsConfig, "appsProtocol" | "appsDomain">,
  outbound: Outbound,
): Promise<Response> {
  if (request.method !== "POST")
    return json({ error: { code: "invalid", message: "/_hatch/ai/chat answers POST only (hatch.ai.chat)." } }, 405, {
      Allow: "POST",
    });
  // A page of another app shares the viewer cookie and would spend this app's key.
  checkSameOrigin(request, config, caller.app.address);
  // Checked against AiChatRequestSchema by aiChat, which server code calls too.
  const body = (await readJson(request)) as AiChatRequest;
  const reply = await outbound.aiChat(caller.app, body, {
    source: "browser",
    viewer: caller.viewer,
    rateKey: caller.rateKey,
  });
  return json(reply);
}

/** The request's JSON, read up to AI_LIMITS.maxRequestBytes: a bigger body is too_large without being read. */
async function readJson(request: Request): Promise<unknown> {
  const tooLarge = new DataError(
    "too_large",
    `An AI request may be at most ${AI_LIMITS.maxRequestBytes / 1024} KB as JSON. Send fewer or shorter messages.`,
  );
  if (Number(request.headers.get("content-length") ?? 0) > AI_LIMITS.maxRequestBytes) throw tooLarge;
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    for await (const chunk of request.body) {
      size += chunk.byteLength;
      if (size > AI_LIMITS.maxRequestBytes) throw tooLarge;
      chunks.push(chunk);
    }
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks)));
  } catch {
    throw new DataError(
      "invalid",
      'The body is not JSON: send {"model": "…", "messages": [{"role": "user", "content": "…"}]}.',
    );
  }
}
