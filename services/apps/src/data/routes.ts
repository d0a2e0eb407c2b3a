import type { DataCaller } from "../http/caller.ts";
import { answerBuckets } from "./buckets-http.ts";
import { answerCollections } from "./collections-http.ts";
import type { DataRouteDeps } from "./request.ts";

// The data route family: `/_hatch/db/…` (documents, live changes) and `/_hatch/files/…` (bucket files) of an app's
// origin, for a caller the router has already verified (http/caller.ts). Server code's env.db and env.files call the
// same routes in-process (server-code/env-host.ts).

export type DataKind = "db" | "files";

export interface DataRoutes {
  answer(kind: DataKind, request: Request, url: URL, rest: string, caller: DataCaller): Promise<Response>;
}

export function createDataRoutes(deps: DataRouteDeps): DataRoutes {
  return {
    answer: (kind, request, url, rest, caller) =>
      (kind === "db" ? answerCollections : answerBuckets)({ request, url, rest, caller, deps }),
  };
}
