import { DataError } from "./access.ts";
import type { DataRequest } from "../host/hatch-routes.ts";

// `/_hatch/files/<bucket>[/<id>]`: the files of an app's buckets.

export async function answerBuckets(_: DataRequest): Promise<Response> {
  throw new DataError("not_found", "File buckets are not available yet.");
}
