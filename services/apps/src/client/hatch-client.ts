// Hatch's browser library: the app's data on its own origin (/_hatch/…). Served by serve.ts as a classic script
// (/_hatch/client.js, defines window.hatch) and as an ES module (/_hatch/client.mjs). It runs in browsers: no imports
// at run time (the type import below is erased), no Bun or Node APIs. Types: hatch.d.ts (served as client.d.ts).
import type {
  AiChatReply,
  AiChatRequest,
  ApiInit,
  Bucket,
  ChangeEvent,
  Collection,
  Hatch,
  HatchAi,
  HatchError,
  HatchErrorCode,
  HatchUser,
  ListOptions,
} from "./hatch.d.ts";

const CODES: readonly HatchErrorCode[] = [
  "forbidden",
  "not_found",
  "invalid",
  "too_large",
  "limit_exceeded",
  "needs_payment",
  "unavailable",
];
const CODE_OF_STATUS: Record<number, HatchErrorCode> = {
  400: "invalid",
  402: "needs_payment",
  403: "forbidden",
  404: "not_found",
  405: "invalid",
  413: "too_large",
  429: "limit_exceeded",
};

function hatchError(code: HatchErrorCode, message: string, status: number): HatchError {
  const error = new Error(message) as HatchError;
  error.name = "HatchError";
  error.code = code;
  error.status = status;
  return error;
}

const unreachable = () =>
  hatchError("unavailable", "Could not reach the app's server. Check the connection and try again.", 0);

/** The error an answer carries: its `{ error: { code, message } }` when it has one, else one made from the status. */
function errorOf(status: number, body: unknown): HatchError {
  const given = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = CODES.includes(given?.code as HatchErrorCode)
    ? (given!.code as HatchErrorCode)
    : (CODE_OF_STATUS[status] ?? "unavailable");
  const message =
    typeof given?.message === "string" && given.message
      ? given.message
      : `The app's server answered HTTP ${status}. Try again in a moment.`;
  return hatchError(code, message, status);
}

async function call<T>(method: string, path: string, body?: BodyInit, contentType?: string): Promise<T> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(path, {
      method,
      body,
      headers: contentType ? { "Content-Type": contentType } : {},
      credentials: "same-origin",
    });
    text = await response.text();
  } catch {
    throw unreachable();
  }
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    throw errorOf(response.status, null);
  }
  if (!response.ok) throw errorOf(response.status, data);
  return data as T;
}

const sendJson = <T>(method: string, path: string, value: unknown) =>
  call<T>(method, path, JSON.stringify(value), "application/json");
const part = encodeURIComponent;

function query(values: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && value !== null)
      params.set(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

function me(): Promise<HatchUser | null> {
  return call<HatchUser | null>("GET", "/_hatch/me");
}

function signIn(): void {
  location.href = `/_hatch/signin?path=${part(location.pathname + location.search)}`;
}

function db<T extends object>(name: string): Collection<T> {
  const base = `/_hatch/db/${part(name)}`;
  return {
    add: (doc) => sendJson("POST", base, doc),
    get: (id) => call("GET", `${base}/${part(id)}`),
    list: (options: ListOptions = {}) =>
      call(
        "GET",
        base + query({ where: options.where, orderBy: options.orderBy, limit: options.limit, after: options.after }),
      ),
    update: (id, patch) => sendJson("PATCH", `${base}/${part(id)}`, patch),
    remove: (id) => call("DELETE", `${base}/${part(id)}`),
    subscribe: (callback, onError) => subscribe<T>(`${base}/_changes`, callback, onError),
  };
}

/**
 * Live changes over server-sent events. EventSource reconnects by itself after a dropped connection; when it gives up
 * (the server refused the stream), one plain request learns why, so `onError` gets the server's code and message.
 */
function subscribe<T extends object>(
  path: string,
  callback: (change: ChangeEvent<T>) => void,
  onError?: (error: HatchError) => void,
): () => void {
  const source = new EventSource(path);
  let open = true;
  source.addEventListener("change", (event) => {
    let change: ChangeEvent<T>;
    try {
      change = JSON.parse((event as MessageEvent<string>).data) as ChangeEvent<T>;
    } catch {
      return;
    }
    if (open) callback(change);
  });
  source.addEventListener("error", () => {
    if (source.readyState !== EventSource.CLOSED || !open) return;
    const controller = new AbortController();
    fetch(path, { credentials: "same-origin", signal: controller.signal })
      .then(async (response) => {
        const body: unknown = response.ok ? null : await response.json().catch(() => null);
        controller.abort();
        throw response.ok ? unreachable() : errorOf(response.status, body);
      })
      .catch((error: HatchError) => {
        if (open && onError) onError(error.code ? error : unreachable());
      });
  });
  return () => {
    open = false;
    source.close();
  };
}

function files(name: string): Bucket {
  const base = `/_hatch/files/${part(name)}`;
  const url = (id: string) => `${base}/${part(id)}`;
  return {
    upload: (file, options = {}) => {
      const fileName = options.name || (file as File).name || "file";
      return call("POST", base + query({ name: fileName }), file, file.type || "application/octet-stream");
    },
    list: (options = {}) => call("GET", base + query({ limit: options.limit, after: options.after })),
    url,
    remove: (id) => call("DELETE", url(id)),
  };
}

/**
 * A call to an API declared in service.json `apis`, through the app host, which adds the secret. Resolves to the API's
 * own answer (any status); rejects with a HatchError only when Hatch itself refused (its answers carry X-Hatch-Error).
 */
async function api(name: string, path = "", init: ApiInit = {}): Promise<Response> {
  const rest = path === "" || path.startsWith("/") || path.startsWith("?") ? path : `/${path}`;
  let response: Response;
  try {
    response = await fetch(`/_hatch/api/${part(name)}${rest}`, {
      method: init.method ?? "GET",
      headers: init.headers,
      body: init.body,
      signal: init.signal,
      credentials: "same-origin",
    });
  } catch (error) {
    if ((error as Error | null)?.name === "AbortError") throw error;
    throw unreachable();
  }
  if (!response.headers.has("X-Hatch-Error")) return response;
  throw errorOf(response.status, await response.json().catch(() => null));
}

/** AI calls through the app host, paid by the app's AI key choice; the key never reaches the page. */
const ai: HatchAi = {
  chat: (request: AiChatRequest) => sendJson<AiChatReply>("POST", "/_hatch/ai/chat", request),
};

const hatch: Hatch = { me, signIn, db, files, api, ai };

export { hatch as default, me, signIn, db, files, api, ai };
