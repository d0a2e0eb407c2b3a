// Typecheck only (never run): the browser library used the way the developer reference shows it, against the
// hand-written types (hatch.d.ts), and the implementation checked against those types. `bun run typecheck` fails when
// the reference's usage, the declared types and the implementation drift apart.
import type * as Declared from "../src/client/hatch.d.ts";
import type {
  AiChatReply,
  AiChatRequest,
  ChangeEvent,
  DocumentPage,
  HatchDocument,
  HatchError,
  HatchFile,
  HatchUser,
  ListOptions,
  Removed,
  Where,
} from "../src/client/hatch.d.ts";
import * as Implemented from "../src/client/hatch-client.ts";

// The module served as /_hatch/client.mjs has every export the types declare, with the declared types.
const sameModule: typeof Declared = Implemented;
void sameModule;

interface Todo {
  text: string;
  done: boolean;
  photo?: string | null;
}

export async function referenceUsage(): Promise<void> {
  // Script tag: the global `hatch`, also on window.
  const viewer: HatchUser | null = await hatch.me();
  if (!viewer) hatch.signIn();
  const name: string | null | undefined = viewer?.name;
  const sameObject: Declared.Hatch = window.hatch;
  void [name, sameObject];

  // Collections.
  const todos = hatch.db<Todo>("todos");
  const added: HatchDocument<Todo> = await todos.add({ text: "Buy milk", done: false });
  const meta: [string, string, string, string | null] = [added.id, added.createdAt, added.updatedAt, added.createdBy];
  const again: HatchDocument<Todo> = await todos.get(added.id);
  const open: Where = { done: false };
  const range: Where = {
    createdAt: { ">=": "2025-01-01T00:00:00Z" },
    text: { "<": "n" },
    priority: { ">": 1, "<=": 5 },
  };
  const options: ListOptions = { where: open, orderBy: "-createdAt", limit: 50 };
  const page: DocumentPage<Todo> = await todos.list(options);
  const next = page.next ? await todos.list({ ...options, after: page.next }) : null;
  const all = await todos.list();
  const texts: string[] = [...page.documents, ...all.documents].map((doc) => doc.text);
  const updated: HatchDocument<Todo> = await todos.update(added.id, { ...again, done: true });
  const patched = await todos.update(added.id, { done: false });
  const removed: Removed = await todos.remove(added.id);
  const stop: () => void = todos.subscribe(
    (change: ChangeEvent<Todo>) => {
      if (change.type === "removed") return void change.id;
      const doc: HatchDocument<Todo> | undefined = change.document;
      void doc?.done;
    },
    (error: HatchError) => void error.code,
  );
  stop();
  const untyped = hatch.db("notes");
  const note = await untyped.add({ title: "Hello", tags: ["a"], nested: { ok: true } });
  void [meta, range, next, texts, updated, patched, removed.removed, note.title];

  // Buckets.
  const photos = hatch.files("photos");
  const input = document.querySelector("input[type=file]") as HTMLInputElement;
  const file: HatchFile = await photos.upload(input.files![0]!);
  const named: HatchFile = await photos.upload(new Blob(["hi"], { type: "text/plain" }), { name: "hi.txt" });
  const src: string = photos.url(file.id);
  const listed = await photos.list({ limit: 10 });
  const more = listed.next ? await photos.list({ after: listed.next }) : null;
  const fields: [string, string, number, string, string, string | null, string] = [
    file.id,
    file.name,
    file.size,
    file.contentType,
    file.createdAt,
    file.createdBy,
    file.url,
  ];
  await photos.remove(named.id);
  void [src, more, fields];

  // Declared APIs: the API's own Response; Hatch's refusals reject with a HatchError.
  const weather: Response = await hatch.api("weather", "/current?city=Paris");
  const forecast: { days: number[] } = await weather.json();
  const posted = await hatch.api("crm", "/contacts", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name: "Ada" }),
  });
  const root: Response = await hatch.api("weather");
  try {
    await hatch.api("weather", "/current");
  } catch (error) {
    void (error as HatchError).code;
  }
  void [forecast.days, posted.status, posted.ok, root.headers.get("content-type")];
  // AI: a chat completion paid by the app's key choice.
  const request: AiChatRequest = {
    model: "gpt-4o-mini",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Name a color." },
    ],
  };
  const reply: AiChatReply = await hatch.ai.chat(request);
  const tuned = await hatch.ai.chat({ ...request, provider: "openai", temperature: 0.2, maxTokens: 100 });
  const usage: [string, string, number, number] = [
    reply.content,
    reply.model,
    reply.usage.inputTokens,
    tuned.usage.outputTokens,
  ];
  void usage;

  // Errors: an Error with a code from the seven.
  try {
    await todos.add({ text: "x", done: false });
  } catch (error) {
    const failure = error as HatchError;
    const code:
      | "forbidden"
      | "not_found"
      | "invalid"
      | "too_large"
      | "limit_exceeded"
      | "needs_payment"
      | "unavailable" = failure.code;
    const isError: Error = failure;
    void [code, isError.message, failure.status];
  }
}

// The ES module: default export and named exports.
export async function moduleUsage(): Promise<void> {
  const { default: hatchModule, me, signIn, db, files, api, ai } = Implemented;
  const viewer = await me();
  if (!viewer) signIn();
  const items = await db<Todo>("todos").list({ limit: 5 });
  const url: string = files("photos").url("abc");
  const answer: Response = await api("weather", "/current", { signal: AbortSignal.timeout(5000) });
  const chatted = await ai.chat({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] });
  void [hatchModule.me, items.documents[0]?.done, url, answer.status, chatted.content];
}
