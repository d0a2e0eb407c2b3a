import { DataError } from "./access.ts";
import type { DataRequest } from "../host/hatch-routes.ts";

// `/_hatch/db/<collection>[/<id>]`: the documents of an app's collections (see data-api in the developer reference).

export async function answerCollections(_: DataRequest): Promise<Response> {
  throw new DataError("not_found", "Collections are not available yet.");
}
