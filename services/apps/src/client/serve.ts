import { DataError, dataErrorResponse } from "../data/access.ts";

// The browser library, served on every app origin: /_hatch/client.js, /_hatch/client.mjs, /_hatch/client.d.ts.

export function answerClientFile(_request: Request, _name: string): Response {
  return dataErrorResponse(new DataError("not_found", "The browser library is not available yet."));
}
