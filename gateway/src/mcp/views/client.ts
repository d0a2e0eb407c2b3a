/// <reference lib="dom" />
// The script of every Hatch view, bundled for the browser by document.ts. It speaks MCP Apps to the host through the
// extension's own App class: the tool's result arrives as a notification, and its view's markup (drawn on the gateway
// by the dashboard's functions, see definitions.ts) goes on the page. Actions are tool calls through the host.
import { App } from "@modelcontextprotocol/ext-apps";

type Result = {
  content?: Array<{ type: string; text?: string }>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
};
type ViewMeta = { html?: string; rows?: string; newest?: number };

const VIEW_META_KEY = "dev.hatch/view";
const FOLLOW_EVERY_MS = 3_000;

const root = document.getElementById("view") as HTMLElement;
const status = document.getElementById("status") as HTMLElement;
const app = new App({ name: "Hatch views", version: "1.0.0" }, {}, { autoResize: true });

const viewOf = (result: Result): ViewMeta | undefined => result._meta?.[VIEW_META_KEY] as ViewMeta | undefined;
const textOf = (result: Result) =>
  (result.content ?? [])
    .map((c) => (c.type === "text" ? (c.text ?? "") : ""))
    .join("\n")
    .trim();

/** A result on the page: its view (a refusal's is its words for a person), or its text where it has none. */
function show(result: Result): void {
  stopFollowing();
  const markup = viewOf(result)?.html;
  if (markup) {
    root.innerHTML = markup;
    enhance(root);
    return;
  }
  const message = document.createElement("p");
  message.className = result.isError ? "error" : "";
  if (result.isError) message.setAttribute("role", "alert");
  message.textContent = textOf(result) || "Nothing to show.";
  root.replaceChildren(message);
}

async function call(name: string, args: Record<string, unknown>): Promise<Result> {
  return (await app.callServerTool({ name, arguments: args })) as Result;
}

function say(text: string): void {
  status.textContent = text;
}

/** What the markup asks for: copy buttons, forms that call tools, links that open through the host, following. */
function enhance(scope: HTMLElement): void {
  for (const el of scope.querySelectorAll<HTMLElement>(".copy:not(button), pre")) addCopyButton(el);
  // A host's frame may refuse form submission altogether (a sandbox without allow-forms fires no submit): the
  // button's click calls the tool, and the submit event (Enter in a field, where forms are allowed) does the same.
  for (const form of scope.querySelectorAll<HTMLFormElement>("form[data-tool]")) {
    const send = (event: Event) => {
      event.preventDefault();
      void submit(form);
    };
    form.addEventListener("submit", send);
    for (const button of form.querySelectorAll("button")) button.addEventListener("click", send);
  }
  for (const box of scope.querySelectorAll<HTMLInputElement>("input[data-follow]")) {
    box.addEventListener("change", () => (box.checked ? startFollowing(box) : stopFollowing("Stopped following.")));
  }
}

async function submit(form: HTMLFormElement): Promise<void> {
  const args: Record<string, unknown> = JSON.parse(form.dataset.args ?? "{}");
  for (const field of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>("[name]")) {
    if (field.value === "") continue;
    args[field.name] = field.hasAttribute("data-number") ? Number(field.value) : field.value;
  }
  const button = form.querySelector("button");
  if (button) button.disabled = true;
  root.setAttribute("aria-busy", "true");
  try {
    show(await call(form.dataset.tool ?? "", args));
    say("Updated.");
  } catch (error) {
    say(`That did not work: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    root.removeAttribute("aria-busy");
    if (button?.isConnected) button.disabled = false;
  }
}

let following: ReturnType<typeof setInterval> | null = null;

function stopFollowing(words?: string): void {
  if (following) clearInterval(following);
  following = null;
  if (words) say(words);
}

/** Polls the box's tool while the view is visible; each answer's rows go at the end of the list it names. */
function startFollowing(box: HTMLInputElement): void {
  const list = document.getElementById(box.dataset.into ?? "");
  if (!list) return;
  let busy = false;
  const poll = async () => {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const args = JSON.parse(box.dataset.args ?? "{}");
      if (list.dataset.newest) args.after = Number(list.dataset.newest);
      const result = await call(box.dataset.tool ?? "", args);
      const view = viewOf(result);
      if (result.isError || !view) {
        box.checked = false;
        stopFollowing(textOf(result) || "Stopped following.");
        return;
      }
      if (view.rows) list.insertAdjacentHTML("beforeend", view.rows);
      if (view.newest !== undefined) list.dataset.newest = String(view.newest);
    } finally {
      busy = false;
    }
  };
  stopFollowing();
  say("Following new lines as they are logged.");
  following = setInterval(poll, FOLLOW_EVERY_MS);
  void poll();
}

function addCopyButton(el: HTMLElement): void {
  if (el.nextElementSibling?.classList.contains("copy-button")) return;
  const what = el.dataset.copyLabel ?? (el.tagName === "PRE" ? "this code" : "this");
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy copy-button";
  button.textContent = "Copy";
  button.setAttribute("aria-label", `Copy ${what}`);
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText((el.textContent ?? "").replace(/\n$/, ""));
      say(`Copied ${what} to the clipboard.`);
    } catch {
      say(`Select ${what} and copy it: this window may not use the clipboard.`);
    }
  });
  el.after(button);
}

// Links leave the view through the host (a view has no address of its own to navigate from).
document.addEventListener("click", (event) => {
  const link = (event.target as Element | null)?.closest?.("a[href]") as HTMLAnchorElement | null;
  if (!link || link.getAttribute("href")?.startsWith("#")) return;
  event.preventDefault();
  void app.openLink({ url: link.href }).catch(() => say(`Open ${link.href} in your browser.`));
});

app.ontoolresult = (result) => show(result as Result);
app.ontoolcancelled = () => {
  root.replaceChildren(Object.assign(document.createElement("p"), { className: "muted", textContent: "Cancelled." }));
};
void app.connect();
