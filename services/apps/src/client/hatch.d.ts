// Types of Hatch's browser library, served as /_hatch/client.d.ts on every app origin.
// <script src="/_hatch/client.js"> defines the global `hatch`; `import hatch from "/_hatch/client.mjs"` gives the same
// object (named exports: me, signIn, db, files, api, ai). Save this file in a TypeScript project (e.g. src/hatch.d.ts) to type
// the global, and import its types: `import type { HatchDocument } from "./hatch"`.

/** The codes every failure carries as `error.code`. */
export type HatchErrorCode =
  | "forbidden"
  | "not_found"
  | "invalid"
  | "too_large"
  | "limit_exceeded"
  | "needs_payment"
  | "unavailable";

/** What every promise of the library rejects with: an Error with the server's message and a code. */
export interface HatchError extends Error {
  name: "HatchError";
  code: HatchErrorCode;
  /** The HTTP status; 0 when the server could not be reached. */
  status: number;
}

/** The signed-in viewer of this app. */
export interface HatchUser {
  email: string;
  name: string | null;
}

/** The fields an app writes: a JSON object (top-level names: letters, digits and _, not starting with a digit). */
export type Fields = Record<string, unknown>;

/** A stored document: the app's fields plus what Hatch keeps (never written by the app). */
export type HatchDocument<T extends object = Fields> = T & {
  id: string;
  /** ISO 8601. */
  createdAt: string;
  updatedAt: string;
  /** The email of the signed-in viewer who added it; null when added without signing in. */
  createdBy: string | null;
};

export type WhereValue = string | number | boolean | null;
/** A range on strings or numbers; it matches values of the same JSON type only. */
export interface WhereRange {
  "<"?: string | number;
  "<="?: string | number;
  ">"?: string | number;
  ">="?: string | number;
  "=="?: WhereValue;
}
/** Field → value (equal) or range; every condition must hold. Fields: the app's own, createdAt, updatedAt, createdBy. */
export type Where = Record<string, WhereValue | WhereRange>;

export interface ListOptions {
  where?: Where;
  /** A field, oldest/smallest first; "-field" for newest/largest first. Default "createdAt". */
  orderBy?: string;
  /** Documents per page: default 20, at most 100. */
  limit?: number;
  /** The `next` of the previous page. */
  after?: string | null;
}

export interface DocumentPage<T extends object = Fields> {
  documents: HatchDocument<T>[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

/** A live change of a collection; `document` is absent for "removed". */
export interface ChangeEvent<T extends object = Fields> {
  type: "added" | "updated" | "removed";
  id: string;
  document?: HatchDocument<T>;
}

export interface Removed {
  id: string;
  removed: true;
}

/** A collection declared in service.json `collections`. */
export interface Collection<T extends object = Fields> {
  add(doc: T): Promise<HatchDocument<T>>;
  get(id: string): Promise<HatchDocument<T>>;
  list(options?: ListOptions): Promise<DocumentPage<T>>;
  /** Sets the given top-level fields (the rest stay); id, createdAt, updatedAt and createdBy are ignored. */
  update(id: string, patch: Partial<HatchDocument<T>>): Promise<HatchDocument<T>>;
  remove(id: string): Promise<Removed>;
  /** Calls `callback` for each change from now on; returns a function that stops it. `onError` hears a refusal. */
  subscribe(callback: (change: ChangeEvent<T>) => void, onError?: (error: HatchError) => void): () => void;
}

export interface HatchFile {
  id: string;
  name: string;
  /** Bytes. */
  size: number;
  contentType: string;
  createdAt: string;
  createdBy: string | null;
  /** Where the file is served on this origin, e.g. for <img src>. */
  url: string;
}

export interface UploadOptions {
  /** The file's name; default the File's own name. */
  name?: string;
}

export interface FilePage {
  files: HatchFile[];
  next: string | null;
}

/** A bucket declared in service.json `buckets`. */
export interface Bucket {
  upload(file: Blob, options?: UploadOptions): Promise<HatchFile>;
  /** Newest first. */
  list(options?: { limit?: number; after?: string | null }): Promise<FilePage>;
  /** The file's address on this origin (synchronous; nothing is fetched). */
  url(id: string): string;
  remove(id: string): Promise<Removed>;
}

/** What hatch.api() takes besides the name and path (like fetch's init). */
export interface ApiInit {
  /** Default GET. */
  method?: string;
  /** Sent on: Accept, Accept-Language, Content-Type, Content-Language, If-Match, If-None-Match, If-Modified-Since, Prefer and X-* headers; never cookies. */
  headers?: HeadersInit;
  body?: BodyInit | null;
  signal?: AbortSignal;
}

/** One chat message, OpenAI style. */
export interface AiMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface AiChatRequest {
  messages: AiMessage[];
  /** The provider's model name, e.g. "gpt-4o-mini". */
  model: string;
  /** Which of the app's keys to use (e.g. "openai"); default: its only key, else the oldest. */
  provider?: string;
  /** 0 to 2. */
  temperature?: number;
  /** The most tokens the answer may have. */
  maxTokens?: number;
}

export interface AiChatReply {
  /** The assistant's answer. */
  content: string;
  /** The model that answered, as the provider names it. */
  model: string;
  usage: { inputTokens: number; outputTokens: number };
}

/** AI calls paid by the app's AI key choice (tool_ai); the key stays on Hatch. */
export interface HatchAi {
  chat(request: AiChatRequest): Promise<AiChatReply>;
}

export interface Hatch {
  /** The signed-in viewer, or null (on a public app: until they agreed to share their name and email with it). */
  me(): Promise<HatchUser | null>;
  /** Goes to Hatch's sign-in (on a public app, also the page where the viewer agrees) and comes back to this page. */
  signIn(): void;
  db<T extends object = Fields>(name: string): Collection<T>;
  files(name: string): Bucket;
  /**
   * Calls the API named in service.json `apis`: `path` (with an optional query) is appended to its base url, and the
   * app host adds the secret, which the page never sees. Resolves to the API's own answer, whatever its status;
   * rejects with a HatchError when Hatch refused (unknown API, secret not set, not allowed, too large, timeout).
   */
  api(name: string, path?: string, init?: ApiInit): Promise<Response>;
  ai: HatchAi;
}

declare const hatch: Hatch;
export default hatch;
export declare const me: Hatch["me"];
export declare const signIn: Hatch["signIn"];
export declare const db: Hatch["db"];
export declare const files: Hatch["files"];
export declare const api: Hatch["api"];
export declare const ai: Hatch["ai"];

declare global {
  /** Defined by <script src="/_hatch/client.js">. */
  var hatch: Hatch;
}
