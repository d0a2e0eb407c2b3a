// A local stand-in for an OpenAI-compatible AI provider, over real HTTP: POST /v1/chat/completions with a bearer key.
// It answers as the real API does: 401 with an error that quotes part of the key (as real providers do, which is why
// Hatch must never forward a provider's error body), 404 model_not_found, and on demand 429 or 500. Tests point
// Hatch at it with AI_PROVIDERS=fake=<url>/v1.

export interface FakeAiRequest {
  authorization: string | null;
  body: {
    model?: string;
    messages?: { role: string; content: string }[];
    temperature?: number;
    max_tokens?: number;
    stream?: boolean;
  };
}

export interface FakeAiProvider {
  /** http://127.0.0.1:<port>/v1 */
  baseUrl: string;
  /** Every chat request received, oldest first. */
  requests: FakeAiRequest[];
  /** Keys it accepts. */
  keys: Set<string>;
  /** The next `times` requests are answered with this status (429 with Retry-After, 500, ...). */
  failNext(status: number, times?: number): void;
  stop(): Promise<void>;
}

/** Known models; any other is answered 404 model_not_found. */
export const FAKE_MODELS = ["fake-small", "fake-large"];

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function errorBody(message: string, type: string, code: string | null) {
  return { error: { message, type, param: null, code } };
}

export function startFakeAiProvider(): FakeAiProvider {
  const requests: FakeAiRequest[] = [];
  const keys = new Set<string>();
  const failures: number[] = [];

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const url = new URL(request.url);
      if (url.pathname !== "/v1/chat/completions" || request.method !== "POST") {
        return Response.json(
          errorBody(`Invalid URL (${request.method} ${url.pathname})`, "invalid_request_error", null),
          { status: 404 },
        );
      }
      const authorization = request.headers.get("authorization");
      let body: FakeAiRequest["body"];
      try {
        body = (await request.json()) as FakeAiRequest["body"];
      } catch {
        return Response.json(
          errorBody("We could not parse the JSON body of your request.", "invalid_request_error", null),
          { status: 400 },
        );
      }
      requests.push({ authorization, body });
      const key = authorization?.startsWith("Bearer ") ? authorization.slice(7) : "";
      if (!keys.has(key)) {
        const shown = key.length > 8 ? `${key.slice(0, 6)}*****${key.slice(-4)}` : key;
        return Response.json(
          errorBody(
            `Incorrect API key provided: ${shown}. You can find your API key in your account settings.`,
            "invalid_request_error",
            "invalid_api_key",
          ),
          { status: 401 },
        );
      }
      const failure = failures.shift();
      if (failure === 429) {
        return Response.json(
          errorBody(`Rate limit reached for ${key}: try again in 7s.`, "requests", "rate_limit_exceeded"),
          { status: 429, headers: { "Retry-After": "7" } },
        );
      }
      if (failure)
        return Response.json(
          errorBody("The server had an error while processing your request.", "server_error", null),
          { status: failure },
        );
      if (!body.model || !FAKE_MODELS.includes(body.model)) {
        return Response.json(
          errorBody(
            `The model \`${body.model}\` does not exist or you do not have access to it.`,
            "invalid_request_error",
            "model_not_found",
          ),
          { status: 404 },
        );
      }
      const messages = body.messages ?? [];
      const last = messages.at(-1)?.content ?? "";
      const content = `echo: ${last}`;
      const promptTokens = messages.reduce((sum, m) => sum + words(m.content), 0);
      return Response.json({
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: `${body.model}-2026-01-01`,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: words(content),
          total_tokens: promptTokens + words(content),
        },
      });
    },
  });

  return {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    requests,
    keys,
    failNext(status, times = 1) {
      for (let i = 0; i < times; i++) failures.push(status);
    },
    async stop() {
      await server.stop(true);
    },
  };
}
