import type { Logger } from "@hatch/platform";
import type { AppsContext } from "../context.ts";
import type { DataCaller } from "../http/caller.ts";
import type { LiveChanges } from "./live.ts";

/** What the data routes need, and nothing else. */
export interface DataRouteDeps {
  ctx: Pick<AppsContext, "db" | "config" | "blobs" | "entitlements" | "logger">;
  log: Logger;
  /** Live changes: published after each committed change, streamed to open `_changes` requests. */
  live: LiveChanges;
  /**
   * The caller of an open stream again (the viewer, the app and its rules may have changed since it opened): the
   * app's current copy and the viewer checked anew; null when the app at this address is gone.
   */
  recheck(request: Request, caller: DataCaller): Promise<DataCaller | null>;
  /** Lifts the server's idle timeout for a request whose answer stays open (an event stream with pings). */
  keepOpen?(request: Request): void;
}

/** One data request. `rest` is the path after `/_hatch/db/` or `/_hatch/files/`. */
export interface DataRequest {
  request: Request;
  url: URL;
  rest: string;
  caller: DataCaller;
  deps: DataRouteDeps;
}
