import {
  formatBytes,
  type DashboardDocument,
  type DashboardDocuments,
  type DashboardFileAnswer,
  type DashboardFiles,
  type DashboardLogs,
  type ToolDataOutput,
} from "@hatch/contracts";
import { csrfField, html, pageScript, type SafeHtml } from "../layout.ts";
import { appPath, noticeOf, when, type Notice } from "./views.ts";

// The HTML of an app's logs page and its data pages (no script but the logs page's live tail). Reads come from the
// apps service, which checks who may see them; the one action (delete a document) is a form with the CSRF field.

export interface LogFilter {
  level: "" | "debug" | "info" | "warn" | "error";
  search: string;
  uncaught: boolean;
}

const LEVEL_CHOICES: [LogFilter["level"], string][] = [
  ["", "Every level"],
  ["info", "Info and more severe"],
  ["warn", "Warnings and errors"],
  ["error", "Errors only"],
];

export const logsPath = (address: string) => `${appPath(address)}/logs`;
export const dataPath = (address: string) => `${appPath(address)}/data`;
export const collectionPath = (address: string, collection: string) =>
  `${dataPath(address)}/${encodeURIComponent(collection)}`;
export const documentPath = (address: string, collection: string, id: string) =>
  `${collectionPath(address, collection)}/documents/${encodeURIComponent(id)}`;

export const bucketPath = (address: string, bucket: string) =>
  `${appPath(address)}/files/${encodeURIComponent(bucket)}`;
export const filePath = (address: string, bucket: string, id: string) =>
  `${bucketPath(address, bucket)}/${encodeURIComponent(id)}`;

/** The filter as a query string (without the leading ?), the same on the page, its paging link and its stream. */
export function filterQuery(filter: LogFilter, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams();
  if (filter.level) query.set("level", filter.level);
  if (filter.search) query.set("q", filter.search);
  if (filter.uncaught) query.set("uncaught", "1");
  for (const [key, value] of Object.entries(extra)) query.set(key, value);
  return query.toString();
}

/** One log line: its time and level, its first line, and the rest (an uncaught error's stack) under "Stack". */
export function logLine(line: Omit<DashboardLogs["lines"][number], "id"> & { id?: number }): SafeHtml {
  const [first, ...rest] = line.message.split("\n");
  const stack = rest.length
    ? html`<details><summary>Stack</summary><pre><code>${rest.join("\n")}</code></pre></details>`
    : "";
  return html`<li class="log log-${line.level}"${line.id === undefined ? "" : html` data-id="${line.id}"`}><span class="muted">${when(line.time)}</span> <strong>${line.level}</strong> <span class="message">${first}</span>${stack}</li>`;
}

/**
 * The live tail: with "Follow new lines" checked, an EventSource on the page's stream adds each new line (built as
 * logLine builds it, text only) and says so in a status line; unchecked, it closes.
 */
export const LOG_TAIL_SCRIPT = pageScript(
  `(()=>{const list=document.getElementById("log-lines"),box=document.getElementById("follow"),status=document.getElementById("follow-status");if(!list||!box||!window.EventSource)return;box.closest("form.follow").hidden=false;let source=null;
const add=(line)=>{const item=document.createElement("li");item.className="log log-"+line.level;item.dataset.id=String(line.id);const time=document.createElement("span");time.className="muted";time.textContent=line.time.slice(0,16).replace("T"," ")+" UTC";const level=document.createElement("strong");level.textContent=line.level;const parts=line.message.split("\\n");const message=document.createElement("span");message.className="message";message.textContent=parts[0];item.append(time," ",level," ",message);
if(parts.length>1){const details=document.createElement("details"),summary=document.createElement("summary"),pre=document.createElement("pre"),code=document.createElement("code");summary.textContent="Stack";code.textContent=parts.slice(1).join("\\n");pre.append(code);details.append(summary,pre);item.append(details)}list.append(item);list.dataset.newest=String(line.id);const empty=document.getElementById("no-lines");if(empty)empty.remove()};
box.addEventListener("change",()=>{if(box.checked){source=new EventSource(box.dataset.stream+"&after="+(list.dataset.newest||"0"));source.addEventListener("line",(event)=>add(JSON.parse(event.data)));source.addEventListener("end",(event)=>{status.textContent=event.data;source.close();box.checked=false});status.textContent="Following new lines as they are logged."}else{if(source)source.close();source=null;status.textContent="Stopped following new lines."}})})();`,
  true,
);

export function logsBody(address: string, name: string, filter: LogFilter, logs: DashboardLogs): SafeHtml {
  const path = logsPath(address);
  const options = LEVEL_CHOICES.map(
    ([value, label]) =>
      html`<option value="${value}"${filter.level === value ? html` selected` : ""}>${label}</option>`,
  );
  const form = html`<form method="get" action="${path}" class="stack" role="search" aria-label="Filter the log">
<label>Level<select name="level">${options}</select></label>
<label>Search<input type="text" name="q" value="${filter.search}" maxlength="200" autocomplete="off"></label>
<label class="choice"><input type="checkbox" name="uncaught" value="1"${filter.uncaught ? html` checked` : ""}> Only uncaught errors</label>
<div class="actions"><button type="submit">Show</button><a href="${path}">Clear</a></div></form>`;
  const stream = `${path}/stream?${filterQuery(filter)}`;
  const follow = html`<form class="follow" hidden><label class="choice"><input type="checkbox" id="follow" data-stream="${stream}"> Follow new lines (live)</label></form><p id="follow-status" role="status" class="muted"></p>`;
  const filtered = filter.level || filter.search || filter.uncaught;
  const empty = html`<p class="muted" id="no-lines">${filtered ? "No lines match these filters." : "Nothing logged yet. Lines appear here when the app's server code writes to the console or a request fails."}</p>`;
  const first = logs.lines[0];
  const older =
    logs.more && first
      ? html`<p><a href="${path}?${filterQuery(filter, { before: String(first.id) })}">Older lines</a></p>`
      : "";
  return html`<p><a href="${appPath(address)}">← ${name}</a></p><h1>Logs of ${name}</h1>
<p class="muted">What the app's server code wrote to the console, and the requests that failed, with their stack. Only you, its owner, can see them.</p>
${form}${older}${follow}${logs.lines.length ? "" : empty}<ol id="log-lines" class="logs" data-newest="${logs.newest}" style="list-style:none;padding:0">${logs.lines.map(logLine)}</ol>`;
}

function ruleWords(rules: Record<string, unknown>): string {
  const who: Record<string, string> = {
    anyone: "anyone who can open the app",
    signed_in: "signed-in people",
    org: "the organization",
    owner: "only the owner",
    creator: "its creator",
  };
  return Object.entries(rules)
    .filter(([operation]) => operation !== "maxFileSize")
    .map(([operation, rule]) => `${operation}: ${who[String(rule)] ?? String(rule)}`)
    .join(" · ");
}

export function dataBody(name: string, data: ToolDataOutput, notice: Notice): SafeHtml {
  const collections = data.collections.length
    ? html`<table><thead><tr><th scope="col">Collection</th><th scope="col">Documents</th><th scope="col">Who may</th></tr></thead><tbody>${data.collections.map(
        (c) =>
          html`<tr data-collection="${c.name}"><td><a href="${collectionPath(data.address, c.name)}">${c.name}</a></td><td>${c.count}</td><td>${c.declared === false ? "Not declared by the current version: the app cannot reach it." : ruleWords(c.rules)}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="muted">No collections. An app stores documents once its settings declare a collection.</p>`;
  const buckets = data.buckets.length
    ? html`<table><thead><tr><th scope="col">Bucket</th><th scope="col">Files</th></tr></thead><tbody>${data.buckets.map(
        (b) =>
          html`<tr data-bucket="${b.name}"><td><a href="${bucketPath(data.address, b.name)}">${b.name}</a></td><td>${b.count}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="muted">No file buckets.</p>`;
  return html`<p><a href="${appPath(data.address)}">← ${name}</a></p><h1>Data of ${name}</h1>${noticeOf(notice)}
<p class="muted">What the app's users stored. Its owner sees all of it, whatever the app's rules say, and so do the managers of the organization it belongs to.</p>
<section aria-labelledby="collections"><h2 id="collections">Collections</h2>${collections}</section>
<section aria-labelledby="buckets"><h2 id="buckets">File buckets</h2>${buckets}</section>`;
}

/** A document's fields on one line, cut to `max` characters. */
function preview(data: Record<string, unknown>, max = 140): string {
  const text = JSON.stringify(data);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function collectionBody(name: string, page: DashboardDocuments, first: boolean, notice: Notice): SafeHtml {
  const { address, collection } = page;
  const base = collectionPath(address, collection);
  const rows = page.documents.map(
    (d) =>
      html`<tr data-document="${d.id}"><td><a href="${documentPath(address, collection, d.id)}">${d.id}</a></td><td>${when(d.createdAt)}</td><td>${d.createdBy ?? "not signed in"}</td><td><code>${preview(d.data)}</code></td></tr>`,
  );
  const table = page.documents.length
    ? html`<table><thead><tr><th scope="col">Document</th><th scope="col">Added</th><th scope="col">By</th><th scope="col">Fields</th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p class="muted">${first ? "No documents in this collection." : "No more documents."}</p>`;
  const paging = html`<nav class="actions" aria-label="Pages">${first ? "" : html`<a href="${base}">Newest</a>`}${page.next ? html`<a href="${base}?after=${encodeURIComponent(page.next)}" rel="next">Next page</a>` : ""}</nav>`;
  return html`<p><a href="${dataPath(address)}">← Data</a></p><h1>${collection}</h1>${noticeOf(notice)}
<p class="muted">Newest first.</p><div class="actions"><a class="button secondary" href="${base}/export" download>Export as JSON Lines</a></div>
${table}${paging}`;
}

export function documentBody(csrf: string, address: string, collection: string, doc: DashboardDocument): SafeHtml {
  const json = JSON.stringify(doc.data, null, 2);
  const path = documentPath(address, collection, doc.id);
  return html`<p><a href="${collectionPath(address, collection)}">← ${collection}</a></p><h1>Document ${doc.id}</h1>
<p class="muted">In ${collection} · added ${when(doc.createdAt)} by ${doc.createdBy ?? "someone not signed in"} · changed ${when(doc.updatedAt)}</p>
<pre><code>${json}</code></pre>
<section aria-labelledby="delete"><h2 id="delete">Delete</h2><p>Deleting removes this document for everyone using the app. It cannot be undone.</p>
<form method="post" action="${path}/delete">${csrfField(csrf)}<div class="actions"><button type="submit" class="danger">Delete document ${doc.id}</button></div></form></section>`;
}

export function bucketBody(page: DashboardFiles, first: boolean, notice: Notice): SafeHtml {
  const { address, bucket } = page;
  const base = bucketPath(address, bucket);
  const rows = page.files.map(
    (f) =>
      html`<tr data-file="${f.id}"><td><a href="${filePath(address, bucket, f.id)}">${f.name}</a></td><td>${f.contentType}</td><td>${formatBytes(f.size)}</td><td>${when(f.createdAt)}</td><td>${f.createdBy ?? "not signed in"}</td></tr>`,
  );
  const table = page.files.length
    ? html`<table><thead><tr><th scope="col">File</th><th scope="col">Type</th><th scope="col">Size</th><th scope="col">Added</th><th scope="col">By</th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p class="muted">${first ? "No files in this bucket." : "No more files."}</p>`;
  const paging = html`<nav class="actions" aria-label="Pages">${first ? "" : html`<a href="${base}">Newest</a>`}${page.next ? html`<a href="${base}?after=${encodeURIComponent(page.next)}" rel="next">Next page</a>` : ""}</nav>`;
  return html`<p><a href="${dataPath(address)}">← Data</a></p><h1>Files in ${bucket}</h1>${noticeOf(notice)}
<p class="muted">Newest first.</p>${table}${paging}`;
}

export function fileBody(csrf: string, answer: DashboardFileAnswer): SafeHtml {
  const { address, bucket, file, preview } = answer;
  const path = filePath(address, bucket, file.id);
  const shown =
    preview.kind === "image"
      ? html`<img src="${path}/preview" alt="Preview of ${file.name}" style="max-width:100%;height:auto;border:1px solid var(--border);border-radius:8px">`
      : preview.kind === "text"
        ? html`<pre><code>${preview.text}</code></pre>${preview.cut ? html`<p class="muted">The first part of the file only.</p>` : ""}`
        : html`<p class="muted">No preview for this kind of file.</p>`;
  return html`<p><a href="${bucketPath(address, bucket)}">← ${bucket}</a></p><h1>${file.name}</h1>
<p class="muted">In ${bucket} · ${file.contentType} · ${formatBytes(file.size)} · added ${when(file.createdAt)} by ${file.createdBy ?? "someone not signed in"}</p>
<section aria-labelledby="preview"><h2 id="preview">Preview</h2>${shown}</section>
<section aria-labelledby="delete"><h2 id="delete">Delete</h2><p>Deleting removes this file for everyone using the app. It cannot be undone.</p>
<form method="post" action="${path}/delete">${csrfField(csrf)}<div class="actions"><button type="submit" class="danger">Delete ${file.name}</button></div></form></section>`;
}
