import { DATA_LIMITS, type CollectionOperation, type DataRule } from "../spec/data-rules.ts";
import { allows, refusal } from "../http/rules.ts";
import { checkSameOrigin, type DataCaller } from "../http/caller.ts";
import { DataError, json, methodNotAllowed } from "../http/answers.ts";
import { storageLimitOf } from "./storage-limit.ts";
import {
  addDocument,
  appFields,
  getDocument,
  listDocuments,
  removeDocument,
  updateDocument,
  type ListedDocument,
  type StoredDocument,
} from "./documents.ts";
import type { ChangeType } from "./live.ts";
import { DOCUMENT_ID, parseListQuery } from "./query.ts";
import { type DataRequest } from "./request.ts";

// `/_hatch/db/<collection>[/<id> | /_changes]`: the documents of an app's collections, under the rules of the
// current version's service.json, for the viewer the app host verified (see data-api in the developer reference).

type Rules = Record<CollectionOperation, DataRule>;

/** A body holds one document (at most maxDocumentBytes as compact JSON) plus meta keys and whitespace. */
const MAX_BODY_BYTES = 2 * DATA_LIMITS.maxDocumentBytes + 4096;

export async function answerCollections(req: DataRequest): Promise<Response> {
  const { request, rest, caller } = req;
  if (request.method !== "GET") checkSameOrigin(request, req.deps.ctx.config, caller.app.address);
  const [name = "", id, ...more] = rest.split("/");
  const rules = declaredCollection(caller, name);
  if (id === undefined) {
    if (request.method === "GET") return list(req, name, rules);
    if (request.method === "POST") return add(req, name, rules);
    return methodNotAllowed("GET, POST");
  }
  if (more.length === 0 && id === "_changes") {
    if (request.method !== "GET") return methodNotAllowed("GET");
    return changes(req, name, rules);
  }
  if (more.length > 0 || !DOCUMENT_ID.test(id)) throw missing(name, id);
  if (request.method === "GET") return get(req, name, rules, id);
  if (request.method === "PATCH") return update(req, name, rules, id);
  if (request.method === "DELETE") return remove(req, name, rules, id);
  return methodNotAllowed("GET, PATCH, DELETE");
}

function declaredCollection(caller: DataCaller, name: string): Rules {
  const declared = caller.app.site?.collections;
  const rules = declared?.get(name);
  if (rules) return rules;
  const names = declared ? [...declared.keys()].sort() : [];
  throw new DataError(
    "not_found",
    names.length
      ? `This app has no collection "${name.slice(0, 64)}"; its service.json declares ${names.map((n) => `"${n}"`).join(", ")}.`
      : `This app declares no collections: add "collections" to its service.json (e.g. {"collections": {"todos": {"read": "anyone", "create": "signed_in"}}}) and publish again.`,
  );
}

function missing(name: string, id: string): DataError {
  return new DataError("not_found", `There is no document "${id.slice(0, 64)}" in ${name}. It may have been removed.`);
}

/** The read rule for this caller: refuses, or answers the user id the reads are limited to (`creator`), or null. */
function readerOf(rules: Rules, caller: DataCaller, action = "read this collection"): string | null {
  const allowed = allows(rules.read, caller);
  if (!allowed) throw refusal(rules.read, caller, action);
  return allowed === "creator" ? caller.viewer!.sub : null;
}

/** The document as pages see it: meta keys first, then the app's fields. createdAt / updatedAt in milliseconds. */
function wire(document: StoredDocument): Record<string, unknown> {
  return {
    id: document.id,
    createdAt: `${document.createdAt.slice(0, 23)}Z`,
    updatedAt: `${document.updatedAt.slice(0, 23)}Z`,
    createdBy: document.createdByEmail,
    ...document.data,
  };
}

const JSON_HEADERS = {
  "Content-Type": "application/json; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
};

/** A list page as JSON text: each document's fields are copied from Postgres's JSON text, never parsed (the hot path). */
function listAnswer(documents: ListedDocument[], next: string | null): Response {
  let body = '{"documents":[';
  for (const [index, document] of documents.entries()) {
    const fields = document.dataJson.length > 2 ? `,${document.dataJson.slice(1, -1)}` : "";
    body += `${index ? "," : ""}{"id":${JSON.stringify(document.id)},"createdAt":"${document.createdAt.slice(0, 23)}Z","updatedAt":"${document.updatedAt.slice(0, 23)}Z","createdBy":${JSON.stringify(document.createdByEmail)}${fields}}`;
  }
  return new Response(`${body}],"next":${JSON.stringify(next)}}`, { headers: JSON_HEADERS });
}

/** Tells open streams (on every instance) about a committed change. */
function announce(
  req: DataRequest,
  collection: string,
  type: ChangeType,
  id: string,
  creator: string | null,
  document?: Record<string, unknown>,
): void {
  req.deps.live.publish({ appId: req.caller.app.id, collection, type, id, creator, ...(document ? { document } : {}) });
}

async function list(req: DataRequest, name: string, rules: Rules): Promise<Response> {
  const onlyCreator = readerOf(rules, req.caller);
  const query = parseListQuery(req.url.searchParams);
  const page = await listDocuments(req.deps.ctx.db, { appId: req.caller.app.id, collection: name }, query, onlyCreator);
  return listAnswer(page.documents, page.next);
}

async function get(req: DataRequest, name: string, rules: Rules, id: string): Promise<Response> {
  const onlyCreator = readerOf(rules, req.caller);
  const document = await getDocument(req.deps.ctx.db, { appId: req.caller.app.id, collection: name }, id);
  // Under `creator` another viewer's document is as good as missing: its existence is not told.
  if (!document || (onlyCreator !== null && document.createdBy !== onlyCreator)) throw missing(name, id);
  return json(wire(document));
}

async function add(req: DataRequest, name: string, rules: Rules): Promise<Response> {
  const { caller } = req;
  if (!allows(rules.create, caller)) throw refusal(rules.create, caller, `add documents to ${name}`);
  const fields = appFields(await readObject(req.request));
  const storage = await storageLimitOf(req.deps.ctx, caller.app.accountId);
  const author = caller.viewer ? { sub: caller.viewer.sub, email: caller.viewer.email } : null;
  const document = await addDocument(
    req.deps.ctx.db,
    { appId: caller.app.id, collection: name },
    fields,
    author,
    storage,
  );
  const answer = wire(document);
  announce(req, name, "added", document.id, document.createdBy, answer);
  return json(answer, 201);
}

async function update(req: DataRequest, name: string, rules: Rules, id: string): Promise<Response> {
  const { caller } = req;
  const allowed = allows(rules.update, caller);
  if (!allowed) throw refusal(rules.update, caller, `change documents of ${name}`);
  const patch = appFields(await readObject(req.request));
  const storage = await storageLimitOf(req.deps.ctx, caller.app.accountId);
  const onlyCreator = allowed === "creator" ? caller.viewer!.sub : null;
  const result = await updateDocument(
    req.deps.ctx.db,
    { appId: caller.app.id, collection: name },
    id,
    patch,
    onlyCreator,
    storage,
  );
  if (typeof result === "string") throw refusedChange(result, rules, caller, name, id, "change this document");
  const answer = wire(result);
  announce(req, name, "updated", id, result.createdBy, answer);
  return json(answer);
}

async function remove(req: DataRequest, name: string, rules: Rules, id: string): Promise<Response> {
  const { caller } = req;
  const allowed = allows(rules.delete, caller);
  if (!allowed) throw refusal(rules.delete, caller, `remove documents of ${name}`);
  const onlyCreator = allowed === "creator" ? caller.viewer!.sub : null;
  const result = await removeDocument(req.deps.ctx.db, { appId: caller.app.id, collection: name }, id, onlyCreator);
  if (typeof result === "string") throw refusedChange(result, rules, caller, name, id, "remove this document");
  announce(req, name, "removed", id, result.createdBy);
  return json({ id, removed: true });
}

/** Someone else's document under a `creator` rule: forbidden when the viewer may read it, else as if missing. */
function refusedChange(
  result: "missing" | "not_creator",
  rules: Rules,
  caller: DataCaller,
  name: string,
  id: string,
  action: string,
): DataError {
  if (result === "not_creator" && allows(rules.read, caller) === true) return refusal("creator", caller, action);
  return missing(name, id);
}

function changes(req: DataRequest, name: string, rules: Rules): Response {
  const { caller, deps, request } = req;
  const onlyCreator = readerOf(rules, caller, "follow changes of this collection");
  deps.keepOpen?.(request);
  return deps.live.stream({
    appId: caller.app.id,
    collection: name,
    holder: caller.rateKey,
    onlyCreator,
    signal: request.signal,
    // The viewer, the app and its rules are checked again while the stream is open (the browser reconnects).
    async recheck() {
      const again = await deps.recheck(request, caller);
      if (!again) return null;
      const now = again.app.site?.collections.get(name);
      const allowed = now ? allows(now.read, again) : false;
      if (!allowed) return null;
      return { onlyCreator: allowed === "creator" ? again.viewer!.sub : null };
    },
  });
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The request's JSON object, read up to a bound: a bigger body is too_large without being read. */
async function readObject(request: Request): Promise<Record<string, unknown>> {
  // Made only when thrown: an error's stack costs more than reading a small body.
  const tooLarge = () =>
    new DataError(
      "too_large",
      `A document may be at most ${DATA_LIMITS.maxDocumentBytes} bytes as JSON. Keep big things in a file bucket and store its id.`,
    );
  const length = request.headers.get("content-length");
  if (Number(length ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  let bytes: Uint8Array;
  // With a Content-Length the server reads no more than it says: read natively at once (a stream's chunks cost more).
  if (length !== null || !request.body) bytes = await request.bytes();
  else {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of request.body) {
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) throw tooLarge();
      chunks.push(chunk);
    }
    bytes = Buffer.concat(chunks);
  }
  let body: unknown;
  try {
    body = JSON.parse(UTF8.decode(bytes));
  } catch {
    throw new DataError("invalid", 'The body is not JSON: send a JSON object like {"title": "Milk", "done": false}.');
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new DataError(
      "invalid",
      'A document is a JSON object like {"title": "Milk", "done": false}, not an array, string, number or null.',
    );
  }
  return body as Record<string, unknown>;
}
