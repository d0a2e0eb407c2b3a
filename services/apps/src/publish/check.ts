import type { ServiceJson } from "../spec/service-json.ts";
import { checkFolder, checkNotFoundPage, parseServiceJson, SERVICE_JSON_PATH, type FolderEntry } from "./folder.ts";
import { checkServerFile, checkServerModule } from "./server-module.ts";

/** A content's bytes by sha256: from the request (inline, a tar) or the blob store (a manifest). */
export type ReadContent = (sha256: string) => Uint8Array | Promise<Uint8Array>;

/** service.json read and checked against the folder: valid, its notFound page and server module file present. */
export async function checkServiceJson(entries: readonly FolderEntry[], read: ReadContent): Promise<ServiceJson> {
  const configEntry = entries.find((e) => e.path === SERVICE_JSON_PATH);
  const config = parseServiceJson(configEntry ? await read(configEntry.sha256) : null);
  checkNotFoundPage(config, new Set(entries.map((e) => e.path)));
  checkServerFile(config, entries);
  return config;
}

/**
 * The one check of a folder whose bytes are all at hand, whichever way it came (inline files, a manifest, a tar):
 * the listing (paths, index.html, limits), service.json, and that the server module compiles. Returns the settings.
 */
export async function checkFolderContents(entries: readonly FolderEntry[], read: ReadContent): Promise<ServiceJson> {
  checkFolder(entries);
  const config = await checkServiceJson(entries, read);
  await checkServerModule(config, entries, read);
  return config;
}
