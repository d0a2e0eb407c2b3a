import { formatBytes, ToolError } from "@hatch/contracts";
import { SERVER_LIMITS } from "../spec/server-code.ts";
import { type ServiceJson } from "../spec/service-json.ts";
import { compileError } from "../server-code/engine.ts";

// service.json `server`: the module must be a file of the folder, within the size limit, and compile as an ES
// module. Checked at publish, so a broken handler is refused with its line instead of failing for every visitor.

/** The named file is in the folder (checked as soon as service.json is read). */
export function checkServerFile(config: ServiceJson, entries: readonly { path: string; size: number }[]): void {
  if (!config.server) return;
  const entry = entries.find((e) => e.path === config.server);
  if (!entry) {
    throw new ToolError(
      "invalid_input",
      `service.json names "${config.server}" as its server code, but the folder has no such file. Bundle the server code into that one file (e.g. bun build api/index.ts --outfile dist/api/index.js --target=browser --format=esm) and publish again.`,
    );
  }
  if (entry.size > SERVER_LIMITS.maxModuleBytes) {
    throw new ToolError(
      "limit_exceeded",
      `The server code "${config.server}" is ${formatBytes(entry.size)}; it may be at most ${formatBytes(SERVER_LIMITS.maxModuleBytes)}. Bundle it minified, without what the server does not use.`,
    );
  }
}

/** The module compiles (it is not run): a syntax error is refused with its message and line. */
export async function checkServerModule(
  config: ServiceJson,
  entries: readonly { path: string; sha256: string }[],
  read: (sha256: string) => Promise<Uint8Array> | Uint8Array,
): Promise<void> {
  if (!config.server) return;
  const entry = entries.find((e) => e.path === config.server);
  if (!entry) return;
  let source: string;
  try {
    source = new TextDecoder("utf-8", { fatal: true }).decode(await read(entry.sha256));
  } catch {
    throw new ToolError(
      "invalid_input",
      `The server code "${entry.path}" is not UTF-8 text. Publish the bundled JavaScript file.`,
    );
  }
  const error = await compileError(source, entry.path);
  if (error)
    throw new ToolError(
      "invalid_input",
      `The server code "${entry.path}" does not compile: ${error}. Fix it and publish again; nothing was published.`,
    );
}
