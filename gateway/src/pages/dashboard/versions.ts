import { callRpc } from "@hatch/platform";
import { DashboardVersionSchema, rpcMethods, type DashboardVersion } from "@hatch/contracts";
import { Elysia } from "elysia";
import type { PublicUser } from "../../auth/index.ts";
import { dashboardContext } from "../dashboard-context.ts";
import { csrfField, html, type SafeHtml } from "../layout.ts";
import type { DashboardCallDeps } from "./calls.ts";
import { Refusal } from "./calls.ts";
import { appPath, clientWords, noticeOf, when, type Notice } from "./views.ts";

// /dashboard/apps/<address>/versions/<n>: one version of an app: who published it, from which client, its files (path,
// size, type), and Roll back when it is not the current one (the rollback form posts to the app page's route, which
// calls the rollback tool), and a Preview link to a non-current version on its own origin (served to the owner only).
// Read through apps' dashboard.version (the owner).

export const versionPath = (address: string, version: number) => `${appPath(address)}/versions/${version}`;

const size = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export function versionBody(csrf: string, v: DashboardVersion, notice: Notice): SafeHtml {
  const via = clientWords(v.publishedVia);
  const rows = v.files.map(
    (f) => html`<tr><td><code>${f.path}</code></td><td>${size(f.size)}</td><td>${f.contentType}</td></tr>`,
  );
  const more =
    v.fileCount > v.files.length
      ? html`<p class="muted">The first ${v.files.length} of ${v.fileCount} files, by path.</p>`
      : "";
  const rollback = v.current
    ? html`<p>This is the version visitors see now.</p>`
    : html`<form method="post" action="${appPath(v.address)}/rollback" class="actions">${csrfField(csrf)}<input type="hidden" name="version" value="${v.version}">${v.previewUrl ? html`<a class="button secondary" href="${v.previewUrl}" target="_blank" rel="noopener">Preview version ${v.version}</a>` : ""}<button type="submit" class="secondary">Roll back to version ${v.version}</button></form>`;
  return html`<p><a href="${appPath(v.address)}">← ${v.name}</a></p><h1>Version ${v.version} of ${v.name}</h1>${noticeOf(notice)}
<div class="card"><p>Published ${when(v.publishedAt)} by ${v.publishedBy}${via ? ` ${via}` : ""}${v.current ? " · current" : ""}</p>
<p class="muted">${v.fileCount} files · ${size(v.totalBytes)}</p>${rollback}</div>
<section aria-labelledby="files"><h2 id="files">Files</h2>${more}
<table><thead><tr><th>Path</th><th>Size</th><th>Type</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

interface VersionKit<S extends { user: PublicUser; csrfToken: string }> {
  guard: (handler: (state: S, notice: Notice) => Promise<Response>) => (request: Request) => Promise<Response>;
  page: (state: S, title: string, body: SafeHtml, status?: number) => Response;
}

export function versionPages<S extends { user: PublicUser; csrfToken: string }>(
  deps: DashboardCallDeps,
  kit: VersionKit<S>,
) {
  async function versionPage(state: S, address: string, raw: string, notice: Notice): Promise<Response> {
    const number = /^[1-9][0-9]{0,8}$/.test(raw) ? Number(raw) : null;
    if (number === null) throw new Refusal("not_found", `There is no version ${raw}.`);
    const { ctx, requestId } = await dashboardContext(deps, state.user, "read");
    const version = await callRpc(
      deps.bus,
      "apps",
      rpcMethods.apps.dashboardVersion,
      { address, version: number },
      DashboardVersionSchema,
      { ctx, requestId },
    );
    return kit.page(
      state,
      `Version ${version.version} of ${version.name}`,
      versionBody(state.csrfToken, version, notice),
    );
  }

  return new Elysia({ name: "hatch-dashboard-versions" }).get(
    "/dashboard/apps/:address/versions/:version",
    ({ request, params }) =>
      kit.guard((state, notice) => versionPage(state, params.address, params.version, notice))(request),
  );
}
